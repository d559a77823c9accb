"""The full-text index, in the catalog's SQLite file: a contentless FTS5 table of every record (a
turn's prompt, reply, thinking, tools or error) of the files indexed, and beside it a table of those
files with their records' texts, compressed.

The index keeps no second copy of the text in FTS5 (`content=''`, `detail=none`: the tokens and
the rowids, nothing else): it only preselects the records holding every token of a query, and the
query's own rule (`search_match.Query.matches`) confirms them on the texts kept per file. Those
texts are what was indexed, exactly, so a changed file's rows are deleted from FTS5 (a contentless
table deletes a row given its text) and nothing dead is left behind. A record's rowid is its file's
number and its place among the file's records (`number << RECORD_BITS | place`).
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import marshal
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .rows import SessionRow
from .search_match import Query
from .search_snippet import Excerpt
from .sources.base import SearchRecord

HIT_START, HIT_END = "\x02", "\x03"
SNIPPET_CELLS = 120   # the width of `SearchHit.snippet` (what `--json` gives)
TOKENIZER = "unicode61 remove_diacritics 2"
RECORD_BITS = 24      # a file's records past 16.7 million are not indexed
_ZLIB_LEVEL = 4   # half the time of 6 for 5% more bytes (measured on the generated store's texts)
BLOCK_BYTES = 64 * 1024   # the records' marshalled bytes per compressed block: 5% larger than one stream
_BLOCKS = b"RB2\x00"     # a blob of blocks; before it, a blob was the whole list compressed at once

TABLES = (
    f"CREATE VIRTUAL TABLE search_text USING fts5(text, content='', detail=none, tokenize='{TOKENIZER}')",
    """CREATE TABLE search_files (number INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE,
                                workspace_key TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                                cut INTEGER NOT NULL, records BLOB NOT NULL)""",
)
TABLE_NAMES = ("search_text", "search_files")
OLD_TABLE_NAMES = ("search", "search_state")   # the index before issue 27: every text, with content


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
    return text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")


Record = tuple[int, str, str]   # (turn, field, text) as indexed


@dataclass(slots=True)
class IndexedFile:
    """One file's records as the index keeps them: its identity when read, its records (bounded by
    `transcript_search`), how many of them were cut, and their texts compressed (`blob`, made when
    first asked for: a search that keeps nothing for the index never compresses them)."""

    path: str
    workspace_key: str
    size: int
    mtime_ns: int
    records: list[Record]
    cut: int
    compressed: bytes | None = None

    @property
    def blob(self) -> bytes:
        if self.compressed is None:
            self.compressed = blob_of(self.records)
        return self.compressed

    def without_texts(self) -> IndexedFile:
        """The same file with its texts only compressed: what a worker process hands back (a batch of
        files' texts held whole, and pickled, doubled the peak memory of the process writing them)."""
        return dataclasses.replace(self, records=[], compressed=self.blob)

    def texts(self) -> list[Record]:
        return self.records or records_of(self.blob)

    @classmethod
    def of(cls, path: str, workspace_key: str, size: int, mtime_ns: int,
           found: Sequence[SearchRecord]) -> IndexedFile:
        records = [(record.turn, record.field, _utf8(record.text)) for record in found[:1 << RECORD_BITS]]
        return cls(path, workspace_key, size, mtime_ns, records, sum(record.cut for record in found))


@dataclass(frozen=True, slots=True)
class FileState:
    """What the index holds of a file: its number, the (size, mtime_ns) it was read at, its cut records."""

    number: int
    size: int
    mtime_ns: int
    cut: int


def blob_of(records: list[Record]) -> bytes:
    """The records as kept: `_BLOCKS`, then (the records before each block's end, the blocks), each
    block a run of records of about BLOCK_BYTES (a longer record alone), marshalled and compressed."""
    ends: list[int] = []
    blocks: list[bytes] = []
    start, size = 0, 0
    for at, record in enumerate(records):
        size += len(record[2]) + len(record[1]) + 16
        if size >= BLOCK_BYTES or at == len(records) - 1:
            blocks.append(zlib.compress(marshal.dumps(records[start:at + 1]), _ZLIB_LEVEL))
            ends.append(at + 1)
            start, size = at + 1, 0
    return _BLOCKS + marshal.dumps((ends, blocks))


def _checked(records: Any) -> list[Record]:
    """Unmarshalled records, each as a (turn, field, text) of those types."""
    return [(int(turn), str(field), str(text)) for turn, field, text in records]


def records_of(blob: bytes) -> list[Record]:
    """A file's records from their compressed texts."""
    if not blob.startswith(_BLOCKS):
        return _checked(marshal.loads(zlib.decompress(blob)))
    _, blocks = marshal.loads(blob[len(_BLOCKS):])
    return [record for block in blocks for record in _checked(marshal.loads(zlib.decompress(block)))]


def records_at(blob: bytes, places: Iterable[int]) -> list[Record]:
    """The records at these places of a file (places past its last record left out), decompressing
    only the blocks that hold them."""
    if not blob.startswith(_BLOCKS):
        records = records_of(blob)
        return [records[place] for place in places if place < len(records)]
    ends, blocks = marshal.loads(blob[len(_BLOCKS):])
    opened: dict[int, list[Record]] = {}
    found = []
    for place in places:
        at = bisect.bisect_right(ends, place)
        if at >= len(blocks):
            continue
        if at not in opened:
            opened[at] = _checked(marshal.loads(zlib.decompress(blocks[at])))
        found.append(opened[at][place - (ends[at - 1] if at else 0)])
    return found


class SearchIndex:
    """The index inside one catalog database; the catalog serializes the calls."""

    def __init__(self, connection: Callable[[], sqlite3.Connection],
                 transaction: Callable[[], contextlib.AbstractContextManager[sqlite3.Connection]]):
        self._connection = connection
        self._transaction = transaction

    def files(self) -> dict[str, FileState]:
        """Every file indexed, by path."""
        return {path: FileState(number, size, mtime_ns, cut) for number, path, size, mtime_ns, cut
                in self._connection().execute("SELECT number, path, size, mtime_ns, cut FROM search_files")}

    def candidates(self, query: Query) -> dict[int, list[int]]:
        """{file number: the places of its records holding every token of the query}."""
        found: dict[int, list[int]] = {}
        mask = (1 << RECORD_BITS) - 1
        for (rowid,) in self._connection().execute("SELECT rowid FROM search_text WHERE search_text MATCH ?",
                                                   (query.fts_match(),)):
            found.setdefault(rowid >> RECORD_BITS, []).append(rowid & mask)
        return found

    def records(self, number: int, places: Iterable[int]) -> list[Record]:
        """The records at these places of an indexed file, as indexed ([] when it is no longer there)."""
        found = self._connection().execute("SELECT records FROM search_files WHERE number = ?", (number,)).fetchone()
        return [] if found is None else records_at(bytes(found[0]), places)

    def add(self, files: Iterable[IndexedFile]) -> None:
        """Index these files, in one transaction, each replacing what the index held of its path."""
        files = list(files)
        if not files:
            return
        with self._transaction() as db:
            self._drop(db, [file.path for file in files])
            number = db.execute("SELECT coalesce(max(number), 0) FROM search_files").fetchone()[0]
            for file in files:
                number += 1
                db.execute("INSERT INTO search_files VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (number, file.path, file.workspace_key, file.size, file.mtime_ns, file.cut, file.blob))
                db.executemany("INSERT INTO search_text (rowid, text) VALUES (?, ?)",
                               _rows(number, file.texts()))

    def remove(self, paths: Iterable[str]) -> None:
        """Drop what the index holds of these files."""
        paths = list(paths)
        if paths:
            with self._transaction() as db:
                self._drop(db, paths)

    @staticmethod
    def _drop(db: sqlite3.Connection, paths: list[str]) -> None:
        """A contentless FTS5 table deletes a row given the text it indexed: the file's kept records."""
        for path in paths:
            found = db.execute("SELECT number, records FROM search_files WHERE path = ?", (path,)).fetchone()
            if found is None:
                continue
            number, blob = found
            db.executemany("INSERT INTO search_text (search_text, rowid, text) VALUES ('delete', ?, ?)",
                           _rows(number, records_of(bytes(blob))))
            db.execute("DELETE FROM search_files WHERE number = ?", (number,))

    def size_bytes(self) -> int:
        """The bytes the index takes: FTS5's blocks and the kept texts (SQLite's pages add a little)."""
        db = self._connection()
        texts = db.execute("SELECT coalesce(sum(length(records)), 0) FROM search_files").fetchone()[0]
        if not texts:
            return 0   # an empty index (FTS5 keeps a few bytes of structure)
        blocks = db.execute("SELECT coalesce(sum(length(block)), 0) FROM search_text_data").fetchone()[0]
        return int(blocks) + int(texts)


def _rows(number: int, records: list[Record]) -> Iterator[tuple[int, str]]:
    base = number << RECORD_BITS
    return ((base + place, text) for place, (_, _, text) in enumerate(records))
