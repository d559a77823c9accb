"""The sessions Codex imported from another agent: its ledger `external_agent_session_imports.json`
under its root, read whole (at most MAX_LEDGER_BYTES, a regular file inside the root, through
`session_files`), each record a link from the source session's file to the Codex thread made of it.

What Codex CLI 0.171.0 does, checked by running it (tests/compat/codex/test_import_compat.py, offline
in the compat namespace; tests/fixtures/codex-import/ holds what one run wrote):

- No command imports a session. The app-server does, on `externalAgentConfig/import` with the
  `SESSIONS` item that `externalAgentConfig/detect` (`includeHome: true`) offers: the Claude Code
  sessions under `$HOME/.claude/projects/*/*.jsonl` whose recorded `cwd` is an existing folder (the
  fixture's, whose folders are missing, are not offered) and that were not imported unchanged
  already (Codex's public source adds: changed in the last 30 days, at most 50, an unchanged one
  compared by its mtime). `CLAUDE_CONFIG_DIR` is not read (the name is not in the binary; sessions only
  there are not offered). The TUI's `/import` ("Moving from Claude Code? Use /import ...") sends the
  same `externalAgentConfig/import` (its strings say so; not driven here). No model request is made.
- The ledger is one pretty-printed JSON object, rewritten whole: `{"records": [...],
  "detected_connector_records": [...]}`; a record is `{"source_path": str (the canonical absolute
  path of the session file), "content_sha256": str (hex of its bytes), "imported_thread_id": str
  (the new thread's UUID), "imported_at": int (unix seconds), "source_modified_at": int | null (the
  source's mtime in unix NANOseconds), "connector_names": [str], "title": str | null (the first
  prompt)}`. Per Codex's public source (not run here), a source changed and imported again gets a
  second record with a new thread, while the same path and digest replace their record: the newest
  is last.
- The imported rollout is a new thread: a new id, today's date folder, `session_meta` with `cwd`
  the source's, `originator` the app-server client's name, `source: "vscode"`, `history_mode:
  "legacy"` and nothing naming the source file; lines without `ordinal`. Each source prompt is a
  turn `external-import-turn-N` of `user_message`/`agent_message` events and `response_item`
  messages, tool calls and results flattened to text (`[external_agent_tool_call: Bash] ...`); the
  last turn ends with the `agent_message` `<EXTERNAL SESSION IMPORTED>` and a `token_count` of zero
  input. Only this ledger links the thread to its source.

Not verified: re-imports of a changed source, Cursor sources (the binary has a Cursor importer too;
its `source_path` shape was not seen), `connector_names` other than empty, `detected_connector_records`
entries, the TUI flows, and whether `codex resume` continues an imported thread.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath

from ...problems import Problem
from ...session_files import ReadProblem, opened_regular_file, read_all
from .. import agent_json
from ..uuid_ids import is_uuid
from .layout import IMPORTS_LEDGER

LEDGER = IMPORTS_LEDGER
MAX_LEDGER_BYTES = 16 * 1024 * 1024
MAX_PATH_CHARS = 4096
MAX_TITLE_CHARS = 1024
_INT64 = 1 << 63


@dataclass(frozen=True, slots=True)
class ImportedSession:
    """One record of the ledger: the session file Codex read, and the thread it made of it."""

    source_path: str
    thread_id: str
    imported_at: datetime
    source_modified_at: datetime | None = None
    title: str | None = None

    @property
    def source_session_id(self) -> str | None:
        """The source's session id when its file is named `<uuid>.jsonl`, as Claude Code names them."""
        name = PurePosixPath(self.source_path).name
        stem = name.removesuffix(".jsonl")
        return stem if stem != name and is_uuid(stem) else None


@dataclass(slots=True)
class ImportedSessions:
    """The ledger's records that could be read, in its order (newest last), and what was wrong."""

    sessions: list[ImportedSession] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def thread_of(self, source_path: str) -> str | None:
        """The newest thread imported from this session file, or None."""
        return next((s.thread_id for s in reversed(self.sessions) if s.source_path == source_path), None)

    def source_of(self, thread_id: str) -> ImportedSession | None:
        return next((s for s in reversed(self.sessions) if s.thread_id == thread_id), None)


def ledger_path(root: Path) -> Path:
    return root / LEDGER


