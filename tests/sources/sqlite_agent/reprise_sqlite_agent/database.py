"""The test agent's database, read-only: `sessions(id, folder, title, updated_ns)` and
`messages(session_id, turn, role, text)`, one row per prompt (`user`) and reply (`assistant`)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, folder TEXT, title TEXT, updated_ns INTEGER NOT NULL);
CREATE TABLE messages (session_id TEXT NOT NULL, turn INTEGER NOT NULL, role TEXT NOT NULL, text TEXT NOT NULL);
"""
NO_FOLDER = "(no folder)"   # the group of the sessions whose folder the database does not say


def database_of(root: Path) -> Path:
    """Where the database of a store root is."""
    return root / "db" / "sessions.db"


@dataclass(frozen=True, slots=True)
class Row:
    """One session as the database has it: its turns as (prompt, reply) pairs."""

    session_id: str
    folder: str | None
    title: str | None
    updated_ns: int
    turns: list[tuple[str, str]]

    @property
    def size(self) -> int:
        """The bytes of its texts: what the listing notices a change by, with `updated_ns`."""
        return sum(len(prompt.encode()) + len(reply.encode()) for prompt, reply in self.turns) + len(
            (self.title or "").encode())


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


def stats(path: Path) -> dict[str, tuple[str, int, int]]:
    """{session id: (group, size, updated_ns)} of every session."""
    with reading(path) as db:
        sizes = dict(db.execute("SELECT session_id, SUM(LENGTH(CAST(text AS BLOB))) FROM messages GROUP BY session_id"))
        return {str(session_id): (group_of(folder), int(sizes.get(session_id) or 0)
                                  + len(str(title or "").encode()), int(updated))
                for session_id, folder, title, updated in db.execute(
                    "SELECT id, folder, title, updated_ns FROM sessions")}


def read_row(path: Path, session_id: str) -> Row | None:
    """One session, or None when the database has none of that id."""
    with reading(path) as db:
        found = db.execute("SELECT folder, title, updated_ns FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if found is None:
            return None
        folder, title, updated = found
        turns: dict[int, list[str]] = {}
        for turn, role, text in db.execute(
                "SELECT turn, role, text FROM messages WHERE session_id = ? ORDER BY turn, rowid", (session_id,)):
            pair = turns.setdefault(int(turn), ["", ""])
            pair[0 if role == "user" else 1] += str(text)
    return Row(session_id, folder if isinstance(folder, str) else None, title if isinstance(title, str) else None,
               int(updated), [(prompt, reply) for _, (prompt, reply) in sorted(turns.items())])


def folders(path: Path) -> dict[str, str]:
    """{group: folder} of every group the database names a folder for."""
    try:
        with reading(path) as db:
            return {group_of(folder): folder for (folder,) in db.execute("SELECT DISTINCT folder FROM sessions")
                    if group_of(folder) != NO_FOLDER}
    except sqlite3.Error:
        return {}
