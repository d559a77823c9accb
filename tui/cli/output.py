"""What every command prints through: one JSON document, report lines, long text in slices, a note
or an error on stderr."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from reprise.core.errors import AmbiguousError, RepriseError

from ..json_writer import encoded_whole, write_json
from ..lazy import lazy_module
from ..reports import Line
from ..text import safe_line, safe_text

if TYPE_CHECKING:
    from reprise.core import contract as contract
else:
    contract = lazy_module("reprise.core.contract")


def emit(data: dict[str, Any], *, whole: bool = False) -> None:
    """One JSON document, written as it is encoded (`json_writer`); a non-finite number becomes null.
    `whole`: a document of many small values (a listing), encoded at once by orjson where it gives
    the same bytes (`encoded_whole`)."""
    encoded = encoded_whole(data) if whole else None
    if encoded is None:
        write_json(data, sys.stdout.write)
        return
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:   # a text stream put in stdout's place (a test's, a library caller's)
        sys.stdout.write(encoded.decode("ascii"))
        return
    sys.stdout.flush()   # what was printed before stays before
    buffer.write(encoded)


def print_lines(lines: list[Line]) -> None:
    for each in lines:
        print(each.plain)


def print_safe(text: str, chunk: int = 1 << 20) -> None:
    """`print(safe_text(text))` a slice at a time (cut after a newline where one is near), so a
    summary of hundreds of MB is never copied whole; safe_text maps characters one by one."""
    start = 0
    while start < len(text):
        end = len(text) if len(text) - start <= chunk else text.rfind("\n", start, start + chunk) + 1
        end = end if end > start else start + chunk
        sys.stdout.write(safe_text(text[start:end]))
        start = end
    sys.stdout.write("\n")


def note(text: object) -> None:
    """One line for people on stderr, `reprise: ...`."""
    print(f"reprise: {safe_line(text)}", file=sys.stderr)


def print_error(exc: RepriseError, as_json: bool) -> None:
    if as_json:
        print(json.dumps(contract.dump(contract.error(exc))))
        return
    note(str(exc))
    if isinstance(exc, AmbiguousError):
        for candidate in exc.candidates:
            print(f"  {safe_line(candidate)}", file=sys.stderr)


def is_terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal; False for one replaced by something without a descriptor, or closed."""
    try:
        return stream.isatty()
    except (AttributeError, OSError, ValueError):
        return False
