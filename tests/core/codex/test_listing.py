"""Codex's listing: date folders and archived_sessions as groups, rollouts named by their session id,
titles from session_index.jsonl, and a grown rollout read on from where the last read ended."""

from __future__ import annotations

import time
from pathlib import Path

from reprise.core.paths import OwnPaths, workspace_key
from reprise.core.problems import Problem
from reprise.core.sources.base import ListedFile, ListingFields, SessionFile
from reprise.core.sources.codex import listing as listing_module
from reprise.core.sources.codex.listing import CodexListing
from tests.core.codex.builder import START, CodexRollout, rename


def listing_of(root: Path, tmp_path: Path) -> CodexListing:
    return CodexListing([root], OwnPaths(tmp_path / "data", "codex"))


def read(listing: CodexListing, path: Path, session_id: str, carry: bytes | None = None) -> ListedFile:
    info = path.stat()
    return listing.read_listing(SessionFile(None, session_id, str(path), info.st_size, info.st_mtime_ns, carry,
                                            str(path.parent)), time.time_ns())


def _no_scandir(path):
    raise AssertionError(f"a scan with a stat of each file: {path}")


def fields(listed: ListedFile) -> ListingFields:
    assert isinstance(listed.fields, ListingFields), listed.fields
    return listed.fields


def test_groups_are_the_date_folders_and_archived_sessions_and_files_are_named_by_session_id(tmp_path):
    root = tmp_path / "codex"
    one = CodexRollout(seed=1)
    one.turn("one", "ok")
    one.write(root)
    old = CodexRollout(seed=2, start=START.replace(month=10))
    old.turn("archived one", "ok")
    old.write(root, archived=True)
    (root / "sessions" / "2026" / "11" / "20" / "notes.txt").write_text("not a rollout")
    (root / "sessions" / "2026" / "stray").mkdir()
    listing = listing_of(root, tmp_path)
    day = str(root / "sessions" / "2026" / "11" / "20")
    assert listing.groups() == [day, str(root / "archived_sessions")]
    scanned = listing.file_stats(day)
    stats, problem = scanned.stats, scanned.problem
    assert problem is None and list(stats) == [one.session_id]
    assert listing.file_path(day, one.session_id) == str(one.path_in(root))
    assert listing.locate(old.session_id) == old.path_in(root, archived=True)


def test_file_path_names_a_rollout_before_any_scan_and_one_that_appeared_after_the_last_scan(tmp_path, monkeypatch):
    # the catalog asks for the path of every cached row before it scans the groups (a warm listing):
    # the names alone answer it, with no scan that stats every rollout (the group's scan comes after)
    root = tmp_path / "codex"
    one = CodexRollout(seed=1)
    one.turn("one", "ok")
    one.write(root)
    day = str(root / "sessions" / "2026" / "11" / "20")
    listing = listing_of(root, tmp_path)
    with monkeypatch.context() as patched:
        patched.setattr(listing_module.os, "scandir", _no_scandir)
        assert listing.file_path(day, one.session_id) == str(one.path_in(root))
    later = CodexRollout(seed=3)
    later.turn("later", "ok")
    later.write(root)
    assert listing.file_path(day, later.session_id) == str(later.path_in(root))
    stats = listing.file_stats(day).stats
    assert sorted(stats) == sorted([one.session_id, later.session_id])
    assert listing.file_path(str(tmp_path / "no-such-folder"), one.session_id).endswith(one.session_id)


def test_a_row_has_its_folder_from_session_meta_and_an_archived_one_is_hidden_and_marked(tmp_path):
    root = tmp_path / "codex"
    rollout = CodexRollout(cwd=str(tmp_path / "proj"), source="cli")
    rollout.turn("hello", "hi")
    path = rollout.write(root, archived=True)
    listed = read(listing_of(root, tmp_path), path, rollout.session_id)
    found = fields(listed)
    assert listed.workspace_key == workspace_key(tmp_path / "proj")
    assert found.workspace_path == str(tmp_path / "proj")
    assert found.hidden_by_agent
    assert found.warning is not None and "archived by Codex" in found.warning


def test_the_title_is_the_newest_session_index_entry_for_the_id(tmp_path):
    root = tmp_path / "codex"
    rollout = CodexRollout(source="cli")
    rollout.turn("first prompt", "ok")
    path = rollout.write(root)
    listing = listing_of(root, tmp_path)
    assert fields(read(listing, path, rollout.session_id)).agent_title is None
    rename(root, rollout.session_id, "Parser work", "2026-11-21T10:00:00Z")
    rename(root, "019a0000-0000-7000-8000-000000000000", "Someone else")
    rename(root, rollout.session_id, "Parser rewrite", "2026-11-22T10:00:00Z")
    rename(root, rollout.session_id, "Older name", "2026-11-20T10:00:00Z")
    assert fields(read(listing, path, rollout.session_id)).agent_title == "Parser rewrite"


