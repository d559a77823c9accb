"""Records read tolerantly from a chunk of an append-only JSON-lines file: the line reader of every
agent store kept as such files (Claude Code's sessions, Codex's rollouts).

`parse_lines` reads the complete lines of a chunk (a truncated last line, a file being written, is
left for the next read to resume at `end`), skips a line that is not a JSON object, or that the
store's `accept` refuses (by default one without a string `type`), and says so in a warning naming
the line; it keeps records of types it does not know (the readers ignore them). A lone surrogate
(`"\\ud83d"`, half an emoji) is read as U+FFFD (`agent_json`). A store's `skimmer` may stand a stub
for a line its readers need nothing from, told from the line's bytes without parsing them, and its
`decode` may read a line for only what its reader needs (`claude.listing_records`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .agent_json import Exact, loads_line, may_hold_surrogates, without_surrogates

Record = dict[str, Any]
_SPACE = b" \t\n\r\x0b\x0c"   # what bytes.isspace takes: a line starting with none of these is no blank line

# A stub for chunk[start:end] (one line, without its newline), or None to parse the line.
Skimmer = Callable[[bytes, int, int], "Record | None"]
# What a reader takes of one line (chunk[start:end] as a view), or None to parse the line whole.
Decode = Callable[[memoryview], Any]
# None when a parsed JSON object is a record; else why its line is skipped ("a record without a type").
Acceptor = Callable[[Record], "str | None"]


@dataclass(slots=True)
class Parsed:
    """What one chunk held: its records in file order, the absolute offset just past its last
    complete line, what was skipped (`warnings`), and how many complete lines it consumed."""

    records: list[Record] = field(default_factory=list)
    end: int = 0
    warnings: list[str] = field(default_factory=list)
    lines: int = 0


def parse_lines(chunk: bytes, base_offset: int, *, first_line: int = 1, exact: Exact | None = None,
                skimmer: Skimmer | None = None, skim_over: int = 0, decode: Decode | None = None,
                accept: Acceptor | None = None) -> Parsed:
    """The records of the complete lines of `chunk`, which starts at `base_offset` in the file and
    whose first line is line `first_line`. Never raises for the bytes.

    `exact` (a listing's read): decode with orjson where it tells that orjson's record is json's for
    what the reader uses (`agent_json.loads_line`). `skimmer`: the store's stubs, tried first on
    every line at least `skim_over` bytes long. `decode`: the reader's own decode, tried next on every
    line; what it gives is a record as it is (a store's listing fold reads its own type), its None a
    line to parse whole. `accept`: which JSON objects are records (default: those with a string `type`)."""
    parsed = Parsed(end=base_offset)
    complete = chunk.rfind(b"\n") + 1
    if complete == 0:
        return parsed
    parsed.end = base_offset + complete
    records = parsed.records
    # Each line is read where it lies in the chunk (never copied out of it: a 200 MB line would be
    # held as the chunk, its copy, its text and the parsed string at once).
    number, start = first_line - 1, 0
    with memoryview(chunk) as view:
        while start < complete:
            end = chunk.find(b"\n", start)
            number, begin, start = number + 1, start, end + 1
            if end == begin or chunk[begin] in _SPACE and chunk[begin:end].isspace():
                continue
            if skimmer is not None and end - begin >= skim_over and (stub := skimmer(chunk, begin, end)) is not None:
                records.append(stub)
                continue
            if decode is not None and (decoded := decode(view[begin:end])) is not None:
                records.append(decoded)
                continue
            try:
                if exact is not None:
                    record = loads_line(chunk, view, begin, end, exact)
                else:   # decoded here: json's own guess takes some bytes for UTF-16
                    record = json.loads(str(view[begin:end], "utf-8"))
                    if may_hold_surrogates(chunk, begin, end):   # a byte search of the parsed lines only
                        record = without_surrogates(record)   # half an emoji as U+FFFD, never unencodable text
            except (ValueError, RecursionError) as exc:   # JSONDecodeError and UnicodeDecodeError are ValueErrors
                parsed.warnings.append(f"line {number}: not JSON ({_reason(exc)})")
                continue
            if not isinstance(record, dict):
                parsed.warnings.append(f"line {number}: not a JSON object")
            elif accept is None:
                if isinstance(record.get("type"), str):
                    records.append(record)
                else:
                    parsed.warnings.append(f"line {number}: a record without a type")
            elif (refused := accept(record)) is None:
                records.append(record)
            else:
                parsed.warnings.append(f"line {number}: {refused}")
    parsed.lines = number - first_line + 1
    return parsed


def _reason(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if "digits" in str(exc):
        return "a number too long to read"   # Python's cap on the digits of an integer
    return str(exc)
