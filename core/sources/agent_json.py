"""JSON an agent wrote, decoded into values every later step can encode.

JavaScript writes a string cut inside a surrogate pair (half an emoji) as an escape such as
`"\\ud83d"`; Python decodes it to a lone surrogate, which no UTF-8 encoder takes, so one such
title or folder would crash every listing, search and display. Every decode of an agent's JSON
goes through `loads`, which replaces each lone surrogate (in keys and values, at any depth) with
U+FFFD. The file's bytes are never changed. The check is a byte search for the escape, so a line
without one costs nothing more than `json.loads`.

A listing reads every line of every session file, and orjson decodes these lines in half the time
of `json` (bench/json_parsers.py): `loads_line` tries it first and gives `json`'s value whenever
the two could differ. orjson refuses what `json` reads differently (a lone surrogate, NaN, a
number too large for a double, invalid UTF-8), and reads an integer beyond 64 bits as a float:
a record with a float where its reader counts integers is decoded by `json` again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import orjson

REPLACEMENT = "\ufffd"

# `\ud800`-`\udfff` in either case; valid pairs match too (they decode whole, so the walk changes nothing).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# Whether orjson's value of a record is json's for every integer the reader uses (orjson reads an
# integer beyond 64 bits as a float; a float where the reader wants an integer sends the line to json).
Exact = Callable[[dict[str, Any]], bool]


def loads(data: bytes | str) -> Any:
    """`json.loads(data)` with every lone surrogate replaced by U+FFFD. Raises what `json.loads`
    raises (ValueError, RecursionError); bytes that are not UTF-8 raise UnicodeDecodeError."""
    if isinstance(data, bytes):
        raw, text = data, data.decode()
    else:
        raw, text = data.encode("utf-8", "surrogatepass"), data
    value = json.loads(text)
    return without_surrogates(value) if may_hold_surrogates(raw) else value


def loads_line(data: bytes, view: memoryview, start: int, end: int, exact: Exact) -> Any:
    """`loads` of the line data[start:end] (read through `view`, a view of `data`, where it lies), by
    orjson where that gives the same value for what the reader uses (`exact`). Raises what `loads` raises."""
    line = view[start:end]
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        value = json.loads(str(line, "utf-8"))   # decoded here: json's own guess takes some bytes for UTF-16
        return without_surrogates(value) if may_hold_surrogates(data, start, end) else value
    if isinstance(value, dict) and not exact(value):
        return json.loads(str(line, "utf-8"))   # orjson's value may hold a float for an integer beyond 64 bits
    return value


def may_hold_surrogates(data: bytes, start: int = 0, end: int | None = None) -> bool:
    """Whether JSON text `data` (or its bytes from `start` to `end`, a line read where it lies in
    its chunk) may decode to a lone surrogate (it holds a surrogate escape)."""
    end = len(data) if end is None else end
    return data.find(b"\\u", start, end) >= 0 and _SURROGATE_ESCAPE.search(data, start, end) is not None


def clean_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD."""
    return _LONE_SURROGATE.sub(REPLACEMENT, text)


def without_surrogates(value: Any) -> Any:
    """A decoded JSON value with every lone surrogate of its strings and keys replaced; walked
    without recursion (a value json could decode may nest deeper than Python recurses)."""
    if isinstance(value, str):
        return clean_text(value)
    if not isinstance(value, (dict, list)):
        return value
    stack: list[dict[str, Any] | list[Any]] = [value]
    while stack:
        container = stack.pop()
        if isinstance(container, list):
            for index, item in enumerate(container):
                if isinstance(item, str):
                    if _LONE_SURROGATE.search(item):
                        container[index] = clean_text(item)
                elif isinstance(item, (dict, list)):
                    stack.append(item)
            continue
        renamed = [key for key in container if _LONE_SURROGATE.search(key)]
        for key in renamed:
            item = container.pop(key)
            container.setdefault(clean_text(key), item)
        for key, item in container.items():
            if isinstance(item, str):
                if _LONE_SURROGATE.search(item):
                    container[key] = clean_text(item)
            elif isinstance(item, (dict, list)):
                stack.append(item)
    return value
