"""Figures for people: relative times, sizes and token counts, the same in the CLI and the TUI."""

from __future__ import annotations


def relative_time(seconds: float) -> str:
    if seconds < 60:
        return "now"
    for unit, size in (("y", 365 * 86400), ("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "now"


def human_size(size: int) -> str:
    if size < 0:
        return "?"
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def tokens(count: int | None) -> str:
    if count is None:
        return "?"
    if count >= 10_000:
        return f"{count / 1000:.1f}k"
    return f"{count:,}"
