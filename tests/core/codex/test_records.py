"""A rollout's lines as records: complete lines only, bad lines skipped and named, unknown types kept."""

from __future__ import annotations

from reprise.core.sources.codex.records import kind_of, parse_rollout, text_of
from tests.core.codex.builder import CodexRollout


def test_complete_lines_are_records_and_a_truncated_last_line_is_left_for_the_next_read():
    rollout = CodexRollout()
    rollout.turn("first", "one")
    data = rollout.data()
    cut = data + b'{"timestamp":"2026-11-20T09:01:00.000Z","type":"event_msg","payl'
    parsed = parse_rollout(cut, 100)
    assert parsed.end == 100 + len(data)
    assert len(parsed.records) == len(rollout.lines)
    assert parsed.warnings == []
    assert kind_of(parsed.records[0]) == ("session_meta", "")


def test_bad_lines_are_skipped_with_their_line_number_and_unknown_types_are_kept():
    rollout = CodexRollout()
    rollout.raw(b"not json at all\n")
    rollout.raw(b'["a list"]\n')
    rollout.raw(b'{"timestamp":"2026-11-20T09:00:05.000Z","type":"world_state_v9","payload":{"x":1}}\n')
    parsed = parse_rollout(rollout.data(), first_line=1)
    assert [warning.split(":")[0] for warning in parsed.warnings] == ["line 2", "line 3"]
    assert kind_of(parsed.records[-1]) == ("world_state_v9", "")


def test_kind_names_the_payload_type_of_response_items_and_events():
    rollout = CodexRollout()
    rollout.prompt("hello")
    records = parse_rollout(rollout.data()).records
    assert [kind_of(record) for record in records[1:]] == [("response_item", "message"),
                                                          ("event_msg", "item_completed")]


def test_text_of_joins_the_text_parts_of_a_message():
    assert text_of([{"type": "input_text", "text": "a"}, {"type": "input_image", "url": "x"},
                    {"type": "output_text", "text": "b"}]) == "a\nb"
    assert text_of("plain") == "plain"
    assert text_of(None) == ""
