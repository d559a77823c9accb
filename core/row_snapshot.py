"""A warm listing's shortcut: the catalog's rows of one source, folder by folder, as one blob.

A warm listing stats every file and compares each stat with the row the catalog holds. Reading
those rows back out of SQLite took a third of a warm listing of 14,000 sessions: a Python object
for every column of every row. A snapshot holds the same columns, grouped by the folder (group) of
the files, with each folder's stats as one dict: one read and one `marshal.loads` give them all,
and a folder whose stats on disk equal its snapshot's dict is unchanged as a whole (one comparison
in C instead of a loop over its files).

A snapshot is only ever a copy of the `files` table. Triggers bump the source's generation on
every insert, update and delete there, whoever writes; a snapshot counts only while its generation
is the source's, and is stored only by a writer that saw the generation it read. One that cannot
be decoded (a damaged cache) (its CRC-32 tells) is treated as stale: the rows come from the table again.
"""

from __future__ import annotations

import marshal
import sqlite3
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .catalog_columns import LAYOUT
from .folder_scan import FolderNames

FORMAT = 2
TABLE_NAMES = ("generations", "snapshots")
TABLES = (
    "CREATE TABLE generations (source TEXT PRIMARY KEY, gen INTEGER NOT NULL)",
    "CREATE TABLE snapshots (source TEXT PRIMARY KEY, gen INTEGER NOT NULL, crc INTEGER NOT NULL, data BLOB NOT NULL)",
)
# The first row of a source makes its generation; every later change bumps it. (Two statements, not an
# upsert: SQLite takes an upsert in a trigger only from 3.35.)
TRIGGERS = (
    "CREATE TRIGGER files_inserted AFTER INSERT ON files BEGIN "
    "INSERT OR IGNORE INTO generations VALUES (NEW.source, 0); "
    "UPDATE generations SET gen = gen + 1 WHERE source = NEW.source; END",
    "CREATE TRIGGER files_updated AFTER UPDATE ON files BEGIN "
    "UPDATE generations SET gen = gen + 1 WHERE source IN (OLD.source, NEW.source); END",
    "CREATE TRIGGER files_deleted AFTER DELETE ON files BEGIN "
    "UPDATE generations SET gen = gen + 1 WHERE source = OLD.source; END",
)
# Where a row's columns (the files table's, after `grp`: `catalog_columns.COLUMNS`) hold the file id and its stat.
FILE_ID, SIZE, MTIME, RACY = (LAYOUT.at[name] for name in ("file_id", "size", "mtime_ns", "racy"))

Stats = dict[str, tuple[int, int]]
Columns = tuple[Any, ...]   # as SQLite gives them: text, integers, a real, nulls


@dataclass(slots=True)
class Folder:
    """One group's part of a snapshot: the stats its rows were read at, each row's columns, whether
    any of them is to be read again (a stat too recent to trust), and the names the folder's last
    scan read (the next scan stats them while the folder's stamp holds; none from the table)."""

    stats: Stats
    columns: list[Columns]
    racy: bool
    names: FolderNames | None = None


@dataclass(slots=True)
class SourceRows:
    """A source's cached rows by folder, and the generation they were read at (None: the source has
    none yet); `from_snapshot` tells whether a valid snapshot gave them (else the table did)."""

    generation: int | None
    folders: dict[str, Folder]
    from_snapshot: bool


def load(db: sqlite3.Connection, source: str, select: str) -> SourceRows:
    """The source's rows, from its snapshot when it is current, else from `select` (the table's
    columns, `grp` first, of the source's files; one `?` for the source's name)."""
    found = db.execute("SELECT g.gen, s.gen, s.crc, s.data FROM generations g "
                       "LEFT JOIN snapshots s ON s.source = g.source WHERE g.source = ?", (source,)).fetchone()
    generation = None if found is None else found[0]
    if found is not None and found[1] == generation:
        folders = _decoded(found[2], found[3])
        if folders is not None:
            return SourceRows(generation, folders, True)
    return SourceRows(generation, folders_of(db.execute(select, (source,))), False)


def folders_of(table_rows: Iterable[Sequence[Any]]) -> dict[str, Folder]:
    """The rows the table gives (`grp`, then the columns), by folder."""
    folders: dict[str, Folder] = {}
    for group, *columns in table_rows:
        folder = folders.get(group)
        if folder is None:
            folder = folders[group] = Folder({}, [], False)
        folder.stats[columns[FILE_ID]] = (columns[SIZE], columns[MTIME])
        folder.columns.append(tuple(columns))
        folder.racy = folder.racy or bool(columns[RACY])
    return folders


def store(db: sqlite3.Connection, source: str, folders: dict[str, Folder]) -> None:
    """Store the source's snapshot, inside the caller's write transaction and after its own writes to
    `files`; only a caller that found the rows `unchanged_since` it read them, first thing in that
    transaction, may."""
    db.execute("INSERT OR IGNORE INTO generations VALUES (?, 0)", (source,))
    generation = db.execute("SELECT gen FROM generations WHERE source = ?", (source,)).fetchone()[0]
    data = marshal.dumps((FORMAT, {group: (f.stats, f.columns, f.racy, None if f.names is None else
                                           (f.names.stamp, f.names.names)) for group, f in folders.items()}))
    db.execute("INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?, ?)",
               (source, generation, zlib.crc32(data), data))


def unchanged_since(db: sqlite3.Connection, source: str, read_at: int | None) -> bool:
    """Whether the source's generation is still `read_at` (run first in the write transaction)."""
    found = db.execute("SELECT gen FROM generations WHERE source = ?", (source,)).fetchone()
    return (None if found is None else found[0]) == read_at


def _decoded(crc: int, data: bytes) -> dict[str, Folder] | None:
    """The folders of a stored snapshot; None for one that is damaged (its CRC-32 tells) or of
    another format."""
    if zlib.crc32(data) != crc:
        return None
    try:
        version, folders = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    if version != FORMAT or not isinstance(folders, dict):
        return None
    try:
        return {group: Folder(stats, columns, racy, None if names is None else FolderNames(*names))
                for group, (stats, columns, racy, names) in folders.items()}
    except (ValueError, TypeError):   # a folder of another shape
        return None
