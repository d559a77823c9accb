"""The shared JSON-lines reader (core/sources/jsonl_lines.py): complete lines only, bad lines skipped
with a warning naming them, a store's `accept` for records without a `type`, a store's `skimmer`
for lines it need not parse, tried only on lines as long as `skim_over`."""

from __future__ import annotations

from reprise.core.sources.jsonl_lines import Record, parse_lines

# A Gemini CLI-like file: a header, `$set` and `$rewindTo` lines carry no `type`.
TYPELESS = (b'{"sessionId":"s1","projectHash":"h"}\n{"$set":{"summary":"x"}}\n{"type":"user","id":"m1"}\n'
            b'{"$rewindTo":"m1"}\n[1]\n{"id":7}\n')


def test_complete_lines_are_read_and_a_cut_last_line_is_left_for_the_next_read():
    data = b'{"type":"a"}\n\n  \n{"type":"b"}\n{"type":"c'
    parsed = parse_lines(data, 500, first_line=3)
    assert [record["type"] for record in parsed.records] == ["a", "b"]
    assert parsed.end == 500 + data.rindex(b"\n") + 1 and parsed.lines == 4 and parsed.warnings == []
    rest = parse_lines(data[parsed.end - 500:] + b'"}\n', parsed.end, first_line=3 + parsed.lines)
    assert [record["type"] for record in rest.records] == ["c"] and rest.warnings == []


def test_by_default_a_line_without_a_string_type_is_skipped_and_named():
    parsed = parse_lines(TYPELESS, 0)
    assert [record.get("id") for record in parsed.records] == ["m1"]
    assert parsed.warnings == ["line 1: a record without a type", "line 2: a record without a type",
                               "line 4: a record without a type", "line 5: not a JSON object",
                               "line 6: a record without a type"]


def test_accept_takes_typeless_records_and_names_what_it_refuses():
    def accept(record: Record) -> str | None:
        return None if "id" not in record or isinstance(record["id"], str) else "an id that is not text"

    parsed = parse_lines(TYPELESS, 0, accept=accept)
    assert parsed.records == [{"sessionId": "s1", "projectHash": "h"}, {"$set": {"summary": "x"}},
                              {"type": "user", "id": "m1"}, {"$rewindTo": "m1"}]
    assert parsed.warnings == ["line 5: not a JSON object", "line 6: an id that is not text"]
    assert parsed.lines == 6 and parsed.end == len(TYPELESS)


def test_a_skimmer_stands_a_stub_for_the_lines_it_knows_from_their_bytes():
    seen: list[bytes] = []

    def skimmer(chunk: bytes, start: int, end: int) -> Record | None:
        seen.append(chunk[start:end])
        return {"type": "stub", "size": end - start} if chunk.startswith(b'{"type":"big"', start, end) else None

    long, short = b'{"type":"big","x":"' + b"y" * 40 + b'"}', b'{"type":"big"}'
    data = long + b'\n{"type":"small"}\n' + short + b"\n"
    parsed = parse_lines(data, 0, skimmer=skimmer)
    assert parsed.records == [{"type": "stub", "size": len(long)}, {"type": "small"},
                              {"type": "stub", "size": len(short)}]
    seen.clear()
    over = parse_lines(data, 0, skimmer=skimmer, skim_over=20)
    assert seen == [long]   # the shorter lines are parsed without asking the skimmer
    assert over.records == [{"type": "stub", "size": len(long)}, {"type": "small"}, {"type": "big"}]


def test_bad_bytes_never_raise_and_each_bad_line_is_named():
    data = b'{"type":"a"}\n{"type":\n\xff\xfe\n{"type":"n","v":' + b"9" * 5000 + b'}\n' + b"[" * 100_000 + b"\n"
    parsed = parse_lines(data, 0)
    assert [record["type"] for record in parsed.records] == ["a"]
    assert [warning.split(" (")[0] for warning in parsed.warnings] == [
        "line 2: not JSON", "line 3: not JSON", "line 4: not JSON", "line 5: not JSON"]
    assert parsed.warnings[1] == "line 3: not JSON (not UTF-8)"
    assert parsed.warnings[2] == "line 4: not JSON (a number too long to read)"


def test_a_lone_surrogate_is_read_as_a_replacement_character():
    parsed = parse_lines(b'{"type":"user","text":"half \\ud83d emoji"}\n', 0)
    assert parsed.records == [{"type": "user", "text": "half \ufffd emoji"}]
