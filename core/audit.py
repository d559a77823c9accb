"""The audit log of a workspace: one JSON line per destructive operation Reprise performed
(when, what, on which session, with which options and archive digests, how many turns or
sessions, how it ended).

Callers pass only ids, option values, digests and counts: a line never carries message,
response or title text, so the log is safe to share.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .paths import StorePaths
from .store import append_line

OPS = ("trim", "restore", "rm", "trash-restore", "purge", "prune", "relink")


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
    moment = datetime.now(timezone.utc) if now is None else datetime.fromtimestamp(now, timezone.utc)
    return moment.isoformat()


class AuditLog:
    """`<key>/reprise/audit.jsonl` of every workspace under one state root."""

    def __init__(self, paths: StorePaths):
        self.paths = paths

    def append(self, workspace_key: str, op: str, *, session_id: str | None = None,
               options: dict[str, Any] | None = None, digests: Iterable[str] = (),
               counts: dict[str, int] | None = None, result: str = "ok", sessions: Iterable[str] = (),
               now: float | None = None) -> AuditRecord:
        if op not in OPS:
            raise ValueError(f"unknown audit operation {op!r}")
        record = AuditRecord(iso_time(now), op, workspace_key, session_id, dict(options or {}), list(digests),
                             dict(counts or {}), result, list(sessions))
        line = (json.dumps(record.as_dict(), ensure_ascii=True) + "\n").encode("ascii")
        append_line(self.paths.audit_file(workspace_key), line)
        return record

    def read(self, keys: Iterable[str]) -> list[AuditRecord]:
        """The lines of these workspaces, oldest first; torn or foreign lines are skipped."""
        records = []
        for key in keys:
            try:
                lines = self.paths.audit_file(key).read_text(encoding="ascii", errors="replace").splitlines()
            except (FileNotFoundError, NotADirectoryError):
                continue
            for line in lines:
                try:
                    item = json.loads(line)
                    records.append(AuditRecord(
                        item["time"], item["op"], item.get("workspace_key", key), item.get("session_id"),
                        dict(item.get("options") or {}), list(item.get("digests") or []),
                        dict(item.get("counts") or {}), str(item.get("result", "")),
                        list(item.get("sessions") or [])))
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue
        records.sort(key=lambda record: record.time)
        return records
