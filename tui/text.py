"""Session text made safe for a terminal: control characters shown, never interpreted.

Session content is arbitrary (ANSI escapes, NUL, lone surrogates); everything the CLI or the
TUI prints from a session goes through these functions first.
"""

from __future__ import annotations

import unicodedata

_KEEP = {"\n", "\t"}


def _visible(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return f"\\u{code:04x}"


def safe_text(text: str) -> str:
    """Keep newlines and tabs; show every other control character as a visible symbol."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch in _KEEP or ch.isprintable() or unicodedata.category(ch) in ("Zs", "Mn", "Mc", "Me", "So", "Sk")
        else _visible(ch)
        for ch in text
    )


def one_line(text: str, width: int) -> str:
    """Collapse whitespace to single spaces, make it safe, and cut to width with an ellipsis."""
    flat = " ".join(safe_text(text).split())
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"
