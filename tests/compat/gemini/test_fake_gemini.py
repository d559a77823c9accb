"""The fake Gemini API server's scripted replies and its count, on requests the real Gemini CLI sent
(tests/fixtures/gemini/store-0.61.0/requests.jsonl) and on hand-made ones; no client runs here."""

from __future__ import annotations

import json
from pathlib import Path

from core.tokens import count_tokens

from ..live.local_http import post, serving
from . import fake_gemini

REQUESTS = Path(__file__).resolve().parents[2] / "fixtures" / "gemini" / "store-0.61.0" / "requests.jsonl"
STREAM = "/v1beta/models/gemini-fake:streamGenerateContent?alt=sse"
GENERATE = "/v1beta/models/gemini-fake-lite:generateContent"


def recorded(step: str, method: str = ":streamGenerateContent", nth: int = 0) -> dict:
    found = [line["body"] for line in map(json.loads, REQUESTS.read_text().splitlines())
             if line["step"] == step and method in line["path"]]
    return found[nth]


def user(*texts: str) -> dict:
    return {"role": "user", "parts": [{"text": text} for text in texts]}


def model(*parts: dict) -> dict:
    return {"role": "model", "parts": list(parts)}


def o200k(text: str) -> int:
    return count_tokens(text, "o200k_base")


def events(raw: bytes) -> list[dict]:
    return [json.loads(block.removeprefix(b"data: ")) for block in raw.split(b"\n\n") if block.strip()]


def test_the_session_context_shares_the_first_prompt_s_content_and_is_not_a_prompt():
    body = recorded("three turns: 3")
    first = body["contents"][0]
    assert first["parts"][0]["text"].startswith("<session_context>") and len(first["parts"]) == 2
    assert fake_gemini.prompts(body) == ["Start a plan MARKfirst", "Continue the plan MARKsecond",
                                         "Finish the plan MARKthird"]
    assert fake_gemini.request_kind(body) == "text"
    assert fake_gemini.reply_parts(body, 3) == [{"text": "Noted MARKthird; my answer word is REPLYthird."}]


def test_a_shell_request_gets_a_run_shell_command_call_and_its_result_a_line_count_without_the_output():
    ask = recorded("command")
    assert fake_gemini.request_kind(ask) == "function_call"
    text, call = fake_gemini.reply_parts(ask, 2)
    assert text == {"text": "I will run it."}
    assert call["functionCall"]["name"] == "run_shell_command"
    assert call["functionCall"]["args"]["command"] == "printf 'OUTWORD%s\\n' 42 && echo second line"
    result = recorded("command", nth=1)
    assert fake_gemini.request_kind(result) == "tool_result"
    [reply] = fake_gemini.reply_parts(result, 3)
    assert reply["text"].startswith("The command printed ") and "OUTWORD" not in reply["text"]


def test_run_without_the_shell_tool_offered_is_answered_with_text():
    body = {"contents": [user("RUN: ls -l")], "tools": [{"functionDeclarations": [{"name": "read_file"}]}]}
    assert fake_gemini.request_kind(body) == "text"


def test_the_count_is_the_system_text_each_declaration_s_json_and_each_content_s_parts_with_frames():
    call = {"functionCall": {"name": "run_shell_command", "args": {"command": "ls", "b": 1}}}
    response = {"functionResponse": {"name": "run_shell_command", "response": {"output": "x\ny"}}}
    declaration = {"name": "read_file", "description": "Reads a file."}
    body = {"systemInstruction": {"parts": [{"text": "You are a helper."}, {"text": "Be brief."}]},
            "tools": [{"functionDeclarations": [declaration]}],
            "contents": [user("<session_context>x</session_context>", "Hello MARKa"), model({"text": "Hi"}, call),
                         {"role": "user", "parts": [response]}, user("Next MARKb")]}
    expected_system = o200k("You are a helper.\nBe brief.")
    expected_tools = o200k('{"description":"Reads a file.","name":"read_file"}') + fake_gemini.FRAME
    first = fake_gemini.FRAME + o200k("<session_context>x</session_context>") + o200k("Hello MARKa")
    second = fake_gemini.FRAME + o200k("Hi") + o200k('run_shell_command\n{"b":1,"command":"ls"}')
    third = fake_gemini.FRAME + o200k('run_shell_command\n{"output":"x\\ny"}')
    fourth = fake_gemini.FRAME + o200k("Next MARKb")
    total = expected_system + expected_tools + first + second + third + fourth
    assert fake_gemini.request_tokens(body) == total
    assert fake_gemini.cached_tokens(body) == total - fourth
    assert fake_gemini.cached_tokens({"contents": body["contents"][:1]}) == 0