def imported_sessions(root: Path) -> ImportedSessions:
    """The sessions the Codex root `root` imported. A missing ledger holds none; an unreadable or
    malformed one gives a problem naming it, a malformed record a warning naming its index."""
    path = ledger_path(root)
    found = ImportedSessions()
    try:
        with opened_regular_file(path, root) as (fd, info):
            data = read_all(fd, info.st_size, MAX_LEDGER_BYTES)
    except FileNotFoundError:
        return found
    except ReadProblem as exc:
        found.problems.append(Problem(str(path), exc.code, f"Codex's import ledger: {exc.message}"))
        return found
    try:
        ledger = agent_json.loads(data)
    except (ValueError, RecursionError) as exc:
        found.problems.append(_bad_ledger(path, f"it is not JSON ({_short(str(exc))})"))
        return found
    if not isinstance(ledger, dict):
        found.problems.append(_bad_ledger(path, f"it is {_kind(ledger)}, not an object"))
        return found
    records = ledger.get("records", [])
    if not isinstance(records, list):
        found.problems.append(_bad_ledger(path, f"`records` is {_kind(records)}, not a list", "records"))
        return found
    for index, record in enumerate(records):
        session = _session(record)
        if isinstance(session, ImportedSession):
            found.sessions.append(session)
        else:
            found.problems.append(Problem(str(path), "bad_import_record", f"record {index}: {session}",
                                          field=f"records[{index}]", severity="warning",
                                          next_step=f"nothing to do: the other records are read; open the file "
                                                    f"to see record {index}: {path}"))
    return found


def _session(record: object) -> ImportedSession | str:
    """The record as an ImportedSession, or what is wrong with it."""
    if not isinstance(record, dict):
        return f"it is {_kind(record)}, not an object"
    source, thread = record.get("source_path"), record.get("imported_thread_id")
    if not isinstance(source, str):
        return f"`source_path` is {_kind(source)}, not a string"
    if (wrong := _path_problem(source)) is not None:
        return f"`source_path` {wrong}"
    if not isinstance(thread, str) or not is_uuid(thread):
        return f"`imported_thread_id` is {_shown(thread)}, not a Codex thread id (a UUID)"
    imported_at = _time(record.get("imported_at"), 1)
    if imported_at is None:
        return f"`imported_at` is {_shown(record.get('imported_at'))}, not a time in unix seconds"
    modified = record.get("source_modified_at")
    modified_at = _time(modified, 1_000_000_000)
    if modified is not None and modified_at is None:
        return f"`source_modified_at` is {_shown(modified)}, not a time in unix nanoseconds"
    title = record.get("title")
    title = title[:MAX_TITLE_CHARS] if isinstance(title, str) and title.strip() else None
    return ImportedSession(source, thread, imported_at, modified_at, title)


def _path_problem(text: str) -> str | None:
    """Why a `source_path` is not the canonical absolute path Codex writes, or None."""
    if len(text) > MAX_PATH_CHARS:
        return f"is {len(text):,} characters long"
    if any(ord(char) < 32 or 127 <= ord(char) < 160 for char in text):
        return f"holds control characters: {_shown(text)}"
    if not text.startswith("/"):
        return f"is not an absolute path: {_shown(text)}"
    if os.path.normpath(text) != text or text.startswith("//"):
        return f"is not a canonical path (no `.`, `..` or empty parts): {_shown(text)}"
    return None


def _time(value: object, per_second: int) -> datetime | None:
    """A count of `per_second` units since the epoch as a UTC time, or None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _INT64:
        return None
    whole, part = divmod(value, per_second)   # exact to the microsecond (a float of nanoseconds is not)
    try:
        return datetime.fromtimestamp(whole, UTC) + timedelta(microseconds=part * 1_000_000 // per_second)
    except (OverflowError, OSError, ValueError):
        return None


def _bad_ledger(path: Path, what: str, field_name: str | None = None) -> Problem:
    return Problem(str(path), "bad_import_ledger", f"Codex's import ledger cannot be read: {what}",
                   field=field_name, next_step=f"open the file: {path} (Reprise shows no imports from it)")


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _shown(value: object) -> str:
    """A value for a problem's message: a string quoted with its control characters escaped, short."""
    if isinstance(value, str):
        return f"'{_short(value.encode('unicode_escape').decode('ascii'))}'"
    if value is None or isinstance(value, bool | int | float):
        return _short(repr(value))
    return _kind(value)


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
