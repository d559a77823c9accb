"""The fake OpenAI Responses server's scripted replies, on requests the real Codex sent
(tests/fixtures/codex-store/requests) and on hand-made ones; no client runs here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..live.local_http import post, serving
from . import fake_openai

REQUESTS = Path(__file__).resolve().parents[2] / "fixtures" / "codex-store" / "requests"
CODE_TOOLS = {"type": "additional_tools", "role": "developer", "tools": [
    {"type": "namespace", "name": "functions", "tools": [{"type": "custom", "name": "exec"}]}]}


def recorded(name: str) -> tuple[bytes, dict]:
    [path] = sorted((REQUESTS / name).glob("*.json"))
    raw = path.read_bytes()
    return raw, json.loads(raw)


def user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def test_a_resumed_turn_is_answered_quoting_its_mark_word_and_codex_context_is_not_a_prompt():
    _, body = recorded("resumed-turn")
    assert fake_openai.request_kind(body) == "text"
    assert fake_openai.user_messages(body) == ["Start a plan MARKfirst", "Continue the plan MARKsecond",
                                               "Finish the plan MARKthird"]
    [item] = fake_openai.reply_items(body, 4)
    assert item["content"][0]["text"] == "Noted MARKthird; my answer word is REPLYthird."


def test_codex_tools_are_found_in_its_additional_tools_item_and_the_command_goes_through_code_mode_exec():
    _, body = recorded("resumed-turn")
    tools = {tool.get("name"): tool for tool in fake_openai.tools_of(body)}
    assert {"functions", "exec", "wait", "spawn_agent"} <= set(tools) and "exec_command" not in tools
    assert "exec_command(args:" in tools["exec"]["description"]      # reached only from exec's JavaScript
    assert fake_openai.shell_tool(body) == "exec"
    ask = dict(body, input=[*body["input"][:-1], user("Please RUN: echo hi && echo there")])
    assert fake_openai.request_kind(ask) == "function_call"
    text, call = fake_openai.reply_items(ask, 7)
    assert text["content"][0]["text"] == "I will run it."
    assert call["type"] == "custom_tool_call" and call["name"] == "exec" and call["call_id"] == "call_fake0007"
    assert 'tools.exec_command({"cmd": "echo hi && echo there"})' in call["input"]


def test_a_plain_function_shell_tool_gets_a_function_call_and_no_shell_tool_gets_text():
    body = {"tools": [{"type": "function", "name": "shell_command"}], "input": [user("RUN: ls -l")]}
    _, call = fake_openai.reply_items(body, 2)
    assert call["type"] == "function_call" and json.loads(call["arguments"]) == {"command": "ls -l"}
    assert fake_openai.request_kind({"input": [user("RUN: ls -l")]}) == "text"


def test_a_tool_output_gets_a_reply_counting_its_lines_without_quoting_them():
    output = {"type": "custom_tool_call_output", "call_id": "call_fake0001",
              "output": [{"type": "input_text", "text": "OUTWORD7\nmore"}]}
    body = {"input": [CODE_TOOLS, user("RUN: echo"), output]}
    [reply] = fake_openai.reply_items(body, 2)
    assert reply["content"][0]["text"] == "The command printed 2 lines; REPLYtoolresult."
    assert "OUTWORD7" not in json.dumps(reply)


def test_codex_compaction_prompt_gets_a_summary_naming_the_earlier_marks():
    _, body = recorded("compaction")
    assert fake_openai.request_kind(body) == "summary"
    [item] = fake_openai.reply_items(body, 1)
    assert item["content"][0]["text"].startswith("SUMMARYfake: the user sent prompts marked MARKteal, MARKhexagon.")


def test_usage_is_a_quarter_of_the_request_cached_half_once_there_is_a_reply_and_bigusage_adds_more():
    raw, body = recorded("resumed-turn")
    usage = fake_openai.usage_for(raw, body, 40)
    assert usage["input_tokens"] == len(raw) // 4 and usage["output_tokens"] == 11
    assert usage["input_tokens_details"]["cached_tokens"] == len(raw) // 8
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    first = {"input": [user("hi BIGUSAGE")]}
    big = fake_openai.usage_for(b"x" * 400, first, 0)
    assert big["input_tokens"] == 100 + fake_openai.BIG_TOKENS and big["input_tokens_details"]["cached_tokens"] == 0


@pytest.fixture
def server(tmp_path):
    with serving(fake_openai.Handler, tmp_path) as port:
        yield port, tmp_path


def events_of(data: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in data.decode().splitlines() if line.startswith("data: ")]


def test_a_reply_streams_responses_sse_ending_with_completed_usage_and_a_closed_connection(server):
    port, record = server
    body = {"model": "gpt-fake", "stream": True, "input": [user("Say MARKzebra")]}
    response, data = post(port, "/v1/responses", body)
    assert response.getheader("Connection") == "close" and response.getheader("Content-Type") == "text/event-stream"
    events = events_of(data)
    assert [e["type"] for e in events] == ["response.created", "response.output_item.added",
                                           "response.output_text.delta", "response.output_item.done",
                                           "response.completed"]
    assert events[2]["delta"] == "Noted MARKzebra; my answer word is REPLYzebra."
    assert events[3]["item"]["content"][0]["text"] == events[2]["delta"]
    assert events[-1]["response"]["usage"]["input_tokens"] == len(json.dumps(body)) // 4
    saved = sorted(record.glob("*.json"))
    assert json.loads(saved[-1].read_bytes()) == body
    assert saved[-1].with_suffix(".path").read_text() == "POST /v1/responses"


def test_a_tool_call_is_streamed_as_its_own_output_item(server):
    port, _ = server
    response, data = post(port, "/v1/responses", {"stream": True, "input": [CODE_TOOLS, user("RUN: echo hi")]})
    done = [e["item"] for e in events_of(data) if e["type"] == "response.output_item.done"]
    assert [item["type"] for item in done] == ["message", "custom_tool_call"]
    assert events_of(data)[-1]["response"]["output"] == done


def test_fail_is_an_http_400_and_other_paths_are_404_both_recorded(server):
    port, record = server
    response, data = post(port, "/v1/responses", {"stream": True, "input": [user("FAIL: MARKno")]})
    assert response.status == 400 and json.loads(data)["error"]["code"] == "fake_failure"
    response, _ = post(port, "/v1/responses/compact", {"input": []})
    assert response.status == 404
    assert [p.read_text() for p in sorted(record.glob("*.path"))] == ["POST /v1/responses",
                                                                      "POST /v1/responses/compact"]


def test_counting_mode_reports_one_count_of_the_request_with_a_cached_split_and_the_reply_with_its_reasoning(server):
    port, record = server
    _, recorded_body = recorded("resumed-turn")
    body = dict(recorded_body, input=[*recorded_body["input"][:-1], user("THINK LONGREPLY MARKcount")])
    response, data = post(port, "/count/v1/responses", body)
    events = events_of(data)
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    usage = events[-1]["response"]["usage"]
    assert [item["type"] for item in done] == ["reasoning", "message"]
    assert len(done[1]["content"][0]["text"]) == fake_openai.LONG_REPLY_CHARS
    # the input side: every item (tools one by one) with its framing; the newest prompt is not cached
    items = body["input"]
    assert usage["input_tokens"] == fake_openai.request_tokens(body) == sum(map(fake_openai.item_tokens, items))
    assert usage["input_tokens_details"]["cached_tokens"] == usage["input_tokens"] - fake_openai.item_tokens(items[-1])
    tools = [tool for item in items if item.get("type") == "additional_tools" for tool in item["tools"]]
    assert tools and fake_openai.item_tokens(items[0]) == fake_openai.FRAME + sum(map(fake_openai.tool_tokens, tools))
    # the output side: the reply's text with its framing, plus the reasoning its encrypted content stands for
    thought = fake_openai.reasoning_text(done[0])
    assert thought.startswith("The user wants an answer") and usage["output_tokens_details"]["reasoning_tokens"] \
        == fake_openai.count(thought) > 0
    assert usage["output_tokens"] == fake_openai.item_tokens(done[1]) + fake_openai.count(thought)
    # sent back, the reasoning item counts its summary and its thought
    assert fake_openai.item_tokens(done[0]) == fake_openai.count(
        fake_openai.item_text(done[0])) + fake_openai.FRAME > fake_openai.count(thought)
    assert sorted(record.glob("*.path"))[-1].read_text() == "POST /count/v1/responses"


def test_the_default_mode_gives_no_reasoning_nor_long_reply_for_the_counting_words(server):
    port, _ = server
    _, data = post(port, "/v1/responses", {"stream": True, "input": [user("THINK LONGREPLY MARKplain")]})
    done = [e["item"] for e in events_of(data) if e["type"] == "response.output_item.done"]
    assert [item["type"] for item in done] == ["message"]
    assert done[0]["content"][0]["text"] == "Noted MARKplain; my answer word is REPLYplain."
