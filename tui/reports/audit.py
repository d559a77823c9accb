"""`reprise audit` and the TUI's Audit log view: one line per destructive operation (never
message text: the log holds none), and the log lines that could not be read."""

from __future__ import annotations

from reprise.core.audit import AuditRecord
from reprise.core.problems import Problem

from ..text import clipped, safe_line
from . import Line, line


def audit_lines(records: list[AuditRecord]) -> list[Line]:
    lines = []
    for record in records:
        target = record.session_id or ", ".join(record.sessions) or "-"
        counts = ", ".join(f"{k} {v}" for k, v in record.counts.items())
        lines.append(line((clipped(record.time, 32), "dim"),
                          f"  {clipped(record.op, 13):13} {clipped(target, 32):32}  ",
                          (clipped(record.result, 60), "" if record.result == "ok" else "yellow"),
                          f"  {clipped(counts, 80)}"))
    if not records:
        lines.append(line("No destructive operations recorded."))
    return lines


def audit_problem_lines(problems: list[Problem]) -> list[Line]:
    """The skipped lines and unreadable logs, each naming its file (and line)."""
    return [line(safe_line(problem.message), style="red") for problem in problems]
