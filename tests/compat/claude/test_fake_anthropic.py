"""The fake Anthropic server's scripted replies, on requests the real Claude Code sent
(tests/fixtures/claude-store/requests) and on hand-made ones; no client runs here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ..live.local_http import post, serving
from . import fake_anthropic

REQUESTS = Path(__file__).resolve().parents[2] / "fixtures" / "claude-store" / "requests"


def recorded(name: str) -> tuple[bytes, dict]:
    [path] = sorted((REQUESTS / name).glob("*.json"))
    raw = path.read_bytes()
    return raw, json.loads(raw)


def test_a_resumed_turn_is_answered_quoting_its_mark_word_and_adding_a_reply_word():
    _, body = recorded("resumed-turn")
    assert fake_anthropic.request_kind(body) == "text"
    content, stop = fake_anthropic.reply_blocks(body, 4)
    assert stop == "end_turn"
    assert content == [{"type": "text", "text": "Noted MARKthird; my answer word is REPLYthird."}]


def test_the_turn_after_compact_is_a_normal_turn_not_a_summary_request():
    _, body = recorded("after-compact")
    assert fake_anthropic.request_kind(body) == "text"
    assert "REPLYaftercompact" in fake_anthropic.reply_blocks(body, 10)[0][0]["text"]


def test_run_asks_for_a_bash_tool_use_and_its_result_gets_a_reply_that_does_not_quote_the_output():
    tools = [{"name": "Bash", "input_schema": {}}]
    ask = {"tools": tools, "messages": [{"role": "user", "content": [{"type": "text", "text": "RUN: echo hi"}]}]}
    content, stop = fake_anthropic.reply_blocks(ask, 7)
    assert stop == "tool_use" and content[1]["name"] == "Bash" and content[1]["input"]["command"] == "echo hi"
    result = {"tools": tools, "messages": [*ask["messages"], {"role": "assistant", "content": content},
                                            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x",
                                                                          "content": "OUTWORD7\nmore"}]}]}
    [reply], _ = fake_anthropic.reply_blocks(result, 8)
    assert reply["text"] == "The command printed 2 lines; REPLYtoolresult." and "OUTWORD7" not in reply["text"]
    no_bash = {"tools": [], "messages": ask["messages"]}
    assert fake_anthropic.request_kind(no_bash) == "text"


def test_a_summary_request_gets_analysis_and_summary_naming_the_conversations_marks():
    body = {"messages": [{"role": "user", "content": "MARKone"}, {"role": "assistant", "content": "ok"},
                         {"role": "user", "content": [{"type": "text", "text": "MARKtwo"},
                                                      {"type": "text", "text": "Your task is to create a detailed "
                                                                               "summary of the conversation so far"}]}]}
    [block], _ = fake_anthropic.reply_blocks(body, 1)
    text = block["text"]
    assert text.startswith("<analysis>") and "MARKone, MARKtwo" in text and "</summary>" in text


def test_usage_is_derived_from_the_request_and_sums_to_a_quarter_of_its_bytes():
    raw, body = recorded("resumed-turn")
    usage = fake_anthropic.usage_for(raw, body, 40)
    context = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    assert context == len(raw) // 4
    assert usage["cache_read_input_tokens"] > 0 and usage["output_tokens"] == 11
    first = {"messages": [{"role": "user", "content": "hi"}]}
    assert fake_anthropic.usage_for(b"x" * 400, first, 0)["cache_read_input_tokens"] == 0


@pytest.fixture
def server(tmp_path):
    with serving(fake_anthropic.Handler, tmp_path) as port:
        yield port, tmp_path


def test_a_streamed_reply_is_anthropic_sse_ending_with_message_stop_and_a_closed_connection(server):
    port, record = server
    body = {"model": "claude-fake", "stream": True, "messages": [{"role": "user", "content": "Say MARKzebra"}]}
    response, data = post(port, "/v1/messages?beta=true", body)
    assert response.getheader("Connection") == "close" and response.getheader("Content-Type") == "text/event-stream"
    events = [json.loads(line[6:]) for line in data.decode().splitlines() if line.startswith("data: ")]
    assert [e["type"] for e in events] == ["message_start", "content_block_start", "content_block_delta",
                                           "content_block_stop", "message_delta", "message_stop"]
    assert events[2]["delta"]["text"] == "Noted MARKzebra; my answer word is REPLYzebra."
    assert events[4]["usage"]["output_tokens"] > 0 and events[0]["message"]["usage"]["input_tokens"] > 0
    saved = sorted(record.glob("*.json"))
    assert [json.loads(p.read_bytes()) for p in saved][-1] == body
    assert saved[-1].with_suffix(".path").read_text() == "/v1/messages?beta=true"


def test_count_tokens_and_a_non_streamed_message_are_answered_as_json(server):
    port, _ = server
    response, data = post(port, "/v1/messages/count_tokens", {"messages": [{"role": "user", "content": "hi"}]})
    assert response.status == 200 and json.loads(data)["input_tokens"] > 0
    response, data = post(port, "/v1/messages", {"messages": [{"role": "user", "content": "MARKquiet"}]})
    message = json.loads(data)
    assert message["type"] == "message" and "REPLYquiet" in message["content"][0]["text"]


def test_counting_mode_reports_one_count_of_what_the_model_sees_split_three_ways():
    _, body = recorded("resumed-turn")
    texts = [block["text"] for block in body["system"]]
    texts += [json.dumps(tool, sort_keys=True) for tool in body["tools"]]
    for message in body["messages"]:
        content = message["content"]
        texts += [content] if isinstance(content, str) else [block["text"] for block in content]
    expected = math.ceil(sum(fake_anthropic.o200k(text) for text in texts) * fake_anthropic.SCALE) \
        + fake_anthropic.MESSAGE_FRAMING * len(body["messages"])
    usage = fake_anthropic.counted_usage(body, [{"type": "text", "text": "four words of reply"}])
    assert usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"] == expected
    assert usage["cache_read_input_tokens"] > 0 and usage["cache_creation_input_tokens"] > 0
    assert usage["output_tokens"] == math.ceil(fake_anthropic.o200k("four words of reply") * fake_anthropic.SCALE)


def test_counting_mode_counts_tool_calls_results_and_thinking():
    call = {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}}
    result = {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "x" * 10_000}]}
    thinking = {"type": "thinking", "thinking": "a long thought " * 20, "signature": "s"}
    bare = {"messages": [{"role": "user", "content": "hi"}]}
    full = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [thinking, call]},
                         {"role": "user", "content": [result]}]}
    added = fake_anthropic.model_count(full) - fake_anthropic.model_count(bare)
    counted = sum(fake_anthropic.o200k(text) for text in ("a long thought " * 20, "Bash", '{"command": "ls"}',
                                                           "x" * 10_000))
    assert abs(added - (counted * fake_anthropic.SCALE + 2 * fake_anthropic.MESSAGE_FRAMING)) <= 2


@pytest.fixture
def counting_server(tmp_path):
    record = tmp_path / "requests"
    record.mkdir()
    (tmp_path / "fake.json").write_text(json.dumps({"usage": "count"}))
    with serving(fake_anthropic.Handler, record) as port:
        yield port


@pytest.mark.parametrize(("prompt", "kinds", "chars"), [("THINK about it", ["thinking", "text"], None),
                                                         ("LONGREPLY please", ["text"], 4_000)])
def test_counting_mode_answers_think_with_thinking_and_longreply_with_4000_characters(counting_server, prompt,
                                                                                     kinds, chars):
    body = {"model": "claude-fake", "messages": [{"role": "user", "content": prompt}]}
    _, data = post(counting_server, "/v1/messages", body)
    message = json.loads(data)
    assert [block["type"] for block in message["content"]] == kinds
    if chars:
        assert len(message["content"][0]["text"]) == chars
    usage = message["usage"]
    assert usage["input_tokens"] + usage["cache_creation_input_tokens"] == fake_anthropic.model_count(body)
    assert usage["output_tokens"] == fake_anthropic.reply_count(message["content"])
    _, data = post(counting_server, "/v1/messages/count_tokens", body)
    assert json.loads(data)["input_tokens"] == fake_anthropic.model_count(body)
