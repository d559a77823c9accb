"""A Codex rollout line decoded for the listing: only the fields the listing fold reads.

A cold listing decodes every line the stubs (`records.skimmed`) leave, and most of those lines'
bytes are what no listing field needs (a `session_meta`'s instructions, a `turn_context`'s
permissions, a `task_complete`'s last reply, a `token_count`'s rate limits). msgspec, decoding into
the structs below, skips every other field in C without building it. The `Line` it gives holds the
record's timestamp and type and, in one `Payload` for every kind, the payload fields the fold reads
(`fields.ListingFold`), each as a whole decode gives it (any JSON value: the fold checks their types
as it checks a dict's), None where the payload lacks it (an absent field and a null one read the same
there), and an empty `Payload` when the line has none. A `session_meta` without its own `timestamp`
holds the record's (as `payload.get("timestamp", stamp)` reads a dict). The fold reads the `Line` as
it is, beside the dicts of lines decoded whole, never copied into a dict.

A line whose form the structs do not take (a payload that is not an object, a type that is not a
string), or that msgspec refuses where json reads it (NaN, a number beyond a double, a lone
surrogate, deep nesting, a malformed line), gives None: the caller decodes it whole, as before.
msgspec reads an integer beyond 64 bits as json does (an int), so no line needs `orjson_exact`'s
check. Like the regex stubs (`records`), the bytes of a skipped field are not checked to be UTF-8.
"""

from __future__ import annotations

from typing import Any

import msgspec

_WHOLE = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


class Payload(msgspec.Struct):
    """The payload fields the fold reads, of every kind it reads (None where the payload has none)."""

    type: Any = None
    # session_meta
    id: Any = None
    cwd: Any = None
    source: Any = None
    forked_from_id: Any = None
    forked_from_ordinal_exclusive: Any = None
    timestamp: Any = msgspec.UNSET   # absent: the record's own (`listing_record`)
    git: Any = None
    # turn_context
    model: Any = None
    # event_msg
    model_context_window: Any = None
    message: Any = None
    item: Any = None
    error: Any = None
    info: Any = None


class Line(msgspec.Struct):
    """One line as the listing reads it."""

    timestamp: Any = None
    type: Any = None
    payload: Payload | None = None


_LINE = msgspec.json.Decoder(Line)
_UNSET = msgspec.UNSET


def listing_record(line: bytes | memoryview) -> Line | None:
    """What the listing reads of one line (its `payload` never None), or None to decode the line whole."""
    try:
        decoded = _LINE.decode(line)
    except _WHOLE:
        return None
    if not isinstance(decoded.type, str):
        return None   # the whole decode says why the line is skipped
    payload = decoded.payload
    if payload is None:
        payload = decoded.payload = Payload()
    if payload.timestamp is _UNSET:
        payload.timestamp = decoded.timestamp
    return decoded
