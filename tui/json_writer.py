"""One JSON document written as it is encoded, byte for byte what `json.dumps(value, indent=2)` gives.

The standard library's encoder with `indent` runs in Python through a chain of generators, one
yield per token (its C encoder has no indent): a listing of 1,000 sessions took 45 ms of the
command's 0.3 s. This writer walks the value once into batches of strings, writes the scalars of
a list or a table without a call each and the keys of tables of one shape (a listing's rows)
encoded once (the listing in 40% less time), writes a long string in slices (a session's summary
can be hundreds of MB: never copied whole), and writes a non-finite number as null, as JSON has
none.

`encoded_whole` gives the same bytes from orjson, for a document of many small values (a listing of
2,500 sessions: 4 MB in 28 ms here, 10 ms there), or None where orjson's could differ."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring_ascii

import orjson

_BATCH = 8192          # pieces joined into one write
_LONG = 1 << 16        # an encoded string this long is written on its own, in slices
_SLICE = 1 << 20
_STRINGS = {str}
_SHORT = _LONG // 12   # a string this short encodes shorter than _LONG: 12 characters at most for each


def write_json(value: object, write: Callable[[str], object]) -> None:
    """Write `value` as indented JSON (ASCII, two spaces, a newline at the end) through `write`."""
    pending: list[str] = []
    append = pending.append
    shapes: dict[tuple[tuple[str, ...], str], list[str]] = {}

    def flush() -> None:
        write("".join(pending))
        pending.clear()

    def string(text: str) -> None:
        encoded = encode_basestring_ascii(text)
        if len(encoded) > _LONG:
            flush()
            for start in range(0, len(encoded), _SLICE):
                write(encoded[start:start + _SLICE])
        else:
            append(encoded)

    def heads(keys: tuple[str, ...], inner: str) -> list[str]:
        """What comes before each value of a table with these keys, its key after a separator: built
        once for the tables of one shape (a listing's rows) when the keys are strings (1 and True
        are equal keys, written apart)."""
        known = shapes.get((keys, inner))
        if known is None:
            separator = ",\n" + inner
            known = [(separator if index else "") + encode_basestring_ascii(key if type(key) is str else _key(key))
                     + ": " for index, key in enumerate(keys)]
            if set(map(type, keys)) == _STRINGS:
                shapes[(keys, inner)] = known
        return known

    def encode(item: object, margin: str) -> None:
        if isinstance(item, str):
            string(item)
        elif item is None:
            append("null")
        elif item is True:
            append("true")
        elif item is False:
            append("false")
        elif isinstance(item, int):
            append(int.__repr__(item))
        elif isinstance(item, float):
            append(float.__repr__(item) if math.isfinite(item) else "null")
        elif isinstance(item, list | tuple | dict):
            keyed = isinstance(item, dict)
            opening, closing = "{}" if keyed else "[]"
            if not item:
                append(opening + closing)
                return
            inner = margin + "  "
            append(opening + "\n" + inner)
            before: Iterable[str]
            elements: Iterable[object]
            if isinstance(item, dict):
                before, elements = heads(tuple(item), inner), item.values()
            else:
                before, elements = itertools.chain(("",), itertools.repeat(",\n" + inner)), item
            for head, element in zip(before, elements, strict=False):
                append(head)
                kind = type(element)  # the common scalars written here, without a call each
                if kind is str and len(element) <= _SHORT:
                    append(encode_basestring_ascii(element))
                elif element is None:
                    append("null")
                elif kind is bool:
                    append("true" if element else "false")
                elif kind is int:
                    append(int.__repr__(element))
                else:
                    encode(element, inner)
            append("\n" + margin + closing)
        else:
            raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")
        if len(pending) >= _BATCH:
            flush()

    encode(value, "")
    append("\n")
    flush()


def _key(key: object) -> str:
    """A key as `json.dumps` writes it: strings as they are, numbers, booleans and None spelled out."""
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        if not math.isfinite(key):
            raise ValueError(f"Out of range float values are not JSON compliant: {key!r}")
        return float.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


# orjson's own types (dataclasses, datetimes, subclasses of str, int, dict, list) are left to
# `write_json`, which refuses or writes them as json does.
_WHOLE = (orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE | orjson.OPT_PASSTHROUGH_DATACLASS
          | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS)
# A float below 1e-4 in orjson's form: json writes 1e-05 and 1e-07 where orjson writes 0.00001 and
# 1e-7 (every other finite float reads the same, a test checks). Also found in a string, rarely:
# then the document is only written the slower way.
_SMALL_FLOAT = re.compile(rb"e-[1-9][,\n]")
_ASCII = bytes(range(0x7F))   # what json writes as it is; DEL (0x7f) and beyond it escapes


def encoded_whole(value: object) -> bytes | None:
    """`json.dumps(value, indent=2)` and a newline, as ASCII bytes, encoded by orjson; None when
    orjson cannot or could write it otherwise (a lone surrogate, an integer beyond 64 bits, a type
    of its own, a float below 1e-4): `write_json` then writes it. The value is copied whole once
    as bytes, so this is for documents of many small values, not for a long text."""
    try:
        data = orjson.dumps(value, option=_WHOLE)
    except TypeError:   # orjson.JSONEncodeError
        return None
    if b"0.0000" in data or _SMALL_FLOAT.search(data):
        return None
    return _escaped(data)


def _escaped(data: bytes) -> bytes:
    """orjson's UTF-8 with every character beyond ASCII's first 127 written as json writes it
    (`\\u00e9`, a surrogate pair beyond the BMP): each run of such bytes found from the bytes
    that start one (`bytes.find`, not a regex: 4 times faster on a listing)."""
    if data.isascii() and b"\x7f" not in data:
        return data
    starts: list[int] = []
    for lead in set(data.translate(None, _ASCII)):
        if 0x80 <= lead < 0xC0:
            continue   # a continuation byte: inside a character that starts before it
        needle, at = bytes((lead,)), data.find(bytes((lead,)))
        while at >= 0:
            starts.append(at)
            at = data.find(needle, at + 1)
    starts.sort()
    pieces: list[bytes] = []
    done, size = 0, len(data)
    known: dict[bytes, bytes] = {}
    for start in starts:
        if start < done:
            continue   # inside the run just written
        end = start + 1
        while end < size and data[end] >= 0x7F:
            end += 1
        run = data[start:end]
        escaped = known.get(run)
        if escaped is None:
            escaped = known[run] = encode_basestring_ascii(run.decode("utf-8"))[1:-1].encode("ascii")
        pieces += (data[done:start], escaped)
        done = end
    pieces.append(data[done:])
    return b"".join(pieces)