def test_a_thought_signature_is_not_counted_and_an_odd_part_is_counted_as_its_json():
    signed = {"text": "Hi", "thoughtSignature": "abc" * 50}
    assert fake_gemini.part_text(signed) == "Hi"
    odd = {"inlineData": {"mimeType": "image/png", "data": "QUJD"}, "thoughtSignature": "zzz"}
    assert fake_gemini.part_text(odd) == '{"inlineData":{"data":"QUJD","mimeType":"image/png"}}'


def test_a_streamed_turn_carries_its_usage_on_the_last_chunk_and_the_file_is_recorded(tmp_path):
    body = {"contents": [user("THINK about it MARKdeep")]}
    with serving(fake_gemini.Handler, tmp_path) as port:
        response, raw = post(port, STREAM, body)
    assert response.status == 200 and response.getheader("Content-Type") == "text/event-stream"
    chunks = events(raw)
    parts = [part for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]]
    assert parts[0]["thought"] is True and parts[1]["text"] == "Noted MARKdeep; my answer word is REPLYdeep."
    assert "usageMetadata" not in chunks[0] and chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    usage = chunks[-1]["usageMetadata"]
    assert usage["promptTokenCount"] == fake_gemini.request_tokens(body)
    assert usage["thoughtsTokenCount"] == o200k(parts[0]["text"])
    assert usage["candidatesTokenCount"] == fake_gemini.FRAME + o200k(parts[1]["text"])
    assert usage["totalTokenCount"] == sum(usage[key] for key in ("promptTokenCount", "candidatesTokenCount",
                                                                   "thoughtsTokenCount"))
    assert chunks[-1]["modelVersion"] == "gemini-fake"
    [saved] = sorted(tmp_path.glob("*.json"))
    assert json.loads(saved.read_bytes()) == body
    assert saved.with_suffix(".path").read_text() == f"POST {STREAM}"


def test_the_router_gets_a_score_of_at_least_one_and_other_side_calls_a_title(tmp_path):
    router = recorded("one turn", ":generateContent")
    assert fake_gemini.is_router(router)
    with serving(fake_gemini.Handler, tmp_path) as port:
        _, raw = post(port, GENERATE, router)
        _, title = post(port, GENERATE, {"contents": [user("Name this session MARKtopic")]})
    answer = json.loads(json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"])
    assert answer["complexity_score"] >= 1 and answer["complexity_reasoning"]
    assert json.loads(title)["candidates"][0]["content"]["parts"][0]["text"] == "Fake title about MARKtopic"


def test_fail_is_a_400_and_an_unknown_path_a_404_both_recorded(tmp_path):
    with serving(fake_gemini.Handler, tmp_path) as port:
        failed, raw = post(port, STREAM, {"contents": [user("Please FAIL: now")]})
        missing, _ = post(port, "/v1beta/models/x:countTokens", {})
    assert failed.status == 400 and json.loads(raw)["error"]["status"] == "INVALID_ARGUMENT"
    assert missing.status == 404
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_long_reply_is_four_thousand_characters():
    [part] = fake_gemini.reply_parts({"contents": [user("LONGREPLY please")]}, 5)
    assert len(part["text"]) == fake_gemini.LONG_REPLY_CHARS
