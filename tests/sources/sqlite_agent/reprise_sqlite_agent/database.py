"""The test agent's database, read-only. A session is kept in one or more records (a resume of it
adds a record, as an agent that writes a second file for a session does): `records(id, session_id,
folder, title, updated_ns)` and `messages(record_id, turn, role, text)`, one row per prompt (`user`)
and reply (`assistant`). A session's records, oldest first, hold its turns in order; the first one
names its folder and the listing's "file" of it (a record id is never the session's id)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE records (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, folder TEXT, title TEXT,
                      updated_ns INTEGER NOT NULL);
CREATE TABLE messages (record_id TEXT NOT NULL, turn INTEGER NOT NULL, role TEXT NOT NULL, text TEXT NOT NULL);
"""
NO_FOLDER = "(no folder)"   # the group of the sessions whose folder the database does not say


def database_of(root: Path) -> Path:
    """Where the database of a store root is."""
    return root / "db" / "sessions.db"


@dataclass(frozen=True, slots=True)
class Row:
    """One session as the database has it, its records joined: its turns as (prompt, reply) pairs."""

    session_id: str
    records: tuple[str, ...]   # its records' ids, oldest first: the first is the listing's file of it
    folder: str | None
    title: str | None
    updated_ns: int
    turns: list[tuple[str, str]]
    size: int   # the bytes of its records' texts and titles: what the listing notices a change by, with `updated_ns`


def group_of(folder: object) -> str:
    """The group a session is listed in: its folder, when the database says an absolute one."""
    return folder if isinstance(folder, str) and folder.startswith("/") and "\0" not in folder else NO_FOLDER


@contextlib.contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """The database opened read-only (never created, never written); sqlite3.Error when it cannot be."""
    if not path.is_file():
        raise sqlite3.OperationalError(f"no database at {path}")
    connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        yield connection
    finally:
        connection.close()


_RECORDS = "SELECT id, session_id, folder, title, updated_ns FROM records ORDER BY updated_ns, id"


def stats(path: Path) -> dict[str, tuple[str, int, int]]:
    """{file id: (group, size, updated_ns)} of every session, its records joined under its first
    record's id: the size of them all, the newest one's time."""
    with reading(path) as db:
        sizes = dict(db.execute("SELECT record_id, SUM(LENGTH(CAST(text AS BLOB))) FROM messages GROUP BY record_id"))
        first: dict[str, str] = {}
        found: dict[str, tuple[str, int, int]] = {}
        for record, session_id, folder, title, updated in db.execute(_RECORDS):
            size = int(sizes.get(record) or 0) + len(str(title or "").encode())
            file_id = first.setdefault(str(session_id), str(record))
            group, before, newest = found.get(file_id, (group_of(folder), 0, 0))
            found[file_id] = (group, before + size, max(newest, int(updated)))
        return found


def session_of(path: Path, file_id: str) -> str | None:
    """The id of the session whose first record is `file_id`; None when there is none."""
    with reading(path) as db:
        found = db.execute("SELECT session_id FROM records WHERE id = ?", (file_id,)).fetchone()
    return None if found is None else str(found[0])


def read_row(path: Path, session_id: str) -> Row | None:
    """One session, its records joined, or None when the database has none of that id."""
    with reading(path) as db:
        records = db.execute("SELECT id, folder, title, updated_ns FROM records WHERE session_id = ? "
                             "ORDER BY updated_ns, id", (session_id,)).fetchall()
        if not records:
            return None
        turns: list[tuple[str, str]] = []
        for record, _, _, _ in records:
            pairs: dict[int, list[str]] = {}
            for turn, role, text in db.execute(
                    "SELECT turn, role, text FROM messages WHERE record_id = ? ORDER BY turn, rowid", (record,)):
                pair = pairs.setdefault(int(turn), ["", ""])
                pair[0 if role == "user" else 1] += str(text)
            turns += [(prompt, reply) for _, (prompt, reply) in sorted(pairs.items())]
    _, folder, _, _ = records[0]
    titles = [title for _, _, title, _ in records if isinstance(title, str)]
    size = sum(len(prompt.encode()) + len(reply.encode()) for prompt, reply in turns) + sum(
        len(title.encode()) for title in titles)
    return Row(session_id, tuple(str(record) for record, _, _, _ in records),
               folder if isinstance(folder, str) else None, titles[-1] if titles else None,
               max(int(updated) for *_, updated in records), turns, size)


def folders(path: Path) -> dict[str, str]:
    """{group: folder} of every group the database names a folder for."""
    try:
        with reading(path) as db:
            return {group_of(folder): folder for (folder,) in db.execute("SELECT DISTINCT folder FROM records")
                    if group_of(folder) != NO_FOLDER}
    except sqlite3.Error:
        return {}
