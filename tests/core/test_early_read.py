"""A large cold read heard by a screen reads the newest files in scope in this process first, before
the heads of the other files are looked at and before the pool of workers is asked for the rest, and
its rows, in the catalog's order, are the ones a serial read gives."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from reprise.core import catalog as catalog_module
from reprise.core.catalog import Catalog
from reprise.core.paths import OwnPaths, workspace_key
from reprise.core.rows import SessionRow
from reprise.core.sources.claude.layout import slug
from reprise.core.sources.claude.listing import ClaudeListing
from tests.core.test_one_folder import A, B, CountingClaude, claude_session

FILES = 24     # in each of two project folders
EARLY = 4
NOW = 1_700_000_000


def write_store(root: Path) -> list[str]:
    """FILES sessions of alpha and FILES of beta, their times interleaved (the newest is beta's); the
    file names of alpha's, newest first."""
    alpha = []
    for number in range(2 * FILES):
        folder = A if number % 2 else B
        session = claude_session(number, folder)
        path = session.write(root / "projects" / slug(folder) / f"{session.session_id}.jsonl")
        os.utime(path, (NOW + number * 60, NOW + number * 60))
        if folder == A:
            alpha.append(path.name)
    return alpha[::-1]


class Pool:
    """Stands for the pool of workers: it records what was heard before it was asked, and what it was
    given, then works the batches here."""

    def __init__(self, heard: list[list[SessionRow]]):
        self.heard = heard
        self.heard_before: list[list[str]] | None = None
        self.given: list[str] = []

    def __call__(self, work: Callable[[Sequence[object]], list[object]], items: Sequence[object]
                 ) -> Iterator[list[object]]:
        self.heard_before = [[Path(row.path).name for row in rows] for rows in self.heard]
        self.given = [Path(file.path).name for _, file in items]   # type: ignore[attr-defined]
        for start in range(0, len(items), 5):
            yield work(items[start:start + 5])


def listed(catalog: Catalog, keys: list[str] | None, heard: list[list[SessionRow]] | None = None
           ) -> list[tuple[object, ...]]:
    rows = catalog.refresh(keys, rows_read=heard.append if heard is not None else None)
    catalog.load_details(rows)
    return [(row.source, row.workspace_key, row.file_id, row.size, row.mtime_ns, row.activity_ts, row.turns,
             row.fields) for row in rows]


@pytest.fixture
def early_read(monkeypatch):
    monkeypatch.setattr(catalog_module, "PARALLEL_MIN", 10)
    monkeypatch.setattr(catalog_module, "EARLY_FILES", EARLY)
    monkeypatch.setattr(catalog_module, "EARLY_HEADS", 4 * EARLY)


@pytest.mark.parametrize("scope", ["one folder", "all folders"])
def test_the_newest_files_in_scope_are_heard_before_the_pool_is_asked(early_read, monkeypatch, tmp_path, scope):
    root = tmp_path / "claude"
    alpha_newest = write_store(root)
    keys = [workspace_key(A)] if scope == "one folder" else None
    heard: list[list[SessionRow]] = []
    pool = Pool(heard)
    monkeypatch.setattr(catalog_module, "iter_in_processes", pool)
    listing = CountingClaude(root, tmp_path / "data")
    rows = listed(Catalog([listing], tmp_path / "cache", parallel=True), keys, heard)
    every = sorted(path.name for path in root.glob("projects/*/*.jsonl"))
    newest = sorted(every, key=lambda name: -os.stat(next(root.glob(f"projects/*/{name}"))).st_mtime_ns)
    wanted = alpha_newest if keys else newest
    # one batch of the newest files in scope, heard before the pool was asked; the pool reads the others
    assert pool.heard_before == [wanted[:EARLY]]
    assert sorted(pool.given) == sorted(wanted[EARLY:])
    assert sorted(listing.read) == sorted(wanted)   # the stand-in pool reads here: beta's files are not read
    if keys:   # the heads of the newest first (alpha's are every other file), then of every other file
        assert listing.heads[:2 * EARLY] == newest[:2 * EARLY] and sorted(listing.heads) == every
    # the same rows in the same order as a serial read, and what the catalog stored is the same too
    serial = ClaudeListing([root], OwnPaths(tmp_path / "data2", "claude"))
    assert rows == listed(Catalog([serial], tmp_path / "cache2"), keys)

    def warm(data: str, cache: str) -> list[tuple[object, ...]]:
        return listed(Catalog([ClaudeListing([root], OwnPaths(tmp_path / data, "claude"))], tmp_path / cache), keys)

    assert warm("data", "cache") == warm("data2", "cache2")


def test_no_early_read_without_a_listener_or_below_the_pool(early_read, monkeypatch, tmp_path):
    root = tmp_path / "claude"
    write_store(root)
    pool = Pool([])
    monkeypatch.setattr(catalog_module, "iter_in_processes", pool)
    listing = CountingClaude(root, tmp_path / "data")
    listed(Catalog([listing], tmp_path / "cache", parallel=True), [workspace_key(A)])   # `reprise list`: no listener
    assert len(pool.given) == FILES   # none read before the pool
    monkeypatch.setattr(catalog_module, "PARALLEL_MIN", 1000)   # a small read: all of it serial, as before
    heard: list[list[SessionRow]] = []
    small = CountingClaude(root, tmp_path / "data3")
    listed(Catalog([small], tmp_path / "cache3", parallel=True), [workspace_key(A)], heard)
    assert len(small.read) == FILES and [len(rows) for rows in heard] == [16, FILES - 16]
