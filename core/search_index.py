"""The full-text index of every turn's text, in the catalog's SQLite file (FTS5).

A file is indexed on the first search after it appeared or changed (its (size, mtime) checked
against the index's record of it), so a listing never pays for indexing. The texts come from the
file's source (`ListingSource.read_search_records`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .progress import Progress, ProgressSink, no_progress
from .rows import SessionRow
from .search_snippet import Excerpt
from .sources.base import ListingSource, SessionFile

HIT_START, HIT_END = "\x02", "\x03"
SNIPPET_CELLS = 120   # the width of `SearchHit.snippet` (what `--json` gives)
_BATCH_RECORDS = 20_000

TABLES = (
    """CREATE VIRTUAL TABLE search USING fts5(
        text, path UNINDEXED, workspace_key UNINDEXED, turn UNINDEXED, field UNINDEXED,
        tokenize = 'unicode61 remove_diacritics 2')""",
    """CREATE TABLE search_state (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                               first_rowid INTEGER NOT NULL, last_rowid INTEGER NOT NULL)""",
)
TABLE_NAMES = ("search", "search_state")


@dataclass(slots=True)
class SearchHit:
    """A turn whose text matched: the session's row, the turn number (from 1), which field, and the
    text around the matched words (`excerpt.around(width)` is a snippet for any width)."""

    row: SessionRow
    turn: int
    field: str
    excerpt: Excerpt

    @property
    def snippet(self) -> str:
        """`SNIPPET_CELLS` of the text around the matches, each between HIT_START and HIT_END."""
        return self.excerpt.around(SNIPPET_CELLS).marked(HIT_START, HIT_END)


def _utf8(text: str) -> str:
    """SQLite stores UTF-8: lone surrogates (valid in JSON strings) become U+FFFD."""
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text


class SearchIndex:
    """The index inside one catalog database; the catalog serializes the calls."""

    def __init__(self, connection: Callable[[], sqlite3.Connection],
                 transaction: Callable[[], contextlib.AbstractContextManager[sqlite3.Connection]]):
        self._connection = connection
        self._transaction = transaction

    def search(self, query: str, keys: list[str], rows: list[SessionRow], sources: Mapping[str, ListingSource], *,
               limit: int = 200, should_stop: Callable[[], bool] = lambda: False,
               progress: ProgressSink = no_progress) -> list[SearchHit]:
        """Turns of these rows whose text matches every word of the query, best first."""
        terms = query.split()
        if not terms:
            return []
        self._update(rows, sources, should_stop, progress)
        match = " ".join('"' + term.replace('"', '""') + '"' for term in terms)
        marks = ", ".join("?" * len(keys)) or "''"
        cursor = self._connection().execute(
            f"SELECT path, turn, field, text FROM search "
            f"WHERE search MATCH ? AND workspace_key IN ({marks}) ORDER BY rank LIMIT ?",
            [match, *keys, limit])
        by_path = {row.path: row for row in rows}
        hits = []
        for path, turn, field_name, text in cursor:
            row = by_path.get(path)
            if row is not None:
                hits.append(SearchHit(row, int(turn), field_name, Excerpt.of(text, query)))
        return hits

    def _update(self, rows: list[SessionRow], sources: Mapping[str, ListingSource],
                should_stop: Callable[[], bool], progress: ProgressSink) -> None:
        """Index the turns of new or changed files. Each file's records take a contiguous rowid
        range, so a re-index deletes by rowid instead of scanning the whole index."""
        db = self._connection()
        state = {path: (size, mtime, first, last)
                 for path, size, mtime, first, last in db.execute("SELECT * FROM search_state")}
        listed = {row.path for row in rows}
        stale = [row for row in rows if state.get(row.path, (None, None))[:2] != (row.size, row.mtime_ns)
                 and not row.problem_code]
        gone = [path for path in state if path not in listed and not os.path.exists(path)]
        next_rowid = (db.execute("SELECT max(rowid) FROM search").fetchone()[0] or 0) + 1
        batch: list[tuple[object, ...]] = []
        done: list[tuple[object, ...]] = []
        for index, row in enumerate(stale, 1):
            if should_stop():
                break
            progress(Progress("indexing", index - 1, len(stale)))
            records = sources[row.source].read_search_records(
                SessionFile(row.workspace_key, row.file_id, row.path, row.size, row.mtime_ns))
            if records is None:
                continue
            first = next_rowid
            batch.extend((next_rowid + i, _utf8(record.text), row.path, row.workspace_key, record.turn, record.field)
                         for i, record in enumerate(records))
            next_rowid += len(records)
            done.append((row.path, row.size, row.mtime_ns, first, next_rowid - 1))
            if len(batch) > _BATCH_RECORDS:
                self._write(done, batch, state)
                batch, done = [], []
        self._write(done, batch, state, gone)
        if stale:
            progress(Progress("indexing", len(stale), len(stale)))

    def _write(self, done: list[tuple[object, ...]], records: list[tuple[object, ...]],
               state: dict[str, tuple[int, int, int, int]], gone: Iterable[str] = ()) -> None:
        gone = list(gone)
        old_ranges = [state[path][2:] for path in [entry[0] for entry in done] + gone if path in state]
        with self._transaction() as db:
            db.executemany("DELETE FROM search WHERE rowid BETWEEN ? AND ?", old_ranges)
            db.executemany("DELETE FROM search_state WHERE path = ?", [(path,) for path in gone])
            db.executemany("INSERT INTO search (rowid, text, path, workspace_key, turn, field) "
                           "VALUES (?, ?, ?, ?, ?, ?)", records)
            db.executemany("INSERT OR REPLACE INTO search_state VALUES (?, ?, ?, ?, ?)", done)
