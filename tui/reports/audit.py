"""`reprise audit` and the TUI's Audit log view: one line per destructive operation (never
message text: the log holds none), when it happened as people say it ("yesterday 14:05"; the
exact time is in `reprise audit --json`), and the log lines that could not be read."""

from __future__ import annotations

from datetime import datetime

from reprise.core.audit import AuditRecord
from reprise.core.problems import Problem
from reprise.core.times import parse_time

from ..format import human_time, local_now
from ..text import clipped, safe_line
from . import Line, line


def audit_lines(records: list[AuditRecord], now: datetime | None = None) -> list[Line]:
    now = now or local_now()
    lines = []
    for record in records:
        at = parse_time(record.time)
        when = human_time(at, now) if at is not None else clipped(record.time, 32)
        target = record.session_id or ", ".join(record.sessions) or "-"
        counts = ", ".join(f"{k} {v}" for k, v in record.counts.items())
        lines.append(line((f"{when:16}", "dim"),
                          f"  {clipped(record.op, 13):13} {clipped(target, 32):32}  ",
                          (clipped(record.result, 60), "" if record.result == "ok" else "yellow"),
                          f"  {clipped(counts, 80)}"))
    if not records:
        lines.append(line("No destructive operations recorded."))
    return lines


def audit_problem_lines(problems: list[Problem]) -> list[Line]:
    """The skipped lines and unreadable logs, each naming its file (and line)."""
    return [line(safe_line(problem.message), style="red") for problem in problems]
