"""Claude Code's lines read tolerantly: complete lines only, bad lines skipped with a warning, skimmed stubs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reprise.core.sources.claude.records import SKIM_OVER, SKIPPED, parse_lines

from .builder import ClaudeFile

STORE = Path(__file__).resolve().parents[2] / "fixtures" / "claude-store" / "projects"
REAL = sorted(STORE.glob("*/*.jsonl"))


def test_a_truncated_last_line_is_not_consumed_and_a_later_read_resumes_there():
    data = b'{"type":"user","uuid":"a"}\n{"type":"assistant","uuid":"b"}\n{"type":"user","uu'
    first = parse_lines(data, 1000)
    assert [r["uuid"] for r in first.records] == ["a", "b"]
    assert first.end == 1000 + data.rindex(b"\n") + 1
    assert first.warnings == [] and first.lines == 2
    rest = data[first.end - 1000:] + b'id":"c"}\n'
    second = parse_lines(rest, first.end, first_line=1 + first.lines)
    assert [r["uuid"] for r in second.records] == ["c"]
    assert second.end == first.end + len(rest)


def test_a_chunk_without_a_newline_consumes_nothing():
    parsed = parse_lines(b'{"type":"user"', 42)
    assert parsed.records == [] and parsed.end == 42 and parsed.lines == 0


def test_a_corrupt_middle_line_is_skipped_with_its_line_number():
    data = (b'{"type":"user","uuid":"a"}\n{"type":"assis\n[1,2]\n{"uuid":"x"}\n\xff\xfe\n\n'
            b'{"type":"assistant","uuid":"b"}\n')
    parsed = parse_lines(data, 0, first_line=10)
    assert [r["uuid"] for r in parsed.records] == ["a", "b"]
    assert len(parsed.warnings) == 4
    assert parsed.warnings[0].startswith("line 11: not JSON (")
    assert parsed.warnings[1] == "line 12: not a JSON object"
    assert parsed.warnings[2] == "line 13: a record without a type"
    assert parsed.warnings[3] == "line 14: not JSON (not UTF-8)"
    assert parsed.end == len(data) and parsed.lines == 7


def test_records_of_unknown_types_are_kept():
    data = b'{"type":"brand-new-thing","x":1}\n{"type":"user","uuid":"a"}\n'
    assert [r["type"] for r in parse_lines(data, 0).records] == ["brand-new-thing", "user"]


def test_the_request_log_and_large_attachments_become_stubs_with_their_chain_fields():
    session = ClaudeFile()
    session.turn("hello", "hi")
    data = session.data()
    full = parse_lines(data, 0, skim=False).records
    skimmed = parse_lines(data, 0).records
    assert len(full) == len(skimmed)
    stubs = 0
    for whole, stub in zip(full, skimmed, strict=True):
        if SKIPPED not in stub:
            assert stub == whole
            continue
        stubs += 1
        assert stub["type"] == whole["type"]
        assert stub[SKIPPED] == len(json.dumps(whole, separators=(",", ":"), ensure_ascii=False).encode())
        for key in ("uuid", "parentUuid", "isSidechain", "timestamp"):
            assert stub.get(key) == whole.get(key)
    assert stubs == 3   # the request shape, its blob and the prompt snapshot (the small `api-request` is parsed)


def test_a_large_line_of_another_form_is_parsed_whole():
    record = {"isSidechain": False, "parentUuid": None, "type": "attachment", "uuid": "u1",
              "attachment": {"type": "file", "content": "z" * SKIM_OVER}}
    parsed = parse_lines(json.dumps(record).encode() + b"\n", 0)
    assert parsed.records == [record]


@pytest.mark.skipif(not REAL, reason="the real Claude Code store is not in this checkout")
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:8])
def test_skimming_a_real_file_keeps_every_chain_field(path):
    data = path.read_bytes()
    full = parse_lines(data, 0, skim=False)
    skimmed = parse_lines(data, 0)
    assert full.warnings == skimmed.warnings == [] and full.end == len(data)
    assert len(full.records) == len(skimmed.records) == data.count(b"\n")
    assert sum(SKIPPED in r for r in skimmed.records) >= 3
    for whole, stub in zip(full.records, skimmed.records, strict=True):
        for key in ("type", "uuid", "parentUuid", "isSidechain", "timestamp"):
            assert stub.get(key) == whole.get(key)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([b'{"type":"user","uuid":"a"}', b'{"type":"x"}', b"{bad", b"[]", b"\xff", b"",
                                 b'{"type":"api-request-blob","x":"' + b"y" * SKIM_OVER + b'"}']), max_size=20),
       st.integers(min_value=0, max_value=200), st.booleans())
def test_any_bytes_read_in_two_chunks_give_what_one_read_gives(lines, cut, trailing):
    data = b"\n".join(lines) + (b"\n" if trailing else b"")
    cut = min(cut, len(data))
    whole = parse_lines(data, 0)
    first = parse_lines(data[:cut], 0)
    assert first.end <= cut and (first.end == 0 or data[first.end - 1:first.end] == b"\n")
    second = parse_lines(data[first.end:], first.end, first_line=1 + first.lines)
    assert first.records + second.records == whole.records
    assert first.warnings + second.warnings == whole.warnings
    assert second.end == whole.end and first.lines + second.lines == whole.lines


def test_a_long_line_is_parsed_where_it_lies_in_the_chunk_never_copied_out_of_it():
    """A 16 MB line costs its text and the parsed string (2x), not a copy of its bytes besides (3x):
    with the chunk itself, a 200 MB reply was held four times (issue 24, section 3)."""
    import tracemalloc

    size = 16 << 20
    reply = b'{"type":"assistant","message":{"content":[{"type":"text","text":"' + b"a" * size + b'"}]}}\n'
    chunk = b'{"type":"user","n":1}\n' + reply + b"   \n" + b'{"type":"user","n":2}\n'
    tracemalloc.start()
    try:
        parsed = parse_lines(chunk, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [record["type"] for record in parsed.records] == ["user", "assistant", "user"]
    assert parsed.lines == 4 and parsed.end == len(chunk) and parsed.warnings == []
    assert peak < 2.5 * size, f"parsing a {size:,}-byte line peaked at {peak:,} bytes"
