"""The client's merge of a session file's lines (`lines.py`), line kind by line kind."""

from __future__ import annotations

import json

from reprise.core.sources.gemini.lines import Merge, chat_of_bytes, is_resumable, line_kind, prompt_text

SID = "5f0c0d4e-1111-4222-8333-444455556666"
HEADER = {"sessionId": SID, "projectHash": "ab" * 32, "startTime": "2026-12-01T10:00:00.000Z",
          "lastUpdated": "2026-12-01T10:00:00.000Z", "kind": "main"}


def lines(*records: object) -> bytes:
    return b"".join(json.dumps(record, separators=(",", ":")).encode() + b"\n" for record in records)


def user(mid: str, text: str) -> dict[str, object]:
    return {"id": mid, "timestamp": "2026-12-01T10:00:01.000Z", "type": "user", "content": [{"text": text}]}


def gemini(mid: str, text: str, **rest: object) -> dict[str, object]:
    return {"id": mid, "timestamp": "2026-12-01T10:00:02.000Z", "type": "gemini", "content": text, **rest}


def ids(data: bytes) -> list[str]:
    return [message["id"] for message in chat_of_bytes(data).messages]


def test_a_later_header_overrides_an_earlier_one_and_set_merges_keys():
    data = lines(HEADER, user("u1", "hi"), {**HEADER, "startTime": "2026-12-02T00:00:00.000Z", "extra": 1},
                 {"$set": {"summary": "A title", "lastUpdated": "2026-12-02T01:00:00.000Z"}})
    chat = chat_of_bytes(data)
    assert (chat.session_id, chat.start_time, chat.last_updated, chat.summary) == (
        SID, "2026-12-02T00:00:00.000Z", "2026-12-02T01:00:00.000Z", "A title")
    assert chat.metadata["extra"] == 1 and chat.kind == "main" and not chat.rewound and chat.warnings == []


def test_a_message_with_a_known_id_replaces_it_where_it_stood():
    data = lines(HEADER, user("u1", "one"), gemini("g1", "pending"), user("u2", "two"), gemini("g1", "done"))
    chat = chat_of_bytes(data)
    assert [message["id"] for message in chat.messages] == ["u1", "g1", "u2"]
    assert chat.messages[1]["content"] == "done"


def test_rewind_drops_that_message_and_every_later_one():
    data = lines(HEADER, user("u1", "one"), gemini("g1", "a"), user("u2", "two"), gemini("g2", "b"),
                 {"$rewindTo": "u2"}, user("u3", "three"))
    chat = chat_of_bytes(data)
    assert [message["id"] for message in chat.messages] == ["u1", "g1", "u3"] and chat.rewound


def test_rewind_to_an_unknown_id_drops_everything_as_the_client_does():
    assert ids(lines(HEADER, user("u1", "one"), {"$rewindTo": "nope"}, user("u2", "two"))) == ["u2"]


def test_set_messages_replaces_the_whole_list():
    data = lines(HEADER, user("u1", "one"), gemini("g1", "a"), {"$set": {"messages": [user("u9", "kept")]}},
                 gemini("g2", "b"))
    chat = chat_of_bytes(data)
    assert [message["id"] for message in chat.messages] == ["u9", "g2"] and not chat.rewound
    assert "messages" not in chat.metadata


def test_a_header_s_messages_are_added_and_a_header_without_project_hash_is_ignored():
    data = lines({**HEADER, "messages": [user("u1", "one")]}, {"sessionId": "other", "kind": "x"}, gemini("g1", "a"))
    chat = chat_of_bytes(data)
    assert [message["id"] for message in chat.messages] == ["u1", "g1"] and chat.kind == "main"
    assert any("line 2" in warning for warning in chat.warnings)


def test_the_client_s_order_decides_a_line_of_two_kinds():
    assert line_kind({"$rewindTo": "x", "id": "y"}) == "rewind"
    assert line_kind({"id": "y", "$set": {}}) == "message"
    assert line_kind({"$set": {}, **HEADER}) == "set"
    assert line_kind({"id": 5, **HEADER}) == "header"
    assert line_kind({"$rewindTo": 3}) is None


def test_bad_lines_are_skipped_with_a_warning_naming_the_line():
    data = lines(HEADER, user("u1", "one")) + b"{not json\n" + b"[1,2]\n" + lines({"type": "user"}, gemini("g1", "a"))
    chat = chat_of_bytes(data)
    assert [message["id"] for message in chat.messages] == ["u1", "g1"]
    assert [warning.split(":")[0] for warning in chat.warnings] == ["line 3", "line 4", "line 5"]


def test_a_truncated_last_line_is_left_for_the_next_read():
    data = lines(HEADER, user("u1", "one")) + b'{"id":"g1","type":"gem'
    chat = chat_of_bytes(data)
    assert ids(data) == ["u1"] and chat.end == len(lines(HEADER, user("u1", "one")))


def test_merging_chunk_by_chunk_is_merging_the_whole():
    records = [HEADER, user("u1", "one"), gemini("g1", "a"), user("u2", "two"), {"$rewindTo": "u2"},
               gemini("g1", "again"), {"$set": {"summary": "s"}}, user("u3", "three")]
    whole: Merge[str] = Merge(lambda message: message["id"])
    whole.feed(records)
    parts: Merge[str] = Merge(lambda message: message["id"])
    for record in records:
        parts.feed([record])
    assert list(parts.messages) == list(whole.messages) == ["u1", "g1", "u3"]
    assert parts.metadata == whole.metadata and parts.rewinds == whole.rewinds == 1


def test_injected_context_commands_and_tool_results_are_not_prompts():
    context = user("c", "<session_context>\nfolder: /x\n</session_context>")
    assert not is_resumable(context) and prompt_text(context) is None
    assert prompt_text(user("s", "/help")) is None
    results = {"id": "r", "type": "user", "content": [{"functionResponse": {"name": "ls", "response": {}}}]}
    assert is_resumable(results) and prompt_text(results) is None
    assert prompt_text(user("p", "fix it")) == "fix it"
    assert is_resumable(gemini("g", "", toolCalls=[{"id": "t"}])) and not is_resumable(gemini("g", " "))


def test_a_file_whose_lines_never_name_the_session_is_read_as_one_document():
    document = {**HEADER, "messages": [user("u1", "old"), gemini("g1", "reply")], "summary": "Old one"}
    chat = chat_of_bytes(json.dumps(document, indent=2).encode())
    assert chat.legacy and chat.session_id == SID and [m["id"] for m in chat.messages] == ["u1", "g1"]
    assert chat.first_prompt == "old" and chat.summary == "Old one" and chat.warnings == []


def test_content_nested_thousands_deep_is_flattened_without_recursion():
    deep: object = [{"text": "deep MARKdeep"}]
    for _ in range(50_000):
        deep = [deep]
    assert prompt_text({"id": "p", "type": "user", "content": deep}) is None   # not a part list the client reads
    assert is_resumable({"id": "p", "type": "user", "content": deep})
