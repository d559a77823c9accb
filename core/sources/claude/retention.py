"""When Claude Code will delete a session file: a few seconds after each start-up (in the
background: a short `claude -p` may exit first) it removes transcripts whose file was last
modified more than `cleanupPeriodDays` days ago, read from its settings, 30 when unset; a file
modified exactly at the cut-off is kept (its test is mtime < now - days).

What Claude Code 2.1.332 does, read from its code and checked by running it: the setting must be
a whole number of at least 1 (7.0 counts as 7); managed settings (`/etc/claude-code/
managed-settings.json` on Linux) win over the user's `settings.json` under the Claude root; a
project's `.claude/settings.json` can also set it when Claude Code starts in that folder, which
Reprise cannot foresee. While a settings file cannot be parsed, or the value is 0, negative or
not a number, Claude Code skips its sweep altogether (0 no longer stops transcript writes, as it
did before 2.1.89); an empty `settings.json` changed in the last 30 days pauses it too. Reprise
then still assumes the default, so that a warning comes too early rather than too late; the
policy says the sweep is `paused` and the Problem says why.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

from ...problems import Problem
from ...session_files import ReadProblem, read_head
from ...times import whole_span as _span
from .. import agent_json
from ..base import AgentDeletion

DEFAULT_DAYS = 30
DAY_S = 86400.0
SETTINGS_NAME = "settings.json"
MANAGED_SETTINGS = Path("/etc/claude-code/managed-settings.json")
MAX_SETTINGS_BYTES = 4 * 1024 * 1024
# A JavaScript Date holds at most 8.64e15 ms either side of 1970: a longer period makes Claude
# Code's cut-off an invalid date, and then it deletes nothing.
NEVER_DAYS = 100_000_000
AT_RISK_DAYS = 7.0   # a file deleted within a week is at risk (what the doctor lists)


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """How many days Claude Code keeps a session file after its last change, and where that came from."""

    days: int = DEFAULT_DAYS
    origin: str = "default"  # the settings file that set it, or "default"
    paused: bool = False  # a settings problem makes Claude Code skip its sweep until it is fixed

    @classmethod
    def read(cls, root: Path, *, managed: Path | None = MANAGED_SETTINGS) -> tuple[RetentionPolicy, Problem | None]:
        """The policy of the Claude root `root` (its `settings.json`; managed settings win when they
        set a valid value), and the first problem met on the way: a file that cannot be read or
        parsed, or a value that is not a whole number of days of at least 1 (the default is then
        used). `managed=None` reads no managed settings."""
        problem: Problem | None = None
        for path in ([managed] if managed is not None else []) + [Path(root) / SETTINGS_NAME]:
            days, found = _days_in(path)
            if found is not None and problem is None:
                problem = found
            if days is not None:
                return cls(days, str(path), problem is not None), problem
        return cls(paused=problem is not None), problem

    @property
    def never(self) -> bool:
        return self.days >= NEVER_DAYS

    def deletes_at(self, mtime: float) -> float | None:
        """The moment after which Claude Code's next start deletes a file last modified at `mtime`
        (None: never)."""
        return None if self.never else mtime + self.days * DAY_S

    def days_left(self, mtime: float, now: float) -> float:
        """Days until that moment (negative once it has passed; infinite when it never comes)."""
        moment = self.deletes_at(mtime)
        return math.inf if moment is None else (moment - now) / DAY_S

    def due(self, mtime: float, now: float) -> bool:
        """Whether Claude Code deletes the file the next time it starts."""
        moment = self.deletes_at(mtime)
        return moment is not None and now > moment

    def at_risk(self, mtime: float, now: float, *, within_days: float = AT_RISK_DAYS) -> bool:
        """Whether the file is due, or will be within `within_days` (what the doctor lists)."""
        return self.days_left(mtime, now) <= within_days

    def phrase(self, mtime: float, now: float) -> str | None:
        """A short line for a row: "deleted by Claude Code in 4 days", "due for deletion at Claude
        Code's next start"; None when Claude Code never deletes it."""
        moment = self.deletes_at(mtime)
        return None if moment is None else self.phrase_at(moment, now)

    @staticmethod
    def phrase_at(moment: float, now: float) -> str:
        """That line for a file deleted after `moment`."""
        left = moment - now
        if left < 0:
            return "due for deletion at Claude Code's next start"
        if left >= DAY_S:   # a listing says this of every row: the phrase of each count of days once
            return _in_days(int(left // DAY_S))
        return f"deleted by Claude Code in {_span(left)}"

    def deletion(self, mtime: float, now: float) -> AgentDeletion | None:
        """When and how a row says Claude Code deletes a file last modified at `mtime` (None: never)."""
        if self.never:
            return None
        moment = mtime + self.days * DAY_S
        return AgentDeletion(moment, self.phrase_at(moment, now), (moment - now) / DAY_S <= AT_RISK_DAYS)


@functools.lru_cache(maxsize=1024)
def _in_days(days: int) -> str:
    return f"deleted by Claude Code in {_span(days * DAY_S)}"



def _days_in(path: Path) -> tuple[int | None, Problem | None]:
    """(the valid `cleanupPeriodDays` of one settings file or None, the problem with the file or None)."""
    try:
        data, size = read_head(path, MAX_SETTINGS_BYTES)
        if size > MAX_SETTINGS_BYTES:
            raise ReadProblem("too_large", f"over the {MAX_SETTINGS_BYTES:,}-byte limit")
    except FileNotFoundError:
        return None, None
    except (OSError, ReadProblem) as exc:
        reason = exc.message if isinstance(exc, ReadProblem) else exc.strerror or str(exc)
        return None, Problem(str(path), "unreadable", f"{path}: {reason}; Claude Code skips its "
                             f"cleanup while it cannot read it; Reprise assumes {DEFAULT_DAYS} days.",
                             severity="warning")
    if not data.strip():
        return None, None
    try:
        settings = agent_json.loads(data)
    except (ValueError, RecursionError):   # UnicodeDecodeError is a ValueError
        return None, Problem(str(path), "bad_settings", f"{path} is not valid JSON; Claude Code skips its cleanup "
                             f"while it cannot parse it; Reprise assumes {DEFAULT_DAYS} days.", severity="warning")
    if not isinstance(settings, dict):
        return None, Problem(str(path), "bad_settings", f"{path} holds a JSON {type(settings).__name__}, not an "
                             "object; Claude Code skips its cleanup while it cannot use it; Reprise assumes "
                             f"{DEFAULT_DAYS} days.", severity="warning")
    if "cleanupPeriodDays" not in settings:
        return None, None
    value = settings["cleanupPeriodDays"]
    days = _whole(value)
    if days is None or days < 1:
        shown = json.dumps(value)[:40]
        return None, Problem(str(path), "bad_setting", f"{path}: cleanupPeriodDays is {shown}, not a whole number of "
                             "days of at least 1; Claude Code rejects it and skips its cleanup while it is set; "
                             f"Reprise assumes {DEFAULT_DAYS} days.", field="cleanupPeriodDays", severity="warning")
    return days, None


def _whole(value: object) -> int | None:
    """A JSON number that is a whole number (30 or 30.0), else None; true and "30" are not numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None
