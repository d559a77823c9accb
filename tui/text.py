"""Session text made safe for a terminal: control characters shown, never interpreted.

Session content is arbitrary (ANSI escapes, NUL, lone surrogates, bidi overrides, zero-width
characters); everything the CLI or the TUI prints for people goes through these functions
first. JSON output never does: it keeps every character exact.

Two kinds of text: a body (a message, a reply, the summary) keeps its newlines and tabs; a
line (an id, a title, a path, an error sentence naming them) shows them as `\\n` and `\\t`,
so that nothing in a name can start a new line, hide a character or reorder the ones after it.
"""

from __future__ import annotations

import unicodedata

_KEEP = frozenset("\n\t")
_KEEP_NOTHING: frozenset[str] = frozenset()
_SHOWN_IN_A_LINE = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
# Not printable to Python, yet harmless and meant to be seen: spaces other than U+0020 and marks.
_PRINTABLE_CATEGORIES = ("Zs", "Mn", "Mc", "Me", "So", "Sk")


def _visible(ch: str) -> str:
    """A visible stand-in for a character a terminal would interpret or not show: C0 controls
    as control pictures, lone surrogates as U+FFFD, everything else (C1 controls, bidi
    controls, zero-width characters, line separators) as a `\\uXXXX` escape."""
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _shown(ch: str, keep: frozenset[str]) -> str:
    if ch in keep:
        return ch
    if ch.isprintable() or unicodedata.category(ch) in _PRINTABLE_CATEGORIES:
        return ch
    return _visible(ch)


def safe_text(text: str) -> str:
    """A body: keep newlines and tabs; show every other control or invisible character."""
    if text.isprintable():
        return text
    return "".join(_shown(ch, _KEEP) for ch in text)


def safe_line(text: object) -> str:
    """One line for people (an id, a title, a path, a message naming them): every control or
    invisible character shown, newlines and tabs as `\\n` and `\\t`."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(_SHOWN_IN_A_LINE.get(ch) or _shown(ch, _KEEP_NOTHING) for ch in text)


def clipped(text: object, width: int) -> str:
    """`safe_line`, cut to width with an ellipsis."""
    # Every character shows as one or more, so the first width + 1 decide the result (a huge
    # text is never escaped whole).
    line = safe_line(str(text)[: width + 1])
    return line if len(line) <= width else line[: max(width - 1, 0)] + "…"


def one_line(text: str, width: int) -> str:
    """A body on one line: collapse whitespace to single spaces, make it safe, cut to width."""
    flat = " ".join(safe_text(text).split())
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def short_line(text: str, width: int) -> str:
    """`one_line(text, width)` of only as much of the text as fills the width: the line keeps the
    text's order, so once a start of the text is longer than the width, the rest cannot change it."""
    size = 4 * width + 64
    while size < len(text):
        if len(one_line(text[:size], size)) > width:
            return one_line(text[:size], width)
        size *= 4
    return one_line(text, width)
