"""Timestamps as agents write them (ISO-8601, UTC)."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now_iso() -> str:
    """A timestamp the way Fractal writes one."""
    return datetime.now(UTC).isoformat()


def parse_time(value: str | None) -> datetime | None:
    """Parse an ISO-8601 time from a history turn; None when absent or unreadable."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def whole_span(seconds: float) -> str:
    """A span in whole units, rounded down (a deletion is never later than a phrase says): 4 days, 1 day,
    5 hours, 3 minutes, under a minute."""
    for unit, size in (("day", 86400.0), ("hour", 3600.0), ("minute", 60.0)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}" + ("" if count == 1 else "s")
    return "under a minute"
