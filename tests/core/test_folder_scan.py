"""The stat of a folder's session files (core/folder_scan.py): the names an earlier scan read stand in
for reading the folder only while its stamp holds, and a stamp too recent to trust is never kept."""

from __future__ import annotations

import os
import time

import pytest

from reprise.core import folder_scan
from reprise.core.catalog import Catalog
from reprise.core.folder_scan import FolderNames, scan_folder, with_suffix
from reprise.core.sources.fractal.listing import FractalListing
from reprise.core.sources.fractal.store import Store

from .test_catalog import age, put
from .test_row_snapshot import KEY_A, KEYS, snapshot_folders

SESSION = with_suffix(".json")
TICK = 0.05   # longer than a tick of the file system's clock, which stamps a folder's change


def _no_scandir(*args, **kwargs):
    raise AssertionError("the folder was read")


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "sessions"
    path.mkdir()
    for name in ("a.json", "b.json", "notes.txt", ".a.json.tmp-1"):
        (path / name).write_text(name)
    return path


@pytest.fixture
def trusted(monkeypatch):
    """Every stamp kept at once (a test cannot wait out the few seconds), a tick waited after each change."""
    monkeypatch.setattr(folder_scan, "_RACY_NS", 0)


def test_a_scan_stats_the_session_files_and_keeps_no_stamp_of_a_folder_changed_just_now(folder):
    scanned = scan_folder(str(folder), "sessions folder", SESSION)
    assert scanned.problem is None
    assert scanned.stats == {"a": (6, os.stat(folder / "a.json").st_mtime_ns),
                             "b": (6, os.stat(folder / "b.json").st_mtime_ns)}
    assert scanned.names is not None and scanned.names.names == {"a": "a.json", "b": "b.json"}
    assert scanned.names.stamp is None   # the folder changed within the last seconds
    again = scan_folder(str(folder), "sessions folder", SESSION, scanned.names)
    assert again.stats == scanned.stats


def test_while_the_stamp_holds_the_next_scan_stats_the_names_without_reading_the_folder(folder, trusted,
                                                                                         monkeypatch):
    first = scan_folder(str(folder), "sessions folder", SESSION)
    assert first.names is not None and first.names.stamp is not None
    with (folder / "a.json").open("a") as grown:   # a file that grows in place leaves the folder as it was
        grown.write("more")
    with monkeypatch.context() as patched:
        patched.setattr(folder_scan.os, "scandir", _no_scandir)
        second = scan_folder(str(folder), "sessions folder", SESSION, first.names)
    assert second.stats["a"] == (10, os.stat(folder / "a.json").st_mtime_ns)
    assert second.names is first.names


@pytest.mark.parametrize("change", ["add", "remove", "rename"])
def test_a_file_added_removed_or_renamed_changes_the_stamp_and_the_folder_is_read_again(folder, trusted, change):
    first = scan_folder(str(folder), "sessions folder", SESSION)
    time.sleep(TICK)
    if change == "add":
        (folder / "c.json").write_text("c")
    elif change == "remove":
        (folder / "b.json").unlink()
    else:
        os.replace(folder / "b.json", folder / "d.json")
    second = scan_folder(str(folder), "sessions folder", SESSION, first.names)
    expected = {"add": {"a", "b", "c"}, "remove": {"a"}, "rename": {"a", "d"}}[change]
    assert set(second.stats) == expected
    assert second.names is not None and set(second.names.names) == expected
    assert second.names.stamp != first.names.stamp


def test_a_known_name_that_is_gone_or_is_not_a_plain_name_has_the_folder_read_again(folder, trusted):
    stamp = scan_folder(str(folder), "sessions folder", SESSION).names.stamp
    for names in ({"a": "a.json", "gone": "gone.json"}, {"a": "a.json", "x": "../sessions/b.json"}):
        scanned = scan_folder(str(folder), "sessions folder", SESSION, FolderNames(stamp, names))
        assert set(scanned.stats) == {"a", "b"}


def test_a_missing_folder_has_no_files_and_one_that_is_not_a_folder_neither(tmp_path):
    assert scan_folder(str(tmp_path / "none"), "sessions folder", SESSION).stats == {}
    (tmp_path / "file").write_text("x")
    scanned = scan_folder(str(tmp_path / "file"), "sessions folder", SESSION)
    assert scanned.stats == {} and scanned.problem is None and scanned.names is None


def test_with_suffix_names_only_the_wanted_ids():
    assert SESSION("abc.json") == "abc" and SESSION("abc.jsonl") is None
    wanted = with_suffix(".jsonl", lambda stem: stem.isdigit())
    assert wanted("12.jsonl") == "12" and wanted("ab.jsonl") is None


def test_a_warm_listing_stats_the_snapshots_names_and_still_lists_a_new_and_a_grown_file(tmp_path, trusted,
                                                                                          monkeypatch):
    store = Store(tmp_path / "state")
    refs = [put(store, key, f"{n:032x}", n % 4 + 1) for key in KEYS for n in range(1, 4)]
    for ref in refs:
        age(store.paths.session_file(ref))
    catalog = Catalog([FractalListing(store)], tmp_path / "cache")
    first = catalog.refresh()
    folders = snapshot_folders(catalog)
    assert folders is not None and all(f.names is not None and f.names.stamp for f in folders.values())
    scandir = os.scandir

    def no_sessions_folder(path):   # a scan reads the folder it opened: the workspaces' folder is read by path
        return _no_scandir() if isinstance(path, int) else scandir(path)

    with monkeypatch.context() as patched:   # no folder of sessions is read: their names are the snapshot's
        patched.setattr(folder_scan.os, "scandir", no_sessions_folder)
        warm = Catalog([FractalListing(store)], tmp_path / "cache").refresh()
    assert sorted(row.file_id for row in warm) == sorted(row.file_id for row in first)
    grown = refs[0]
    put(store, grown.workspace_key, grown.session_id, 6)   # rewritten in place: the folder is as it was
    with monkeypatch.context() as patched:
        patched.setattr(folder_scan.os, "scandir", no_sessions_folder)
        rows = listed(store, tmp_path)
    assert rows[(grown.workspace_key, grown.session_id)].turns == 6
    time.sleep(TICK)
    added = put(store, KEY_A, f"{99:032x}", 2)
    assert (KEY_A, added.session_id) in listed(store, tmp_path)


def listed(store: Store, tmp_path) -> dict:
    return {(row.workspace_key, row.file_id): row
            for row in Catalog([FractalListing(store)], tmp_path / "cache").refresh()}


def test_a_folder_dated_after_the_clock_keeps_no_stamp(folder, monkeypatch):
    # a file system whose clock is an hour ahead of ours (a network share): its change just now is
    # dated an hour from now, and a change in the same tick could still leave the stamp as it is
    behind = time.time_ns() - 3600 * 10**9
    monkeypatch.setattr(folder_scan.time, "time_ns", lambda: behind)
    assert scan_folder(str(folder), "sessions folder", SESSION).names.stamp is None


@pytest.mark.parametrize("name", ["..", ".", "", "a\0.json", 7])
def test_a_damaged_cache_name_has_the_folder_read_again(folder, trusted, name):
    stamp = scan_folder(str(folder), "sessions folder", SESSION).names.stamp
    scanned = scan_folder(str(folder), "sessions folder", SESSION, FolderNames(stamp, {"a": "a.json", "x": name}))
    assert set(scanned.stats) == {"a", "b"}
