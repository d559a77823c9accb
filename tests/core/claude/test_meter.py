"""Claude Code's meter on files the real Claude Code 2.1.332 wrote (tests/fixtures/claude-store): the
request log rebuilt, the calibration, the parts of the next request, windows and the via.
The real client's next requests are checked in tests/compat/claude/test_meter_compat.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from reprise.core.config import MeterSettings, ModelSpec
from reprise.core.meter import CALIBRATED, ESTIMATED, MEASURED, RESUME, SEND, TokenCounter
from reprise.core.sources.claude.meter import CLIENT_ADDS, ClaudeMeter, ContextNow, meter_inputs
from reprise.core.sources.claude.records import parse_lines
from reprise.core.sources.claude.request_log import content_texts, message_hash, read_log, transcript_messages
from reprise.core.tokens import count_tokens

STORE = Path(__file__).resolve().parents[2] / "fixtures" / "claude-store"
ALPHA = STORE / "projects" / "-tmp-reprise-claude-fixture-work-alpha"
BETA = STORE / "projects" / "-tmp-reprise-claude-fixture-work-beta"
THREE_TURNS = ALPHA / "33333333-3333-4333-8333-333333333333.jsonl"
COMPACTED = ALPHA / "77777777-7777-4777-8777-777777777777.jsonl"
INTERACTIVE = BETA / "ffffffff-ffff-4fff-8fff-ffffffffffff.jsonl"
BASH = ALPHA / "55555555-5555-4555-8555-555555555555.jsonl"


def o200k(texts) -> int:
    return sum(count_tokens(text, "o200k_base") for text in texts if text)


def meter(data: bytes, *, via: str = SEND, model: str | None = None, settings: MeterSettings | None = None,
          counter: TokenCounter | None = None) -> ClaudeMeter:
    records = parse_lines(data, 0).records
    inputs = meter_inputs(data, records, "2.1.332")
    recorded = next((r["message"]["model"] for r in reversed(records) if r.get("type") == "assistant"), None)
    return ClaudeMeter(settings or MeterSettings(), counter or TokenCounter(), ContextNow(1, 1, "reply", recorded),
                       inputs, model=model, via=via)


def until(path: Path, text: str) -> bytes:
    """The file as it was before the line holding `text` was written."""
    data = path.read_bytes()
    return data[:data.rfind(b"\n", 0, data.index(text.encode())) + 1]


def test_the_request_log_rebuilds_the_request_the_client_sent():
    data = THREE_TURNS.read_bytes()
    records = parse_lines(data, 0).records
    sent = json.loads((STORE / "requests" / "resumed-turn" / "0004.json").read_bytes())
    [reply] = [r for r in records if r.get("type") == "assistant" and r["message"]["id"] == "msg_fake0004"]
    log = read_log(data, [reply["requestRef"]])
    request = log.requests[reply["requestRef"]]
    assert request.query_source == "sdk" and request.version == "2.1.332"
    # a blob's hash covers the whole logged message (the system one also holds `output_config`)
    assert [h for h in request.hashes if h not in request.blobs] \
        == [message_hash(m["role"], m["content"]) for m in sent["messages"][2:]]
    known = transcript_messages(records)
    rebuilt = [request.blobs.get(name, {}).get("content") or known[name] for name in request.hashes]
    assert [content_texts(c) for c in rebuilt] == [content_texts(m["content"]) for m in sent["messages"]]
    assert request.shape is not None
    # the shape leaves out the billing header, the system prompt's first block
    assert sent["system"][0]["text"].startswith("x-anthropic-billing-header: cc_version=2.1.332.")
    assert request.shape.system == tuple(block["text"] for block in sent["system"][1:])
    assert request.shape.tools == tuple(json.dumps(tool, sort_keys=True) for tool in sent["tools"])


def test_calibration_is_the_measured_usage_over_reprises_own_count_of_the_sessions_first_request():
    data = THREE_TURNS.read_bytes()
    records = parse_lines(data, 0).records
    first = next(r for r in records if r.get("type") == "assistant")
    request = read_log(data, [first["requestRef"]]).requests[first["requestRef"]]
    assert request.shape is not None and set(request.hashes) <= set(request.blobs) | set(transcript_messages(records))
    known = transcript_messages(records)
    header = "x-anthropic-billing-header: cc_version=2.1.332.000; cc_entrypoint=sdk-cli;"
    own = o200k([header, *request.shape.texts, *(t for name in request.hashes for t in content_texts(
        request.blobs[name]["content"] if name in request.blobs else known[name]))])
    usage = first["message"]["usage"]
    measured = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    result = meter(data).with_message("a draft of a few words")
    assert result.calibration == pytest.approx(measured / own)
    assert result.measured.tokens != measured   # the newest call is measured; the first one calibrates
    draft = result.part("message")
    assert draft.basis == CALIBRATED and draft.tokens == math.ceil(o200k(["a draft of a few words"])
                                                                   * result.calibration)


def test_the_next_request_adds_the_newest_reply_as_measured():
    data = THREE_TURNS.read_bytes()
    newest = [json.loads(line)["message"]["usage"] for line in data.splitlines() if b'"type":"assistant"' in line][-1]
    result = meter(data).with_message("")
    assert [p.name for p in result.parts] == ["measured", "reply", "message"]
    assert result.part("reply").tokens == newest["output_tokens"] and result.part("reply").basis == MEASURED
    assert result.total == result.part("measured").tokens + newest["output_tokens"]


def test_a_tool_result_after_the_measured_call_is_counted_since():
    data = until(BASH, '"type":"user","message":{"role":"user","content":[{"tool_use_id"')
    result_line = next(line for line in BASH.read_bytes().splitlines() if b'"tool_result"' in line)
    tool_output = json.loads(result_line)["message"]["content"][0]["content"]
    grown = data + result_line + b"\n"
    result = meter(grown).with_message("")
    since = result.part("since")
    assert since.basis == CALIBRATED
    assert since.tokens == math.ceil(o200k([tool_output if isinstance(tool_output, str) else
                                            content_texts(tool_output)[0]]) * result.calibration)
    assert result.part("reply").tokens > 0   # the tool call itself, as measured


def test_after_a_compaction_the_next_request_is_the_fixed_part_and_the_kept_history_never_post_tokens():
    data = until(COMPACTED, '"content":"What now? MARKaftercompact"')
    records = parse_lines(data, 0).records
    boundary = next(r for r in records if r.get("subtype") == "compact_boundary")
    result = meter(data).with_message("")
    assert [p.name for p in result.parts] == ["fixed", "history", "message"]
    assert result.measured is None and result.calibration is not None
    sent = json.loads((STORE / "requests" / "after-compact" / "0010.json").read_bytes())
    fixed = o200k([b["text"] for b in sent["system"]] + [json.dumps(t, sort_keys=True) for t in sent["tools"]])
    assert abs(result.part("fixed").tokens - fixed * result.calibration) <= 1
    # the kept history: what the request after /compact sent but the draft, within the reminders' wrapping
    history = o200k([t for m in sent["messages"] for t in content_texts(m["content"])]) \
        - o200k(["What now? MARKaftercompact"])
    assert abs(result.part("history").tokens - math.ceil(history * result.calibration)) <= 0.03 * history
    assert result.total > 3 * boundary["compactMetadata"]["postTokens"]


def test_skimmed_attachments_after_a_compaction_are_read_whole():
    data = until(COMPACTED, '"content":"What now? MARKaftercompact"')
    result = meter(data).with_message("")
    after = data[data.index(b'"subtype":"compact_boundary"'):]
    biggest = max((line for line in after.splitlines() if b'"type":"attachment"' in line and b'"rendered"' in line),
                  key=len)
    assert len(biggest) > 2048   # a line the skimmed read makes a stub of
    rendered = json.loads(biggest)["rendered"][0]["content"]
    assert result.part("history").chars > len(rendered)


@pytest.mark.parametrize(("path", "via", "adds"), [
    (THREE_TURNS, SEND, None), (THREE_TURNS, RESUME, ("resume", "sdk", False)),
    (INTERACTIVE, RESUME, None), (INTERACTIVE, SEND, ("send", "repl_main_thread", False))])
def test_the_client_part_is_what_the_other_way_of_sending_adds(path, via, adds):
    result = meter(path.read_bytes(), via=via).with_message("")
    assert result.via == via
    names = [p.name for p in result.parts]
    if adds is None:
        assert "client" not in names
        return
    expected = sum(CLIENT_ADDS["2.1.332"][adds].values())
    client = result.part("client")
    assert client.tokens == math.ceil(expected * result.calibration) and client.basis == CALIBRATED


def test_windows_are_claude_codes_own_and_an_unknown_model_has_none():
    data = THREE_TURNS.read_bytes()
    result = meter(data).with_message("")
    assert (result.model, result.window, result.compacts_at) == ("claude-opus-5-5", 1_000_000, 967_000)
    assert meter(data, model="claude-sonnet-4-6").with_message("").window == 200_000
    unknown = meter(data, model="claude-brand-new-9").with_message("")
    assert (unknown.window, unknown.percent, unknown.state, unknown.compacts_at) == (None, None, "unknown", None)
    settings = MeterSettings()
    settings.models.insert(0, ModelSpec(pattern="claude-opus-5-5", window=150_000))
    mine = meter(data, settings=settings).with_message("")
    assert mine.window == 150_000 and "config" in mine.window_source


def test_a_keystroke_counts_only_the_draft():
    calls: list[str] = []

    class Spy(TokenCounter):
        def count(self, text: str, encoding: str) -> int:
            calls.append(text)
            return super().count(text, encoding)

    live = meter(THREE_TURNS.read_bytes(), via=RESUME, counter=Spy())
    live.with_message("")
    calls.clear()
    live.with_message("the next draft")
    assert calls == ["the next draft"]


def test_without_a_request_log_the_counts_are_plain_estimates():
    data = b"".join(line + b"\n" for line in THREE_TURNS.read_bytes().splitlines()
                    if not line.startswith(b'{"type":"api-request'))
    result = meter(data).with_message("some words")
    assert result.calibration is None and result.part("message").basis == ESTIMATED
    assert result.part("message").tokens == o200k(["some words"])


REPLAY = Path(__file__).resolve().parents[2] / "fixtures" / "claude-meter"
STEPS = [step for step in json.loads((REPLAY / "steps.json").read_text())
         if step["label"] not in ("1", "compact", "context")]   # no session yet; not a turn


@pytest.mark.parametrize("step", STEPS, ids=[step["label"] for step in STEPS])
def test_the_meter_read_before_each_turn_of_a_real_session_is_within_one_percent_of_its_request(step):
    """The session the real client wrote against the counting fake (thinking, a 10,000-character tool
    output, a 4,000-character reply, a turn typed in its UI after -p turns, a -p turn after that,
    /compact): cut before each turn, metered with that turn's prompt and way of sending."""
    [path] = REPLAY.glob("*.jsonl")
    data = until(path, json.dumps(step["prompt"])[1:-1])
    result = meter(data, via=step["via"]).with_message(step["prompt"])
    truth = step["first_request_count"]
    assert result.calibration is not None
    assert abs(result.total - truth) / truth < 0.01, (result.total, truth, [(p.name, p.tokens) for p in result.parts])
