"""An assistant line of a Claude Code session, decoded for the listing without its content.

Assistant messages are a third of a session's lines and most of the listing's decoding: their
content (text, thinking, tool calls) and some twenty other fields are what the transcript and the
meter read, while the listing reads a few: the chain links, the message's id, model and usage, the
time, the folder, branch and version (`fields.ListingFold`, `chain.ChainTable`, `messages.kind_of`).
`assistant_record` decodes a line whose head names an assistant message with msgspec into a Struct of
those fields only: msgspec parses and checks the whole line and builds nothing for the rest (about
half the CPU of orjson's full decode of these lines), and gives a record of those fields.

The record is `json`'s for every field the listing reads, or there is none (None: the caller decodes
the line whole, as it does every other line). msgspec refuses what `json` refuses except three things,
checked here: bytes that are not UTF-8 inside a string (the line is decoded as `json`'s reader
decodes it), an integer of more than 4,300 digits (`json` refuses it), nesting deeper than `json`
decodes. It refuses some lines `json` reads (a lone surrogate escape, NaN, a message that is not an
object): those are decoded whole. A repeated key keeps its last value, as in `json`; a key written
with escapes is the key it decodes to; a field of another type than the listing expects is kept as it
is; a field the line lacks is None (the listing reads a missing field and a null alike).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec.structs import asdict

_ROLE = b'"role":"assistant"'
_ROLE_WITHIN = 512          # Claude Code writes it in the message's head, after the chain fields
_MAX_INT_DIGITS = 4300       # what `json` reads of an integer (Python's int_max_str_digits)
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x78 for byte in range(256))
_LONG_DIGITS = b"0" * (_MAX_INT_DIGITS + 1)
_DEEP = 900                  # brackets fewer than this nest shallower than `json` decodes (recursion limit 1,000)


# A field the line lacks is None, as is one it writes as null: the listing reads them alike (a string,
# a dict, True or a truthy value where it reads one; `record.get(key)` otherwise).
class _Message(msgspec.Struct, gc=False):
    id: Any = None
    model: Any = None
    usage: Any = None


class _Line(msgspec.Struct, gc=False):
    type: Any = None
    uuid: Any = None
    parentUuid: Any = None   # the record's own keys
    isSidechain: Any = None
    message: _Message | None = None
    timestamp: Any = None
    sessionId: Any = None
    cwd: Any = None
    entrypoint: Any = None
    gitBranch: Any = None
    version: Any = None
    isApiErrorMessage: Any = None
    error: Any = None


_DECODER = msgspec.json.Decoder(_Line)


def assistant_record(chunk: bytes, view: memoryview, start: int, end: int) -> dict[str, Any] | None:
    """The listing's record of the line chunk[start:end] (read through `view`, a view of `chunk`)
    when it is an assistant message, without its content; None to decode the line whole."""
    if chunk.find(_ROLE, start, min(end, start + _ROLE_WITHIN)) < 0:
        return None
    try:
        line = _DECODER.decode(view[start:end])
    except (msgspec.DecodeError, RecursionError):   # a ValidationError is a DecodeError
        return None
    if line.type != "assistant" or not _json_reads(chunk, start, end):
        return None
    record = asdict(line)
    if line.message is not None:
        record["message"] = asdict(line.message)
    return record


def _json_reads(chunk: bytes, start: int, end: int) -> bool:
    """Whether `json` reads the line msgspec took: UTF-8 throughout, no integer too long, no nesting too deep."""
    line = chunk[start:end]
    if not line.isascii():
        try:
            line.decode()
        except UnicodeDecodeError:
            return False
    if end - start > _MAX_INT_DIGITS and _LONG_DIGITS in line.translate(_DIGITS_AS_ZERO):
        return False   # digits in a string too: such a line is only decoded whole (a byte search beats a regex)
    return end - start <= 2 * _DEEP or line.count(b"[") + line.count(b"{") < _DEEP
