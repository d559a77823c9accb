"""The audit log of a workspace: one JSON line per destructive operation Reprise performed
(when, what, on which session, with which options and archive digests, how many turns or
sessions, how it ended).

Callers pass only ids, option values, digests and counts: a line never carries message,
response or title text, so the log is safe to share. The log is streamed when read, with a
cap per line, and a bad line is skipped and named, never fatal.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .errors import RepriseError
from .paths import OwnPaths
from .problems import Problem
from .rooted import Root

MAX_AUDIT_LINE_BYTES = 1024 * 1024

OPS = ("trim", "restore", "rm", "trash-restore", "purge", "prune", "relink", "interrupt", "continue")


@dataclass(frozen=True, slots=True)
class AuditRecord:
    time: str
    op: str
    workspace_key: str
    session_id: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    digests: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    result: str = "ok"
    sessions: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"time": self.time, "op": self.op, "workspace_key": self.workspace_key,
                "session_id": self.session_id, "options": self.options, "digests": self.digests,
                "counts": self.counts, "result": self.result, "sessions": self.sessions}


def iso_time(now: float | None = None) -> str:
    """A UTC timestamp like Fractal's, for `now` (seconds since the epoch) or the current time."""
    moment = datetime.now(UTC) if now is None else datetime.fromtimestamp(now, UTC)
    return moment.isoformat()


class AuditError(RepriseError):
    code = "audit"


def _record(item: object, key: str) -> AuditRecord:
    if not isinstance(item, dict):
        raise TypeError(f"a JSON {type(item).__name__}, not an object")
    fields = {"options": dict, "digests": list, "counts": dict, "sessions": list}
    for name, kind in fields.items():
        if item.get(name) is not None and not isinstance(item[name], kind):
            raise TypeError(f"its {name} is not a JSON {'object' if kind is dict else 'array'}")
    time, op, session_id = item.get("time"), item.get("op"), item.get("session_id")
    if not isinstance(time, str) or not isinstance(op, str) or not isinstance(session_id, (str, type(None))):
        raise TypeError("its time, op or session_id is not a string")
    return AuditRecord(time, op, str(item.get("workspace_key", key)), session_id, dict(item.get("options") or {}),
                       list(item.get("digests") or []), dict(item.get("counts") or {}),
                       str(item.get("result", "")), list(item.get("sessions") or []))


class AuditLog:
    """`<key>/reprise/audit.jsonl` of every workspace under one state root."""

    def __init__(self, paths: OwnPaths):
        self.paths = paths
        self.root = Root(paths.root)
        self.problems: list[Problem] = []

    def append(self, workspace_key: str, op: str, *, session_id: str | None = None,
               options: dict[str, Any] | None = None, digests: Iterable[str] = (),
               counts: dict[str, int] | None = None, result: str = "ok", sessions: Iterable[str] = (),
               now: float | None = None) -> AuditRecord:
        if op not in OPS:
            raise ValueError(f"unknown audit operation {op!r}")
        record = AuditRecord(iso_time(now), op, workspace_key, session_id, dict(options or {}), list(digests),
                             dict(counts or {}), result, list(sessions))
        line = (json.dumps(record.as_dict(), ensure_ascii=True) + "\n").encode("ascii")
        path = self.paths.audit_file(workspace_key)
        in_flight = sys.exc_info()[1]  # the failure this line records, when called while handling it
        try:
            self.root.append(path, line)
        except (OSError, RepriseError) as exc:
            reason = exc.message if isinstance(exc, RepriseError) else exc.strerror or str(exc)
            error = AuditError(f"The audit log {path} could not record this {op}: {reason.rstrip('.')}.",
                               hint=None if result.startswith("failed") else f"the {op} itself was done",
                               path=path)
            if result.startswith("failed") and isinstance(in_flight, RepriseError):
                _note_on(in_flight, error)
                return record
            raise error from None
        return record

    def read(self, keys: Iterable[str]) -> list[AuditRecord]:
        """The lines of these workspaces, oldest first. A torn last line (a crash mid-append) is
        skipped quietly; any other bad line, and a log that is not a readable regular file, is
        skipped and named in `problems`."""
        records = []
        self.problems = []
        for key in keys:
            path = self.paths.audit_file(key)
            try:
                for line in self.root.lines(path, MAX_AUDIT_LINE_BYTES):
                    if line.data is not None and not line.data.strip():
                        continue
                    try:
                        if line.data is None:
                            raise ValueError(f"over the {MAX_AUDIT_LINE_BYTES:,}-byte line limit")
                        records.append(_record(json.loads(line.data), key))
                    except (ValueError, TypeError) as exc:
                        if line.terminated:
                            reason = "not JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
                            self.problems.append(Problem(str(path), "bad_audit_line",
                                                         f"{path} line {line.number}: {reason}; skipped"))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except RepriseError as exc:
                self.problems.append(Problem(str(path), exc.code, exc.message))
            except OSError as exc:
                self.problems.append(Problem(str(path), "unreadable", f"{path}: {exc.strerror or exc}."))
        records.sort(key=lambda record: record.time)
        return records


def _note_on(current: BaseException | None, error: AuditError) -> None:
    """A failure record never hides the failure it records: the error being raised stays the one
    reported, and says that the audit log could not record it."""
    if isinstance(current, RepriseError):
        note = f"also, {error.message[0].lower()}{error.message[1:]}"
        current.hint = f"{current.hint}; {note}" if current.hint else note
