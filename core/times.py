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
