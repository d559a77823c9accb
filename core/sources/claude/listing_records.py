"""A Claude Code line decoded for the listing: only the fields the listing fold reads.

A cold listing decodes every line of every file, and most of a line's bytes are what no listing
field needs (an assistant message's text, thinking and tool inputs, a tool's output). msgspec,
decoding into the structs below, skips every other field in C without building it, so a line
costs a quarter of orjson's whole decode. The record it gives holds the fields the fold, the
chain and the record kinds read (`fields`, `chain`, `messages`), with the same values a whole
decode gives them, and None for each of them the line lacks (an absent field and a null one read
the same there). The fold reads the decoded `Line` as it is (`fields.ListingFold` and
`chain.ChainTable` take it beside the dicts of lines decoded whole), never copied into a dict; only a
`user` line whose kind needs its text (a prompt, a command) is (`as_record`).

A line whose form the structs do not take (a message that is not an object, a usage that is not
one, content blocks that are not objects, a type that is not a string), or that msgspec refuses
where json reads it (NaN, a number beyond a double, a lone surrogate, deep nesting, a malformed
line), gives None: the caller decodes it whole, as before. Like the regex skims (`records`), the
bytes of a skipped field are not checked to be UTF-8.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..jsonl_lines import Record

_WHOLE = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


class Usage(msgspec.Struct):
    input_tokens: Any = None
    output_tokens: Any = None
    cache_read_input_tokens: Any = None
    cache_creation_input_tokens: Any = None


class Block(msgspec.Struct):
    type: Any = None
    text: Any = None


class Message(msgspec.Struct):
    id: Any = None
    model: Any = None
    usage: Usage | None = None
    # Decoded for a user line only (`_CONTENT`: `listing_record` puts its value here); empty when absent.
    content: msgspec.Raw = msgspec.Raw()


class Compaction(msgspec.Struct):
    postTokens: Any = None


class Line(msgspec.Struct):
    """One line as the listing reads it (only the fields it reads; None where the line has none)."""

    type: Any = None
    uuid: Any = None
    parentUuid: Any = None
    logicalParentUuid: Any = None
    isSidechain: Any = None
    isMeta: Any = None
    isCompactSummary: Any = None
    isApiErrorMessage: Any = None
    error: Any = None
    subtype: Any = None
    message: Message | None = None
    compactMetadata: Compaction | None = None
    sessionId: Any = None
    cwd: Any = None
    entrypoint: Any = None
    timestamp: Any = None
    gitBranch: Any = None
    version: Any = None
    customTitle: Any = None
    aiTitle: Any = None
    summary: Any = None
    totalCostUSD: Any = None
    leafUuid: Any = None


_LINE = msgspec.json.Decoder(Line)
_CONTENT = msgspec.json.Decoder(str | list[Block] | None)
_as_dict = msgspec.structs.asdict


def listing_record(line: bytes | memoryview) -> Line | None:
    """What the listing reads of one line, or None to decode the line whole. A `user` line's content
    is decoded in place of its raw bytes (`str | list[Block] | None`), for the record kinds."""
    try:
        decoded = _LINE.decode(line)
    except _WHOLE:
        return None
    if not isinstance(decoded.type, str):
        return None   # the whole decode says why the line is skipped
    message = decoded.message
    if decoded.type == "user" and message is not None:
        content: Any = None
        if message.content:
            try:
                content = _CONTENT.decode(message.content)
            except _WHOLE:
                return None
        message.content = content
    return decoded


def as_record(line: Line) -> Record:
    """A `user` line as the record a whole decode gives, for the fields the listing reads."""
    record = _as_dict(line)
    message = line.message
    if message is not None:
        content: Any = message.content
        if isinstance(content, list):
            content = [_as_dict(block) for block in content]
        record["message"] = {"id": message.id, "model": message.model, "content": content,
                             "usage": _as_dict(message.usage) if message.usage is not None else None}
    if line.compactMetadata is not None:
        record["compactMetadata"] = _as_dict(line.compactMetadata)
    return record
