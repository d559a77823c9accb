"""The search index as a store of its own: the index of an earlier Reprise dropped once (the listing
cache kept, the file compacted, a notice said), the `[search]` settings (off: nothing written and
every search scans; `max_mb`: the index stops at its cap and the rest is scanned), `doctor`'s size,
and bad files (each named, the rest searched)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from reprise.core.search_engine import SearchUpdate
from reprise.core.service import Service
from reprise.core.sources.base import ListingSource, SessionFile
from reprise.tui import cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPLY = "REPLYbeta"   # a reply in the Claude Code fixture store


@pytest.fixture
def claude_store() -> Path:
    root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    shutil.copytree(FIXTURES / "claude-store", root)
    return root


def _service() -> Service:
    return Service.from_environment()


def _bytes(path: Path) -> int:
    """The database's file and its write-ahead log."""
    wal = Path(f"{path}-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_an_index_from_before_is_dropped_once_and_the_listing_cache_kept(claude_store: Path) -> None:
    service = _service()
    rows = service.catalog.refresh(None)
    path = service.catalog.db_path
    service.catalog.close()
    db = sqlite3.connect(path, isolation_level=None)   # the index as Reprise made it before: every text, with content
    with db:
        db.execute("DROP TABLE search_text")
        db.execute("DROP TABLE search_files")
        db.execute("CREATE VIRTUAL TABLE search USING fts5(text, path UNINDEXED, workspace_key UNINDEXED, "
                   "turn UNINDEXED, field UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')")
        db.execute("CREATE TABLE search_state (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER "
                   "NOT NULL, first_rowid INTEGER NOT NULL, last_rowid INTEGER NOT NULL)")
        db.executemany("INSERT INTO search (text, path, workspace_key, turn, field) VALUES (?, 'p', 'k', 1, 'user')",
                       [(f"old text {n} " * 400,) for n in range(400)])
    db.close()
    before = _bytes(path)
    service = _service()
    assert [hit.field for hit in service.search(REPLY, all_workspaces=True)] == ["response"]
    notices = service.take_notices()
    assert len(notices) == 1 and "dropped" in notices[0] and "compacted" in notices[0]
    tables = _tables(path)
    assert {"search_text", "search_files", "files"} <= tables and not {"search", "search_state"} & tables
    assert _bytes(path) < before / 2
    with sqlite3.connect(path) as db:   # the listing cache was not rebuilt
        assert db.execute("SELECT count(*) FROM files").fetchone()[0] == len(rows)
    service.search(REPLY, all_workspaces=True)
    assert service.take_notices() == []   # once


def test_with_indexing_off_search_scans_and_writes_nothing(claude_store: Path, tmp_path: Path) -> None:
    Path(os.environ["REPRISE_CONFIG"]).write_text("[search]\nindex = false\n")
    service = _service()
    assert [hit.field for hit in service.search(REPLY, all_workspaces=True)] == ["response"]
    assert service.build_index(all_workspaces=True).added == 0
    assert service.catalog.index_files() == 0
    state = service.index_state()
    assert not state.enabled and state.size == 0


def test_the_cap_stops_the_index_and_the_rest_is_scanned(claude_store: Path) -> None:
    service = _service()
    every = service.search("the", all_workspaces=True, limit=10_000, index=False)
    service.catalog.index_cap = 1   # as `[search] max_mb` would, smaller than any file's texts
    built = service.build_index(all_workspaces=True)
    assert built.capped and built.added == 0 and service.catalog.index_files() == 0
    service.catalog.index_cap = None
    service.build_index(all_workspaces=True)
    held = service.catalog.index_files()
    service.catalog.index_cap = service.catalog.index_bytes() // 2
    assert service.catalog.index_files() == held
    assert [(h.row.path, h.turn, h.field) for h in service.search("the", all_workspaces=True, limit=10_000)] == \
        [(h.row.path, h.turn, h.field) for h in every]


def test_max_mb_is_read_from_the_config_and_doctor_shows_the_size(claude_store: Path, capsys) -> None:
    Path(os.environ["REPRISE_CONFIG"]).write_text("[search]\nmax_mb = 40\n")
    assert cli.main(["search", REPLY, "--all"]) == 0
    capsys.readouterr()
    assert cli.main(["--json", "doctor"]) in (0, 1)
    index = json.loads(capsys.readouterr().out)["search_index"]
    assert index["enabled"] and index["cap_bytes"] == 40 << 20
    assert index["bytes"] > 0 and index["sessions"] == len(list((claude_store / "projects").glob("*/*.jsonl")))
    cli.main(["doctor"])
    out = capsys.readouterr().out
    assert "search index" in out and "cap 40.0 MB" in out


def test_a_file_that_cannot_be_searched_is_named_and_the_rest_is_searched(claude_store: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    slug_dir = next((claude_store / "projects").iterdir())
    broken = slug_dir / "abababab-abab-4bab-8bab-abababababab.jsonl"
    os.mkfifo(slug_dir / "cdcdcdcd-cdcd-4dcd-8dcd-cdcdcdcdcdcd.jsonl")
    broken.write_text('{"type":"user","message":{"role":"user","content":"REPLYbeta hostile"}}\n')
    service = _service()
    kind = type(service.sources["claude"].listing)
    reader = kind.read_search_records

    def failing(source: ListingSource, file: SessionFile):   # a reader's bug on one hostile file
        if file.path == str(broken):
            raise RecursionError("maximum recursion depth exceeded")
        return reader(source, file)

    monkeypatch.setattr(kind, "read_search_records", failing)
    for index in (False, True):
        heard: list[SearchUpdate] = []
        hits = service.search(REPLY, all_workspaces=True, index=index, on_update=heard.append)
        assert [hit.field for hit in hits] == ["response"]
        problems = {Path(problem.path).name: problem for problem in heard[-1].problems}
        assert "cdcdcdcd-cdcd-4dcd-8dcd-cdcdcdcdcdcd.jsonl" in problems
        assert problems[broken.name].code == "unsearchable" and "RecursionError" in problems[broken.name].message
    built = service.build_index(all_workspaces=True)
    assert [Path(problem.path).name for problem in built.problems] == [broken.name]


def test_a_files_texts_are_kept_in_blocks_and_read_back_by_place() -> None:
    """A file's texts are compressed in blocks: the records at some places come back from their blocks
    alone, every record from all of them, and a blob kept before the blocks is still read."""
    import marshal
    import zlib

    from reprise.core import search_index

    records = [(turn, "user" if turn % 2 else "assistant", f"text {turn} " + "x" * (turn * 997 % 20_000))
               for turn in range(1, 80)]
    records.append((80, "tool", "y" * (3 * search_index.BLOCK_BYTES)))   # longer than a block: alone
    blob = search_index.blob_of(records)
    _, blocks = marshal.loads(blob[len(search_index._BLOCKS):])
    assert len(blocks) > 10
    assert search_index.records_of(blob) == records
    places = [0, 5, 6, 41, 79, 78, 2, 80, 10_000]
    assert search_index.records_at(blob, places) == [records[place] for place in places if place < len(records)]
    assert search_index.records_at(blob, []) == []
    opened = []
    real = zlib.decompress
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search_index.zlib, "decompress", lambda data: opened.append(data) or real(data))
        assert search_index.records_at(blob, [41]) == [records[41]]
    assert len(opened) == 1   # the one block that holds it
    assert search_index.records_of(search_index.blob_of([])) == []
    before = zlib.compress(marshal.dumps(records))   # a blob kept before the blocks
    assert search_index.records_of(before) == records
    assert search_index.records_at(before, [3, 200]) == [records[3]]
