"""The warm listing's snapshot of the catalog's rows (core/row_snapshot.py): always the table's rows,
whoever changed the table, and never trusted when it is stale or damaged."""

from __future__ import annotations

import dataclasses
import marshal
import zlib

import pytest

from reprise.core import row_snapshot
from reprise.core.catalog import Catalog
from reprise.core.paths import workspace_key
from reprise.core.sources.fractal.listing import FractalListing
from reprise.core.sources.fractal.store import Store

from .test_catalog import age, put

KEY_A = workspace_key("/home/dev/a")
KEY_B = workspace_key("/home/dev/b")
KEYS = [KEY_A, KEY_B]


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "state")


def catalog_of(store: Store, tmp_path) -> Catalog:
    return Catalog([FractalListing(store)], tmp_path / "cache")


def fill(store: Store) -> list:
    refs = [put(store, key, f"{n:032x}", n % 4 + 1) for key in KEYS for n in range(1, 6)]
    for ref in refs:
        age(store.paths.session_file(ref))
    return refs


def seen(rows) -> list[tuple]:
    """Every field of the rows but their details (a cold listing lists in the order it read the files)."""
    return sorted(tuple((f.name, getattr(row, f.name)) for f in dataclasses.fields(row) if f.name != "details")
                  for row in rows)


def snapshot_state(catalog: Catalog) -> tuple[int | None, int | None]:
    """(the source's generation, the generation its snapshot was made at)."""
    found = catalog.db.execute("SELECT g.gen, s.gen FROM generations g LEFT JOIN snapshots s USING (source)").fetchone()
    return (None, None) if found is None else found


def snapshot_folders(catalog: Catalog) -> dict[str, row_snapshot.Folder] | None:
    return row_snapshot._decoded(*catalog.db.execute("SELECT crc, data FROM snapshots").fetchone())


def test_a_warm_listing_from_the_snapshot_is_the_tables_row_for_row(store, tmp_path, monkeypatch):
    fill(store)
    cold = catalog_of(store, tmp_path).refresh()
    generation, made_at = snapshot_state(catalog_of(store, tmp_path))
    assert generation is not None and made_at == generation   # the cold listing stored one
    decoded = []
    original = row_snapshot._decoded
    monkeypatch.setattr(row_snapshot, "_decoded", lambda *args: decoded.append(1) or original(*args))
    warm = catalog_of(store, tmp_path).refresh()
    assert decoded == [1]
    assert seen(warm) == seen(cold)


def test_another_writer_makes_the_snapshot_stale_and_its_change_is_listed(store, tmp_path):
    fill(store)
    first = catalog_of(store, tmp_path)
    rows = first.refresh()
    other = catalog_of(store, tmp_path)   # another process: its own connection
    row = rows[0]
    row.resume_cost, row.resume_cost_key = 12345, "key"
    other.set_resume_costs([row])
    generation, made_at = snapshot_state(first)
    assert made_at is not None and generation > made_at
    again = catalog_of(store, tmp_path).refresh()
    assert [r.resume_cost for r in again if (r.group, r.file_id) == (row.group, row.file_id)] == [12345]
    generation, made_at = snapshot_state(first)
    assert made_at == generation   # the listing that read the table stored a current snapshot


def test_a_changed_file_a_new_one_and_a_deleted_folder_are_listed_through_the_snapshot(store, tmp_path):
    refs = fill(store)
    catalog_of(store, tmp_path).refresh()
    changed = put(store, KEY_A, refs[0].session_id, 9)
    age(store.paths.session_file(changed), 60)
    added = put(store, KEY_A, "f" * 32, 2)
    age(store.paths.session_file(added), 60)
    for ref in refs:
        if ref.workspace_key == KEY_B:
            store.paths.session_file(ref).unlink()
    rows = catalog_of(store, tmp_path).refresh()
    assert {row.workspace_key for row in rows} == {KEY_A}
    assert {row.file_id: row.turns for row in rows}[refs[0].session_id] == 9
    assert "f" * 32 in {row.file_id for row in rows}
    # And the snapshot stored after those changes lists the same again, from a fresh catalog.
    assert seen(catalog_of(store, tmp_path).refresh()) == seen(rows)
    generation, made_at = snapshot_state(catalog_of(store, tmp_path))
    assert made_at == generation


@pytest.mark.parametrize("damage", ["crc", "data", "shape", "format"])
def test_a_damaged_snapshot_is_not_used_and_the_table_lists(store, tmp_path, damage):
    fill(store)
    cold = catalog_of(store, tmp_path).refresh()
    db = catalog_of(store, tmp_path).db
    if damage == "crc":
        db.execute("UPDATE snapshots SET crc = crc + 1")
    elif damage == "data":   # cut short, and its CRC made to match: marshal cannot decode it
        data = db.execute("SELECT substr(data, 1, 100) FROM snapshots").fetchone()[0]
        db.execute("UPDATE snapshots SET data = ?, crc = ?", (data, zlib.crc32(data)))
    elif damage == "shape":   # a folder of three parts, not four, under the right format and CRC
        data = marshal.dumps((row_snapshot.FORMAT, {"a-folder": ({}, [], False)}))
        db.execute("UPDATE snapshots SET data = ?, crc = ?", (data, zlib.crc32(data)))
    else:
        data = marshal.dumps((row_snapshot.FORMAT + 1, {}))
        db.execute("UPDATE snapshots SET data = ?, crc = ?", (data, zlib.crc32(data)))
    # Written behind the catalog's back (no trigger fires on `snapshots`): the generation still matches.
    generation, made_at = snapshot_state(catalog_of(store, tmp_path))
    assert made_at == generation
    assert seen(catalog_of(store, tmp_path).refresh()) == seen(cold)


def test_a_scoped_listing_reads_the_table_and_leaves_the_snapshot_alone(store, tmp_path):
    fill(store)
    catalog_of(store, tmp_path).refresh()
    before = snapshot_state(catalog_of(store, tmp_path))
    rows = catalog_of(store, tmp_path).refresh([KEY_B])
    assert {row.workspace_key for row in rows} == {KEY_B} and len(rows) == 5
    assert snapshot_state(catalog_of(store, tmp_path)) == before


def test_a_racy_row_in_the_snapshot_is_read_again(store, tmp_path, monkeypatch):
    refs = fill(store)
    fresh = put(store, KEY_A, refs[1].session_id, 3)   # just written: its stat cannot be trusted yet
    catalog = catalog_of(store, tmp_path)
    catalog.refresh()
    folders = snapshot_folders(catalog)
    assert folders is not None and folders[KEY_A].racy
    [racy] = [columns for columns in folders[KEY_A].columns if columns[row_snapshot.RACY]]
    assert racy[row_snapshot.FILE_ID] == fresh.session_id
    read = []
    source = catalog.sources[0]
    original = type(source).read_listing

    def counted(self, file, now_ns):
        read.append(file.file_id)
        return original(self, file, now_ns)

    monkeypatch.setattr(type(source), "read_listing", counted)
    catalog_of(store, tmp_path).refresh()
    assert fresh.session_id in read
