"""When Reprise may take a session away: the `--older-than` age syntax and the pure selection
of `reprise prune` (which sessions go, which are protected and why). Whether an agent is still
running is liveness.py's rule; moving the sessions is trash.py's job.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .errors import UsageError
from .paths import SessionRef
from .rows import SessionRow

_AGE = re.compile(r"^\s*(\d{1,9})\s*([mhdw])\s*$")
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """Seconds in an age like `90m`, `12h`, `30d` or `2w`."""
    match = _AGE.match(text) if isinstance(text, str) else None
    if match is None or int(match.group(1)) == 0:
        raise UsageError(f"{str(text)[:40]!r} is not an age.",
                         hint="a positive whole number and a unit: 90m, 12h, 30d or 2w")
    return float(int(match.group(1)) * _UNITS[match.group(2)])


def format_age(seconds: float) -> str:
    """A short age for listings: 45s, 12m, 5h, 3d, 6w."""
    seconds = max(0.0, seconds)
    for unit, size in (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit == "w" else 1):
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


# --- prune selection -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PruneOptions:
    older_than: float | None = None
    empty: bool = False
    keep_last: int = 0
    include_undated: bool = False
    force: bool = False

    def __post_init__(self) -> None:
        if self.older_than is None and not self.empty:
            raise UsageError("Prune needs a criterion.", hint="--older-than AGE, --empty, or both")
        if self.older_than is not None and self.older_than <= 0:
            raise UsageError("--older-than must be a positive age.")
        if self.keep_last < 0:
            raise UsageError("--keep-last cannot be negative.")

    def as_dict(self) -> dict[str, Any]:
        return {"older_than_s": self.older_than, "empty": self.empty, "keep_last": self.keep_last,
                "include_undated": self.include_undated, "force": self.force}


@dataclass(frozen=True, slots=True)
class PruneCandidate:
    ref: SessionRef
    reason: str
    turns: int
    size: int
    last_activity: str | None
    pinned: bool


@dataclass(slots=True)
class PruneSelection:
    """`selected` go to the trash; `protected` matched but are kept; `skipped` could not be judged;
    `keep_instead` are the sessions not selected that their agent deletes soon by age and Reprise
    keeps no copy of (`reprise keep ID` saves one; the reason is when the agent deletes it)."""

    options: PruneOptions
    selected: list[PruneCandidate] = field(default_factory=list)
    protected: list[PruneCandidate] = field(default_factory=list)
    skipped: list[PruneCandidate] = field(default_factory=list)
    keep_instead: list[PruneCandidate] = field(default_factory=list)


def _activity(row: SessionRow) -> tuple[float | None, float]:
    """(newest turn time or None, the time to rank by: the turn time, else the file's mtime)."""
    turn_time = row.activity_ts if row.fields.activity_source == "history" else None
    return turn_time, turn_time if turn_time is not None else max(row.mtime_ns, 0) / 1e9


def select_prune(rows: Iterable[SessionRow], options: PruneOptions, *, now: float,
                 running: Callable[[SessionRef], str | None] | None = None) -> PruneSelection:
    """Which of these listing rows `prune` would move to the trash, and which it protects, with reasons.

    `running(ref)` names the live pending turn of a session whose row has one (None: none is
    live); the service passes liveness.py's rule. Without it, every pending turn is presumed live."""
    rows = [row for row in rows]
    newest: dict[str, set[str]] = {}
    by_key: dict[str, list[SessionRow]] = {}
    for row in rows:
        if row.problem_code is None and row.ref is not None:
            by_key.setdefault(row.workspace_key, []).append(row)
    for key, members in by_key.items():
        members.sort(key=lambda r: (_activity(r)[1], r.file_id), reverse=True)
        newest[key] = {r.file_id for r in members[:options.keep_last]}
    selection = PruneSelection(options)
    for row in sorted(rows, key=lambda r: (r.workspace_key, r.file_id)):
        ref = row.ref
        if ref is None:
            continue
        verdict = _judge(row, options, now, newest.get(row.workspace_key, set()), running)
        if verdict is not None:
            bucket, reason = verdict
            getattr(selection, bucket).append(
                PruneCandidate(ref, reason, row.turns, row.size, row.fields.last_activity, row.pinned))
    chosen = {candidate.ref for candidate in selection.selected}
    for row in sorted(rows, key=lambda r: (r.workspace_key, r.file_id)):
        deletion = row.agent_deletion
        if row.ref is not None and row.ref not in chosen and deletion is not None and deletion.at_risk \
                and not row.kept:
            selection.keep_instead.append(PruneCandidate(row.ref, deletion.phrase, row.turns, row.size,
                                                         row.fields.last_activity, row.pinned))
    return selection


def _judge(row: SessionRow, options: PruneOptions, now: float, newest: set[str],
           running: Callable[[SessionRef], str | None] | None) -> tuple[str, str] | None:
    """("selected" | "protected" | "skipped", why) for a row the criteria reach, else None."""
    if row.problem_code is not None:
        return "skipped", f"unreadable file ({row.problem_code})"
    reason = _match(row, options, now)
    if reason is None:
        return None
    if reason.startswith("skip:"):
        return "skipped", reason[5:]
    if row.pinned:
        return "protected", "pinned"
    if row.fields.pending and not options.force and row.ref is not None:
        why = "a pending turn" if running is None else running(row.ref)
        if why is not None:
            return "protected", f"has {why}"
    if row.file_id in newest:
        return "protected", ("the newest in its workspace" if options.keep_last == 1
                             else f"among the newest {options.keep_last} in its workspace")
    return "selected", reason


def _match(row: SessionRow, options: PruneOptions, now: float) -> str | None:
    """Why the row matches the criteria ("skip:<why>" when it cannot be judged), or None."""
    if options.empty and row.turns == 0:
        return "no turns"
    if options.older_than is None:
        return None
    turn_time, file_time = _activity(row)
    if turn_time is not None:
        age = now - turn_time
        return f"newest turn {format_age(age)} ago" if age > options.older_than else None
    age = now - file_time
    if age <= options.older_than:
        return None
    if options.include_undated:
        return f"no turn time; file modified {format_age(age)} ago"
    return "skip:no turn time (--include-undated judges it by the file's modification time)"
