"""Gemini CLI's meter: the newest call's measured input less the contents it sent (the system
instruction and tools), the history and what came since as the resumed client sends them (tool
results twice, thoughts stripped, turns of one role merged), the draft; the tools each way of sending
offers; an estimate before any call; the window and compression point Gemini CLI uses
(tests/compat/gemini/test_meter_compat.py checks each against the real client). The captured 0.61.0
store checks the contents a call sent, rebuilt from the session file, against the request itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reprise.core.config import MeterSettings, ModelSpec
from reprise.core.meter import COUNTED, ESTIMATED, MEASURED, RESUME, SEND, TokenCounter
from reprise.core.sources.gemini.lines import chat_of_bytes
from reprise.core.sources.gemini.meter import (
    CONTENT_FRAME,
    DECLARATION_FRAME,
    FIXED_TOKENS,
    HEADLESS,
    INTERACTIVE,
    YOLO,
    GeminiLimits,
    GeminiMeter,
    mode_of,
    part_text,
)
from reprise.core.sources.gemini.next_request import (
    SYNTHETIC_SIGNATURE,
    Content,
    NextRequest,
    next_request,
    resumed,
    sent,
)
from reprise.core.sources.gemini.windows import compacts_at, compression_threshold, token_limit

COUNTER = TokenCounter()
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "gemini" / "store-0.61.0"
CONTEXT = "<session_context>\nThis is the Gemini CLI.\n</session_context>"
SEND_ARGV = ("gemini", "--resume", "{session_id}", "--output-format", "json", "-p", "")


def count(text: str) -> int:
    return COUNTER.count(text, "o200k_base") if text else 0


def tokens_of(contents: list[Content]) -> int:
    return sum(CONTENT_FRAME + sum(count(part_text(part)) for part in content.parts) for content in contents)


def user(text: str, id_: str) -> dict[str, Any]:
    return {"id": id_, "type": "user", "content": [{"text": text}]}


def gemini(text: str, id_: str, tokens: int | None = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"id": id_, "type": "gemini", "content": text, "thoughts": [],
                               "model": "gemini-3.8-flash", **extra}
    if tokens is not None:
        message["tokens"] = {"input": tokens, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": tokens + 5}
    return message


def shell_call(id_: str, output: str) -> dict[str, Any]:
    response = {"functionResponse": {"id": id_, "name": "run_shell_command", "response": {"output": output}}}
    return {"id": id_, "name": "run_shell_command", "args": {"command": "echo hi"}, "result": [response],
            "status": "success"}


def session(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    return [user(CONTEXT, "context"), *messages]


def meter_of(messages: list[dict[str, Any]], *, via: str = SEND, argv: tuple[str, ...] = SEND_ARGV,
             settings: MeterSettings | None = None, **extra: Any) -> GeminiMeter:
    return GeminiMeter(settings or MeterSettings(), COUNTER, next_request(messages), via=via,
                       limits=GeminiLimits(argv=argv), **extra)


def with_context(contents: list[Content]) -> list[Content]:
    return sent([Content("user", ({"text": CONTEXT},)), *contents])


# --- the contents a resumed client sends --------------------------------------------------------

def test_a_tool_call_is_resumed_as_a_model_turn_its_results_and_the_recorded_results_again():
    call = shell_call("c1", "hi")
    results = {"id": "r1", "type": "user", "content": call["result"]}
    messages = [user("Please RUN: echo hi", "p1"), gemini("", "g1", 9_000, toolCalls=[call]), results,
                gemini("It ran.", "g2", 9_100)]
    contents = sent(content for message in messages for content in resumed(message))
    assert [content.role for content in contents] == ["user", "model", "user", "model"]
    called = {"functionCall": {"id": "c1", "name": "run_shell_command", "args": {"command": "echo hi"}}}
    assert contents[1].parts == (called,)
    assert contents[2].parts == (call["result"][0], call["result"][0])   # the client sends it twice
    request = next_request(session(*messages))
    live = request.measured_sent        # the call that answered the tool result sent it once, signed
    assert [content.role for content in live] == ["user", "model", "user"] and len(live[2].parts) == 1
    assert live[1].parts[0]["thoughtSignature"] == SYNTHETIC_SIGNATURE
    assert request.measured == 9_100 and request.wide_tools and request.measured_turn == 1


def test_thoughts_info_messages_and_commands_are_not_sent_and_turns_of_one_role_merge():
    messages = session(user("first", "p1"), {"id": "i1", "type": "info", "content": "Loaded"},
                       user("/stats", "c1"), user("second", "p2"),
                       gemini("answer", "g1", 100, thoughts=[{"subject": "Plan", "description": "think"}]))
    request = next_request(messages)
    assert request.context == CONTEXT
    contents = sent(request.history + request.since)
    assert contents == [Content("user", ({"text": "first"}, {"text": "second"})),
                        Content("model", ({"text": "answer"},))]
    assert request.prompts == 2 and request.model == "gemini-3.8-flash"


def test_a_rolled_back_reply_rewritten_as_parts_keeps_its_parts_and_loses_its_thoughts():
    thought = {"text": "**Thinking** hard", "thought": True}
    messages = session(user("THINK MARKx", "p1"), {"id": "g1", "type": "gemini", "content": [thought, {"text": "ok"}]})
    request = next_request(messages)
    assert request.measured is None and sent(request.since) == [Content("user", ({"text": "THINK MARKx"},)),
                                                                Content("model", ({"text": "ok"},))]


# --- the meter ---------------------------------------------------------------------------------

def test_the_next_request_is_the_measured_call_less_what_it_sent_plus_everything_now_and_the_draft():
    messages = session(user("Hello MARKone", "p1"), gemini("Noted MARKone.", "g1", 7_812),
                       user("Go on", "p2"), gemini("x " * 500, "g2", 7_900))
    result = meter_of(messages).with_message("one two three")
    fixed, history, since, draft = (result.part(name) for name in ("fixed", "history", "since", "message"))
    prefix = with_context([Content("user", ({"text": "Hello MARKone"},)),
                           Content("model", ({"text": "Noted MARKone."},)), Content("user", ({"text": "Go on"},))])
    assert (fixed.tokens, fixed.basis) == (7_900 - tokens_of(prefix), MEASURED)
    assert history.tokens == tokens_of(prefix) and history.basis == since.basis == COUNTED
    assert since.tokens == CONTENT_FRAME + count("x " * 500)
    assert draft.tokens == result.draft == CONTENT_FRAME + count("one two three")
    assert result.total == 7_900 + since.tokens + draft.tokens
    assert result.measured is not None and (result.measured.turn, result.measured.tokens) == (2, 7_900)
    assert result.window == 1_048_576 and result.compacts_at == 524_288 and result.model == "gemini-3.8-flash"


def test_a_draft_after_an_unanswered_prompt_is_one_more_part_of_that_turn():
    messages = session(user("Hello", "p1"), gemini("Hi.", "g1", 7_800), user("are you there?", "p2"))
    result = meter_of(messages).with_message("hello again")
    assert result.part("message").tokens == count("hello again")
    assert result.part("since").tokens == tokens_of([Content("model", ({"text": "Hi."},)),
                                                     Content("user", ({"text": "are you there?"},))])


def test_a_yolo_turn_sent_headless_loses_the_tools_only_yolo_offers_and_the_tui_adds_its_own():
    call = shell_call("c1", "hi")
    messages = session(user("Please RUN: echo hi", "p1"), gemini("", "g1", 9_300, toolCalls=[call]),
                       {"id": "r1", "type": "user", "content": call["result"]}, gemini("It ran.", "g2", 9_400))
    measured_fixed = meter_of(messages, argv=(*SEND_ARGV, "--yolo")).with_message("").part("fixed")
    assert measured_fixed.basis == MEASURED
    headless = meter_of(messages).with_message("").part("fixed")
    assert headless.basis == ESTIMATED
    assert headless.tokens == measured_fixed.tokens - (FIXED_TOKENS[YOLO] - FIXED_TOKENS[HEADLESS])
    typed = meter_of(messages, via=RESUME).with_message("").part("fixed")
    assert typed.tokens == measured_fixed.tokens + FIXED_TOKENS[INTERACTIVE] - FIXED_TOKENS[YOLO]
    plain = session(user("Hello", "p1"), gemini("Hi.", "g1", 7_800))
    assert meter_of(plain, via=RESUME).with_message("").part("fixed").tokens == \
        meter_of(plain).with_message("").part("fixed").tokens + FIXED_TOKENS[INTERACTIVE] - FIXED_TOKENS[HEADLESS]


@pytest.mark.parametrize(("argv", "via", "mode"), [
    (SEND_ARGV, SEND, HEADLESS), ((*SEND_ARGV, "--yolo"), SEND, YOLO), ((*SEND_ARGV, "-y"), SEND, YOLO),
    ((*SEND_ARGV, "--approval-mode", "yolo"), SEND, YOLO), ((*SEND_ARGV, "--approval-mode=yolo"), SEND, YOLO),
    ((*SEND_ARGV, "--approval-mode", "auto_edit"), SEND, HEADLESS), (("gemini", "--resume", "x"), RESUME, INTERACTIVE)])
def test_the_way_a_turn_is_sent_sets_its_tools(argv, via, mode):
    assert mode_of(argv, via) == mode


def test_before_any_call_the_fixed_prompt_is_estimated_and_everything_recorded_is_counted():
    messages = session(user("Hello", "p1"))
    result = meter_of(messages).with_message("more")
    assert [part.name for part in result.parts] == ["fixed", "history", "message"]
    assert (result.part("fixed").tokens, result.part("fixed").basis) == (FIXED_TOKENS[HEADLESS], ESTIMATED)
    assert result.part("history").tokens == tokens_of(with_context([Content("user", ({"text": "Hello"},))]))
    assert result.measured is None and result.part("message").tokens == count("more")
    empty = GeminiMeter(MeterSettings(), COUNTER, next_request([]), limits=GeminiLimits(folder=Path("/work/a")))
    assert empty.model == "auto" and empty.with_message("").part("history").tokens > CONTENT_FRAME   # its own context


def test_a_fork_reprise_wrote_keeps_copied_usage_out_of_the_meter_until_its_first_turn():
    messages = session(user("Keep", "p1"), gemini("Kept.", "g1", 7_800), user("Keep too", "p3"),
                       gemini("Kept too.", "g3", 8_900))
    result = meter_of(messages, unmeasured=True).with_message("")
    assert result.measured is None and result.part("fixed").basis == ESTIMATED and "since" not in \
        [part.name for part in result.parts]
    assert result.part("history").tokens == tokens_of(with_context([
        Content("user", ({"text": "Keep"},)), Content("model", ({"text": "Kept."},)),
        Content("user", ({"text": "Keep too"},)), Content("model", ({"text": "Kept too."},))]))


# --- the window ----------------------------------------------------------------------------------

def test_the_window_is_gemini_cli_s_token_limit_unless_the_user_configured_the_model():
    assert token_limit("gemini-3.8-flash") == token_limit("auto") == 1_048_576
    assert token_limit("gemma-4-31b-it") == 256_000 and compacts_at("gemma-4-31b-it", 0.5) == 128_000
    messages = session(user("Hello", "p1"), gemini("Hi.", "g1", 7_800))
    settings = MeterSettings(models=[ModelSpec(pattern="gemini-3.8-*", window=200_000)])
    result = meter_of(messages, settings=settings).with_message("")
    assert result.window == 200_000 and "[[meter.models]]" in result.window_source


def test_the_compression_threshold_is_the_folders_setting_over_the_users_else_one_half(tmp_path):
    store, folder = tmp_path / ".gemini", tmp_path / "work"
    (folder / ".gemini").mkdir(parents=True)
    store.mkdir()
    assert compression_threshold(store, folder)[0] == 0.5
    (store / "settings.json").write_text('{\n  // the user\'s\n  "model": {"compressionThreshold": 0.3}\n}\n')
    assert compression_threshold(store, folder) == (0.3, "model.compressionThreshold in Gemini CLI's settings.json")
    (folder / ".gemini" / "settings.json").write_text(json.dumps({"model": {"compressionThreshold": 0.2}}))
    assert compression_threshold(store, folder)[0] == 0.2
    (folder / ".gemini" / "settings.json").write_text(json.dumps({"model": {"compressionThreshold": 0}}))
    assert compression_threshold(store, folder)[0] == 0.3     # 0 is unset for the client
    (store / "settings.json").write_text("{not json")
    assert compression_threshold(store, None)[0] == 0.5
    limits = GeminiLimits.of(store, folder, SEND_ARGV)
    meter = GeminiMeter(MeterSettings(), COUNTER, next_request([]), limits=limits)
    assert meter.with_message("").compacts_at == 524_288


# --- against the captured 0.61.0 store --------------------------------------------------------------

def captured() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(step, its last turn request) of every step of the fixture store."""
    requests = [json.loads(line) for line in (FIXTURE / "requests.jsonl").read_text().splitlines()]
    steps = json.loads((FIXTURE / "steps.json").read_text())
    found = []
    for step in steps:
        turns = [request["body"] for request in requests if request["step"] == step["label"]
                 and ":streamGenerateContent" in request["path"]]
        found.append((step, turns[-1]))
    return found


