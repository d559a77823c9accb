"""Figures for people: relative times, sizes, token counts and money, the same in the CLI and the TUI."""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from reprise.core.paths import UNKNOWN_FOLDER_KEY

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def relative_time(seconds: float) -> str:
    if seconds < 60:
        return "now"
    for unit, size in (("y", 365 * 86400), ("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "now"


def local_now(clock_seconds: float | None = None) -> datetime:
    """Now (or the clock's seconds) in the local time zone: what `human_time` counts from."""
    if clock_seconds is None:
        return datetime.now().astimezone()
    return datetime.fromtimestamp(clock_seconds).astimezone()


def human_time(at: datetime | None, now: datetime) -> str:
    """A moment as a person says it, counted from `now` and shown in now's time zone: "just now",
    "5 min ago", "2h ago" (the same day), "yesterday 14:05", "Tue 09:30" (within the week),
    "3 Mar 14:05" (this year), "3 Mar 2025" (before). A moment ahead of now (a skewed clock)
    is shown by date and time."""
    if at is None:
        return "?"
    at = at.astimezone(now.tzinfo)
    seconds = (now - at).total_seconds()
    clock = f"{at.hour:02}:{at.minute:02}"
    if 0 <= seconds < 60:
        return "just now"
    if 0 <= seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    days = (now.date() - at.date()).days
    if 0 <= seconds and days == 0:
        return f"{int(seconds // 3600)}h ago"
    if days == 1:
        return f"yesterday {clock}"
    if 1 < days < 7:
        return f"{WEEKDAYS[at.weekday()]} {clock}"
    if at.year == now.year:
        return f"{at.day} {MONTHS[at.month - 1]} {clock}"
    return f"{at.day} {MONTHS[at.month - 1]} {at.year}"


def duration(delta: timedelta | float) -> str:
    """A length of time: "8 s", "3 min 5 s", "2h 10 min"."""
    seconds = int(delta.total_seconds() if isinstance(delta, timedelta) else delta)
    if seconds < 60:
        return f"{max(seconds, 0)} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s" if seconds % 60 else f"{seconds // 60} min"
    return f"{seconds // 3600}h {seconds % 3600 // 60} min"


def tilde_folder(path: str) -> str:
    """A folder as people write it: the home folder as `~`."""
    home = os.path.expanduser("~")
    if home not in ("", "/") and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home):]
    return path


def session_folder(path: str | None, key: str) -> str:
    """A session's folder for people: its path with `~`, "(folder unknown)" for a session whose
    agent recorded no usable folder, else the workspace key (a workspace with no recorded folder)."""
    if path:
        return tilde_folder(path)
    return "(folder unknown)" if key == UNKNOWN_FOLDER_KEY else key


def human_size(size: int) -> str:
    if size < 0:
        return "?"
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def counted(count: int, noun: str) -> str:
    """A count and its noun, singular for one: "1 turn", "20 turns", "1,024 sessions"."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def tokens(count: int | None) -> str:
    """A token count on the meter line: "9,876", "20.7k", "1.2M" (never "1000.0k")."""
    if count is None:
        return "?"
    if count >= 999_950:
        return f"{count / 1_000_000:.1f}M".replace(".0M", "M")
    if count >= 10_000:
        return f"{count / 1000:.1f}k"
    return f"{count:,}"


def short_tokens(count: int) -> str:
    """A token count at a glance: "850", "1.2k", "41k", "1.3M"."""
    if count < 1000:
        return str(max(count, 0))
    if count < 10_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    if count < 999_500:
        return f"{round(count / 1000)}k"
    return f"{count / 1_000_000:.1f}M".replace(".0M", "M")


def money(amount: float) -> str:
    """US dollars as people write them: "$0.10", "$12.35"; under a cent "<$0.01" (never "$0.00"
    for a sum that is not nothing)."""
    if amount <= 0:
        return "$0"
    if amount < 0.005:
        return "<$0.01"
    return f"${amount:,.2f}"
