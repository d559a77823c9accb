"""The listing's decode of an assistant line without its content (`assistant_lines.assistant_record`)
gives `json`'s value of every field the listing reads, or nothing (the line is then decoded whole):
on lines as Claude Code writes them, on hostile ones, and on generated and mangled ones (hypothesis)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reprise.core.sources.agent_json import loads
from reprise.core.sources.claude.assistant_lines import assistant_record

_TOP = ("type", "uuid", "parentUuid", "isSidechain", "timestamp", "sessionId", "cwd", "entrypoint", "gitBranch",
        "version", "isApiErrorMessage", "error")


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def line_of(content: Any = None, **changes: Any) -> dict[str, Any]:
    """An assistant record as Claude Code writes it (its key order), with `changes` applied."""
    record: dict[str, Any] = {
        "parentUuid": "11111111-1111-4111-8111-111111111111", "isSidechain": False,
        "message": {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                    "content": content if content is not None else [{"type": "text", "text": "Done."}],
                    "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": 10, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 30,
                              "output_tokens": 40, "server_tool_use": {"web_search_requests": 0}}},
        "apiBlockIndex": 0, "type": "assistant", "uuid": "22222222-2222-4222-8222-222222222222",
        "timestamp": "2026-11-20T09:00:01.000Z", "userType": "external", "entrypoint": "cli", "cwd": "/work/proj",
        "sessionId": "5e551011-0000-4000-8000-000000000001", "version": "2.1.332", "gitBranch": "main"}
    record.update(changes)
    return record


def expected(data: bytes) -> dict[str, Any] | None:
    """What the listing reads of the line by a full decode (`json`, lone surrogates replaced), a missing
    field as None; None when it is not an assistant record a full decode reads."""
    try:
        record = loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("type") != "assistant":
        return None
    found = {key: record.get(key) for key in _TOP}   # a missing field as None: the listing reads them alike
    message = record.get("message")
    found["message"] = {key: message.get(key) for key in ("id", "model", "usage")} if isinstance(message, dict) \
        else message
    return found


def read(data: bytes) -> dict[str, Any] | None:
    chunk = b"junk before\n" + data + b"\nafter"   # read where it lies in a chunk, as parse_lines does
    start = chunk.index(b"\n") + 1
    with memoryview(chunk) as view:
        return assistant_record(chunk, view, start, start + len(data))


def check(data: bytes) -> dict[str, Any] | None:
    """Assert the line's record is the full decode's, or none; the record."""
    ours = read(data)
    if ours is not None:
        assert ours == expected(data), data[:300]
    return ours


def test_a_line_as_claude_code_writes_it_gives_the_full_decodes_fields():
    record = line_of([{"type": "thinking", "thinking": "hm", "signature": "s"},
                      {"type": "tool_use", "id": "toolu_1", "name": "Edit", "input": {"file_path": "/a"}}])
    assert check(dumps(record)) == expected(dumps(record)) is not None


@pytest.mark.parametrize("content", [
    [{"type": "text", "text": 'say "hi" \\ \\" and "usage":{"input_tokens":99} "uuid":"x" },"type":"assistant"'}],
    [{"type": "tool_use", "id": "t", "name": "W", "input": {"usage": {"input_tokens": 5}, "uuid": "nested",
                                                             "type": "assistant", "message": {"id": "m2"}}}],
    [{"type": "text", "text": "emoji 😀 café \u2028 \x7f"}],
    [{"type": "tool_use", "id": "t", "name": "W", "input": {"a": [[[[[[[[[[1]]]]]]]]]]}}],
])
def test_content_that_looks_like_fields_changes_nothing(content):
    # quotes, a usage object in a text, nested objects with the listing's key names: only the record's own count
    data = dumps(line_of(content))
    assert check(data) == expected(data) is not None
    assert read(data)["message"]["usage"]["input_tokens"] == 10    # type: ignore[index]


def test_keys_in_another_order_repeated_or_escaped_read_as_json_reads_them():
    record = line_of()
    shuffled = dict(random.Random(3).sample(list(record.items()), len(record)))
    assert check(dumps(shuffled)) == expected(dumps(record))
    # a repeated key: json keeps the last; a key written with escapes is the key it decodes to
    repeated = dumps(record)[:-1] + b',"uuid":"33333333-3333-4333-8333-333333333333","message":{"id":"m9"}}'
    assert check(repeated)["uuid"].startswith("3333")   # type: ignore[index]
    assert read(repeated)["message"] == {"id": "m9", "model": None, "usage": None}   # type: ignore[index]
    escaped = dumps(record).replace(b'"gitBranch":"main"', b'"git\\u0042ranch":"m\\u00e4in"')
    assert check(escaped)["gitBranch"] == "m\u00e4in"   # type: ignore[index]


@pytest.mark.parametrize("mangle", [
    lambda data: data.replace(b'"Done."', b'"half \\ud83d emoji"'),                 # a lone surrogate: U+FFFD
    lambda data: data.replace(b'"Done."', b'"bad \xff byte"'),                       # not UTF-8
    lambda data: data.replace(b'"Done."', b'"\xed\xa0\x80"'),                        # an encoded surrogate
    lambda data: data.replace(b'"Done."', b'"a\tb"'),                                # a control character
    lambda data: data.replace(b'"Done."', b'"a\\qb"'),                               # a bad escape
    lambda data: data.replace(b'"Done."', b'1' * 4400),                              # json refuses the integer
    lambda data: data.replace(b'"Done."', b'"' + b'1' * 4400 + b'"'),                # digits in a string
    lambda data: data.replace(b'"Done."', b'[' * 1500 + b']' * 1500),               # deeper than json reads
    lambda data: data.replace(b'"Done."', b'[' * 500 + b']' * 500),                 # as deep as json reads
    lambda data: data.replace(b'"Done."', b'NaN'),
    lambda data: data.replace(b'"output_tokens":40', b'"output_tokens":' + b'9' * 30),   # beyond 64 bits
    lambda data: data.replace(b'"output_tokens":40', b'"output_tokens":40.5'),
    lambda data: data.replace(b'"output_tokens":40', b'"output_tokens":1e999'),
    lambda data: data.replace(b'"type":"assistant"', b'"type":["assistant"]'),
    lambda data: data.replace(b'"type":"assistant"', b'"type":"user"'),
    lambda data: data.replace(b'"message":{', b'"message":null,"x":{'),
    lambda data: data.replace(b'"uuid":"2', b'"uuid":2'),
    lambda data: data[:len(data) // 2],                                              # cut mid-way
    lambda data: data[:len(data) // 2] + data,                                       # cut, and joined to the next line
    lambda data: data[:-1] + b",}",
    lambda data: b"\xef\xbb\xbf" + data,
    lambda data: b"  " + data + b" \r",
])
def test_a_hostile_line_gives_the_full_decodes_fields_or_is_decoded_whole(mangle):
    check(mangle(dumps(line_of())))


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
_KEYS = st.sampled_from(["type", "uuid", "usage", "text", "message", "input_tokens", "id", "model", "x"])
_JSON = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=_JSON, changes=st.dictionaries(st.sampled_from(_TOP + ("message", "requestId")), _JSON, max_size=3),
       cut=st.integers(min_value=0, max_value=10_000), junk=st.binary(max_size=4), shuffle=st.randoms())
@example(content=[], changes={}, cut=10_000, junk=b"", shuffle=random.Random(0))
def test_generated_and_mangled_lines_give_the_full_decodes_fields_or_none(content, changes, cut, junk, shuffle):
    record = line_of(content, **changes)
    for data in (dumps(record), dumps(dict(shuffle.sample(list(record.items()), len(record))))):
        check(data)
        check(data[:cut] + junk + data[cut:])   # bytes inserted anywhere
        check(data[:cut])                       # cut anywhere