def messages_of(session_id: str) -> list[dict[str, Any]]:
    files = sorted(FIXTURE.glob(f"home/.gemini/tmp/*/chats/session-*-{session_id[:8]}.jsonl"),
                   key=lambda path: path.stat().st_size)
    return chat_of_bytes(files[-1].read_bytes()).messages


def fake_count(contents: list[dict[str, Any]]) -> int:
    return sum(CONTENT_FRAME + sum(count(part_text(part)) for part in content["parts"]) for content in contents)


def test_the_contents_the_newest_call_sent_are_rebuilt_from_the_file_as_the_client_sent_them():
    last = {}
    for step, body in captured():
        last[step["session"]] = body
    assert len(last) == 4
    for session_id, body in last.items():
        request: NextRequest = next_request(messages_of(session_id))
        assert request.context is not None and request.measured is not None
        rebuilt = sent([Content("user", ({"text": request.context},)), *request.measured_sent])
        assert [(c.role, [part_text(p) for p in c.parts]) for c in rebuilt] == \
            [(c["role"], [part_text(p) for p in c["parts"]]) for c in body["contents"]], session_id
        fixed = count("\n".join(part["text"] for part in body["systemInstruction"]["parts"])) + sum(
            count(json.dumps(d, sort_keys=True, separators=(",", ":"))) + DECLARATION_FRAME
            for tool in body["tools"] for d in tool["functionDeclarations"])
        assert request.measured - fake_count(body["contents"]) == fixed