def test_a_grown_rollout_is_read_from_the_offset_and_a_truncated_line_waits_for_its_end(tmp_path):
    root = tmp_path / "codex"
    rollout = CodexRollout()
    rollout.turn("one", "ok", tokens=(10_000, 10))
    path = rollout.write(root)
    listing = listing_of(root, tmp_path)
    first = read(listing, path, rollout.session_id)
    whole = listing.bytes_read
    before = len(rollout.lines)
    rollout.turn("two", "ok", tokens=(13_000, 10))
    added = b"".join(rollout.lines[before:])
    with open(path, "ab") as file:
        file.write(added[:-20])   # the last line is still being written
    second = read(listing, path, rollout.session_id, first.carry)
    assert listing.bytes_read - whole == len(added) - 20   # only the new bytes
    # The cut line is the turn's task_complete: until it is whole the turn is unfinished.
    assert (fields(second).turns, fields(second).context_tokens, fields(second).last_status) == (
        2, 13_000, "interrupted")
    with open(path, "ab") as file:
        file.write(added[-20:])
    third = read(listing, path, rollout.session_id, second.carry)
    # the cut line was read again, nothing before it
    assert listing.bytes_read - whole == len(added) - 20 + len(rollout.lines[-1])
    assert fields(third).last_status == "succeeded"
    assert fields(third) == fields(read(listing_of(root, tmp_path), path, rollout.session_id))   # as a whole read


def test_a_rewritten_rollout_is_read_whole_again(tmp_path):
    root = tmp_path / "codex"
    rollout = CodexRollout()
    rollout.turn("one", "ok")
    path = rollout.write(root)
    listing = listing_of(root, tmp_path)
    first = read(listing, path, rollout.session_id)
    other = CodexRollout(rollout.session_id, seed=5)
    other.turn("replaced", "ok")
    other.turn("and more", "ok")
    path.write_bytes(other.data())
    again = read(listing, path, rollout.session_id, first.carry)
    assert fields(again).first_message == "replaced" and fields(again).turns == 2


def test_a_rollout_grown_twice_is_read_from_the_offset_each_time_and_a_rewrite_of_its_start_is_seen(tmp_path):
    # the carry of a read from the offset keeps the digest of the file's first bytes it checked
    root = tmp_path / "codex"
    rollout = CodexRollout()
    rollout.turn("one", "ok")
    rollout.command("cat big.txt", "x" * 10_000)   # past the 4 KB the head digest covers
    path = rollout.write(root)
    listing = listing_of(root, tmp_path)
    carry = read(listing, path, rollout.session_id).carry
    for prompt in ("two", "three"):
        before, read_before = len(rollout.lines), listing.bytes_read
        rollout.turn(prompt, "ok")
        added = b"".join(rollout.lines[before:])
        with open(path, "ab") as file:
            file.write(added)
        grown = read(listing, path, rollout.session_id, carry)
        carry = grown.carry
        assert listing.bytes_read - read_before == len(added)   # only the new bytes, the second time too
    assert fields(grown).turns == 3
    data = path.read_bytes()
    assert data.index(b'"/work/proj"') < 4096
    with open(path, "r+b") as file:   # the same size, the same inode: only the head's digest tells
        file.write(data.replace(b'"/work/proj"', b'"/work/prok"', 1))
    again = read(listing, path, rollout.session_id, carry)
    assert fields(again).workspace_path == "/work/prok" and fields(again).turns == 3


def test_bad_lines_are_skipped_with_a_warning_naming_the_line(tmp_path):
    root = tmp_path / "codex"
    rollout = CodexRollout()
    rollout.turn("one", "ok")
    rollout.raw(b"{oops\n")
    rollout.turn("two", "ok")
    path = rollout.write(root)
    listed = read(listing_of(root, tmp_path), path, rollout.session_id)
    assert fields(listed).turns == 2
    bad = len(rollout.lines) - len(rollout.lines[rollout.lines.index(b"{oops\n"):]) + 1
    assert fields(listed).warning is not None and fields(listed).warning.startswith(f"line {bad}: not JSON")
    assert listed.path == str(path)


def test_an_empty_rollout_is_a_problem_row(tmp_path):
    root = tmp_path / "codex"
    path = CodexRollout().path_in(root)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    listed = read(listing_of(root, tmp_path), path, path.stem[-36:])
    assert isinstance(listed.fields, Problem) and listed.fields.code == "no_session_meta"


def test_search_records_come_per_turn(tmp_path):
    root = tmp_path / "codex"
    rollout = CodexRollout()
    rollout.turn("find the needle", "found it", reasoning="**Looking for the needle**")
    rollout.task_started()
    rollout.prompt("run it")
    rollout.shell(["pytest", "-q"], "3 passed")
    rollout.error("quota exceeded")
    rollout.task_complete()
    path = rollout.write(root)
    info = path.stat()
    records = listing_of(root, tmp_path).read_search_records(
        SessionFile(None, rollout.session_id, str(path), info.st_size, info.st_mtime_ns, None, str(path.parent)))
    assert records is not None
    assert [(record.turn, record.field) for record in records] == [
        (1, "user"), (1, "response"), (1, "thinking"), (2, "user"), (2, "tool"), (2, "error")]
    assert "3 passed" in records[4].text and "pytest" in records[4].text
