"""A Gemini CLI session file in the client's own byte form, written beside its others, never over one.

Gemini CLI 0.61.0 (packages/core/src/services/chatRecordingService.ts) writes each record as
`JSON.stringify(record) + "\\n"`: compact, keys in the order given, non-ASCII as it is. A file Reprise
writes is flat: one header `{sessionId, projectHash, startTime, lastUpdated, kind}` (with
`directories` when the session records some), then one line per message, as the client's own
rewrite of a session (`rewriteConversationFile`) lays it out. Its name is the client's,
`session-<YYYY-MM-DDTHH-MM>-<first 8 characters of the id>.jsonl` (the minute it started, UTC), in
the `chats/` folder of the project the session's folder maps to. The client resumes such a file when
it sits there, names the id in its last header and carries a `projectHash` (the SHA-256 of the
folder's path, as the client computes it; the value is not checked on resume).

Reprise writes into the project folder the client made for the session's folder (`tmp/<slug>/chats/`
of a folder in `projects.json`), or, for a continuation in a folder the client never ran in, one it
marks as the client would (`tmp/<slug>/.project_root`, from_transcript.py), which the client adopts:
it never writes `projects.json`, which is the client's own file, rewritten whole under its lock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from ...errors import UsageError
from ...rooted import Root, write_new

KIND = "main"
PREFIX = "session-"
SUFFIX = ".jsonl"
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _string(text: str) -> str:
    """A JSON string as JavaScript writes it: the short escapes, other controls and lone surrogates as
    `\\uXXXX`, everything else (non-ASCII, U+2028) as it is."""
    out = ['"']
    for char in text:
        escaped = _ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif char < " " or "\ud800" <= char <= "\udfff":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _number(value: int | float) -> str:
    """A number as JavaScript writes it (1e+21 rather than 1e21, 1e-7 rather than 1e-07; NaN as null)."""
    if isinstance(value, int):
        return str(value) if abs(value) < 10 ** 21 else _number(float(value))
    if not math.isfinite(value):
        return "null"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    if -7 < int(exponent) < 0:   # JavaScript writes 1e-5 as 0.00001, from 1e-7 on with an exponent
        return format(Decimal(text), "f")
    return f"{mantissa}e{'+' if int(exponent) > 0 else '-'}{abs(int(exponent))}"


def stringify(value: Any) -> str:
    """`JSON.stringify(value)` for a JSON value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_string(str(key))}:{stringify(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(stringify(item) for item in value) + "]"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def line(record: Mapping[str, Any]) -> bytes:
    """One record as the client appends it."""
    return stringify(record).encode("utf-8", "surrogatepass") + b"\n"


def iso(moment: datetime) -> str:
    """`Date.toISOString()`: UTC, milliseconds, `Z`."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def file_name(session_id: str, started: datetime) -> str:
    """`session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`, the minute the session started (UTC)."""
    if len(session_id) < 8 or not session_id[:8].replace("-", "").isalnum():
        raise UsageError(f"{session_id[:60]!r} is not a Gemini CLI session id.")
    return f"{PREFIX}{iso(started)[:16].replace(':', '-')}-{session_id[:8]}{SUFFIX}"


def header(session_id: str, project: str, started: datetime, updated: datetime, *,
           directories: Sequence[str] | None = None) -> dict[str, Any]:
    """The first record of a session file, keys in the client's order."""
    record: dict[str, Any] = {"sessionId": session_id, "projectHash": project, "startTime": iso(started),
                              "lastUpdated": iso(updated), "kind": KIND}
    if directories:
        record["directories"] = list(directories)
    return record


def session_bytes(head: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> bytes:
    """A flat session file: its header, then one line per message."""
    return line(head) + b"".join(line(message) for message in messages)


def write_session(root: Path, chats: Path, name: str, data: bytes) -> Path:
    """Write `data` as the new file `chats/name` under the store `root`, never over a file (FileExistsError)."""
    path = chats / name
    with Root(root, "Gemini CLI store").parent(path) as (fd, leaf):
        write_new(fd, leaf, data)
    return path
