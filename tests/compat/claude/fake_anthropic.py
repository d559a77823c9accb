"""A fake Anthropic Messages server that records every request (for the real Claude Code).

Started inside the test's network namespace (by tests/compat/live/launch.py with this file as
its server), on 127.0.0.1. Every POST is saved as `<record>/NNNN.json` (the body as received;
`NNNN.path` beside it holds the request path) and answered:

- `POST /v1/messages/count_tokens`: `{"input_tokens": len(body) // 4}`.
- `POST /v1/messages` (Claude Code adds `?beta=true`): with `stream: true` as Anthropic SSE
  (`message_start`, `content_block_start/delta/stop`, `message_delta` with usage,
  `message_stop`), then the connection is closed (`Connection: close`: without a length the
  client would wait for more); without `stream` as one JSON message.

The reply is scripted from the request (`reply_blocks`), looking at the newest `user` message
(Claude Code may send `system` messages after it):
- a `tool_result` in it: a text reply counting the result's lines (never quoting them, so a word
  of the output is found in the tool output only);
- "RUN: <command>", "READ: <path>", "WRITE: <path>" or "AGENT: <task>" in its text (the command
  and the task run to the end of the line, a path to the next space) (and that
  tool among the request's tools): a `tool_use` of Bash with the command, of Read or Write with the
  path (Write's content names the path), of Agent with the task (a foreground subagent, whose own
  request is then answered by these same rules);
- "FAIL:" in its text: HTTP 400 `invalid_request_error` (an API error the client records);
- a request for a summary (what `/compact` sends): "<analysis>...</analysis><summary>...</summary>"
  naming the MARK words of the whole conversation;
- a request for a title (the system prompt asks for one): a JSON title naming the first MARK word;
- otherwise a text reply quoting each `MARK<word>` of the prompt and adding `REPLY<word>` (a word
  found only in the reply, for search tests).

Usage is deterministic and derived from the request. By default, with `n = len(body) // 4`,
`cache_read_input_tokens = n // 2` when the request holds history (more than one message), else 0;
`cache_creation_input_tokens = n // 8`; `input_tokens` the rest; `output_tokens = len(reply) // 4 + 1`.

In counting mode (`{"usage": "count"}` in `<record>/../fake.json`, written by `LiveClaude.run`
before the server starts) `n` is instead one fixed count of the request as the model sees it
(`model_count`: each system text, each tool's definition, every message's texts, tool calls,
tool results and thinking, counted with o200k_base, times 1.15 rounded up, plus a framing per
message), split the same way, and `output_tokens` the same count of the reply's blocks. That mode
also answers (in the newest prompt's text) "THINK" with a thinking block before the text,
"LONGREPLY" with a text of 4,000 characters, and "RUN: <command>" with the Bash call as before
(a command printing 10,000 characters makes the long tool output).
"""

from __future__ import annotations

import json
import math
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

if __package__:
    from ..live.fake_server import Handler as RecordingHandler
    from ..live.fake_server import marks, serve
else:  # run as a script (by launch.py)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))
    from fake_server import Handler as RecordingHandler  # type: ignore[import-not-found,no-redef]
    from fake_server import marks, serve  # type: ignore[no-redef]

TOOL_RE = re.compile(r"\b(?:(RUN|AGENT): ?(.+)|(READ|WRITE): ?(\S+))")
TOOL_NAMES = {"RUN": "Bash", "READ": "Read", "WRITE": "Write", "AGENT": "Agent"}
PREAMBLES = {"Bash": "I will run it.", "Read": "I will read it.", "Write": "I will write it.",
             "Agent": "I will ask a subagent."}
SUMMARY_HINTS = ("detailed summary of the conversation", "summary of the conversation so far",
                 "create a detailed summary", "<summary>")
TITLE_HINTS = ("title",)
SCALE = 1.15          # counting mode: the fake's tokens per o200k token (a tokenizer that is not Reprise's)
MESSAGE_FRAMING = 4   # counting mode: tokens added per message (the role and its markers)
LONG_REPLY_CHARS = 4_000
THINKING = ("Let me think this through step by step before answering: the user asked a question, "
            "the folder is small, and the answer should be short. ") * 3


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
    return texts


def _system_text(body: dict) -> str:
    return "\n".join(_texts(body.get("system")))


def prompt_text(message: dict) -> str:
    """A user message's own text: its text blocks, without system reminders."""
    parts = [text for text in _texts(message.get("content")) if not text.lstrip().startswith("<system-reminder>")]
    return "\n".join(parts)


def tool_results(message: dict) -> list[str]:
    found: list[str] = []
    content = message.get("content")
    if not isinstance(content, list):
        return found
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            inner = block.get("content")
            found.append("\n".join(_texts(inner)) if isinstance(inner, list) else str(inner or ""))
    return found


def last_user(messages: list[dict]) -> dict:
    """The newest `user` message (Claude Code may send `system` ones after it)."""
    return next((m for m in reversed(messages) if m.get("role") == "user"), {})


def request_kind(body: dict) -> str:
    messages = body.get("messages") or []
    last = last_user(messages)
    system = _system_text(body).lower()
    text = prompt_text(last)
    if tool_results(last):
        return "tool_result"
    lowered = text.lower()
    if any(hint in lowered for hint in SUMMARY_HINTS):
        return "summary"
    if "title" in system and ("session" in system or "conversation" in system) and not body.get("tools"):
        return "title"
    if "FAIL:" in text:
        return "fail"
    asked = TOOL_RE.search(text)
    if asked and any(tool.get("name") == TOOL_NAMES[asked.group(1) or asked.group(3)]
                     for tool in body.get("tools") or []):
        return "tool_use"
    return "text"


def tool_use(text: str, number: int) -> dict:
    asked = TOOL_RE.search(text)
    assert asked is not None
    verb, argument = (asked.group(1), asked.group(2).strip()) if asked.group(1) else (asked.group(3), asked.group(4))
    tool_input: dict[str, Any]
    if verb == "RUN":
        tool_input = {"command": argument, "description": "Run the command the user asked for"}
    elif verb == "READ":
        tool_input = {"file_path": argument}
    elif verb == "WRITE":
        tool_input = {"file_path": argument, "content": f"written by the fake model into {Path(argument).name}\n"}
    else:
        tool_input = {"description": "A task for a subagent", "prompt": argument, "subagent_type": "general-purpose",
                      "run_in_background": False}
    return {"type": "tool_use", "id": f"toolu_fake{number:04d}", "name": TOOL_NAMES[verb], "input": tool_input}


def reply_blocks(body: dict, number: int) -> tuple[list[dict], str]:
    """The content blocks of the reply to `body` and its stop reason."""
    messages = body.get("messages") or []
    last = last_user(messages)
    kind = request_kind(body)
    text = prompt_text(last)
    if kind == "tool_result":
        output = (tool_results(last) or [""])[0].strip().splitlines()
        return [{"type": "text", "text": f"The command printed {len(output)} lines; REPLYtoolresult."}], "end_turn"
    if kind == "tool_use":
        block = tool_use(text, number)
        return [{"type": "text", "text": PREAMBLES[block["name"]]}, block], "tool_use"
    if kind == "summary":
        words = marks("\n".join(prompt_text(m) for m in messages if m.get("role") == "user"))
        listed = ", ".join(f"MARK{w}" for w in words) or "none"
        return [{"type": "text", "text": (
            "<analysis>The user sent a few marked prompts.</analysis>\n<summary>\n"
            f"1. Primary Request and Intent: the user sent prompts marked {listed}.\n"
            "2. Pending Tasks: none.\n</summary>")}], "end_turn"
    if kind == "title":
        words = marks("\n".join(prompt_text(m) for m in messages if m.get("role") == "user"))
        title = f"Fake title {words[0]}" if words else "Fake title"
        return [{"type": "text", "text": json.dumps({"title": title})}], "end_turn"
    words = marks(text)
    if words:
        said = " ".join(f"Noted MARK{w}; my answer word is REPLY{w}." for w in words)
    else:
        said = "Done: the fake model answered."
    return [{"type": "text", "text": said}], "end_turn"


def usage_for(raw: bytes, body: dict, reply_chars: int) -> dict:
    n = len(raw) // 4
    cache_read = n // 2 if len(body.get("messages") or []) > 1 else 0
    cache_creation = n // 8
    return {"input_tokens": n - cache_read - cache_creation, "cache_creation_input_tokens": cache_creation,
            "cache_read_input_tokens": cache_read, "output_tokens": reply_chars // 4 + 1}


@cache
def _encoding():   # type: ignore[no-untyped-def]
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from core.tokens import get_encoding
    return get_encoding("o200k_base")


def o200k(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def block_texts(block: Any) -> list[str]:
    """What the model reads of one content block: its text, thinking, tool call or tool result.
    (Written apart from Reprise's own reading, core/sources/claude/request_log.py, on purpose: the
    fake is the truth the meter is checked against, so it does not borrow the meter's code.)"""
    if isinstance(block, str):
        return [block]
    if not isinstance(block, dict):
        return []
    kind = block.get("type")
    if kind == "text":
        return [str(block.get("text", ""))]
    if kind == "thinking":
        return [str(block.get("thinking", ""))]
    if kind == "redacted_thinking":
        return [str(block.get("data", ""))]
    if kind in ("tool_use", "server_tool_use"):
        return [str(block.get("name", "")), json.dumps(block.get("input", {}), sort_keys=True)]
    if kind == "tool_result":
        inner = block.get("content")
        if isinstance(inner, list):
            return [text for item in inner for text in block_texts(item)]
        return [str(inner or "")]
    return [json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True)]


def content_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [text for block in content or [] for text in block_texts(block)]


def model_count(body: dict) -> int:
    """The counting mode's one fixed count of a request as the model sees it."""
    tokens = sum(o200k(text) for text in content_texts(body.get("system")))
    tokens += sum(o200k(json.dumps(tool, sort_keys=True)) for tool in body.get("tools") or [])
    messages = body.get("messages") or []
    tokens += sum(o200k(text) for message in messages for text in content_texts(message.get("content")))
    return math.ceil(tokens * SCALE) + MESSAGE_FRAMING * len(messages)


def reply_count(content: list[dict]) -> int:
    """The counting mode's count of a reply's blocks (its output tokens)."""
    return math.ceil(sum(o200k(text) for block in content for text in block_texts(block)) * SCALE)


def counted_usage(body: dict, content: list[dict]) -> dict:
    n = model_count(body)
    cache_read = n // 2 if len(body.get("messages") or []) > 1 else 0
    cache_creation = n // 8
    return {"input_tokens": n - cache_read - cache_creation, "cache_creation_input_tokens": cache_creation,
            "cache_read_input_tokens": cache_read, "output_tokens": reply_count(content)}


def long_reply() -> str:
    sentence = "This is a long answer that explains the folder in detail, one sentence after another. "
    text = ""
    while len(text) < LONG_REPLY_CHARS:
        text += sentence
    return text[:LONG_REPLY_CHARS]


def counting_blocks(body: dict, content: list[dict]) -> list[dict]:
    """Counting mode: the scripted reply, made long or preceded by thinking when the prompt asks."""
    text = prompt_text(last_user(body.get("messages") or []))
    if request_kind(body) != "text":
        return content
    blocks = list(content)
    if "LONGREPLY" in text:
        blocks = [{"type": "text", "text": long_reply()}]
    if "THINK" in text:
        blocks = [{"type": "thinking", "thinking": THINKING, "signature": "fake-signature-" + "0" * 32}, *blocks]
    return blocks


def sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def stream_events(message: dict) -> list[bytes]:
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None, stop_sequence=None,
                 usage=dict(usage, output_tokens=1))
    events = [sse("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "thinking":
            events.append(sse("content_block_start", {"type": "content_block_start", "index": index,
                                                      "content_block": {"type": "thinking", "thinking": "",
                                                                        "signature": ""}}))
            events.append(sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                      "delta": {"type": "thinking_delta",
                                                                "thinking": block["thinking"]}}))
            events.append(sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                      "delta": {"type": "signature_delta",
                                                                "signature": block["signature"]}}))
        elif block["type"] == "text":
            events.append(sse("content_block_start", {"type": "content_block_start", "index": index,
                                                      "content_block": {"type": "text", "text": ""}}))
            events.append(sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                      "delta": {"type": "text_delta", "text": block["text"]}}))
        else:
            events.append(sse("content_block_start", {"type": "content_block_start", "index": index,
                                                      "content_block": dict(block, input={})}))
            events.append(sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                      "delta": {"type": "input_json_delta",
                                                                "partial_json": json.dumps(block["input"])}}))
        events.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(sse("message_delta", {"type": "message_delta",
                                        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                        "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(sse("message_stop", {"type": "message_stop"}))
    return events


class Handler(RecordingHandler):
    """The Fractal fake's recording handler (its counter, lock, quiet log, JSON replies), answering
    the Anthropic Messages API instead."""

    protocol_version = "HTTP/1.1"

    @classmethod
    def counting(cls) -> bool:
        """Whether this server reports counted usage (`{"usage": "count"}` in `<record>/../fake.json`)."""
        settings = cls.record.parent / "fake.json"
        return settings.exists() and json.loads(settings.read_text()).get("usage") == "count"

    def do_GET(self) -> None:
        self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": "no such endpoint"}})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.lock:
            number = next(self.counter)
            (self.record / f"{number:04d}.json").write_bytes(raw)
            (self.record / f"{number:04d}.path").write_text(self.path)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        path = self.path.split("?", 1)[0]
        if path.endswith("/count_tokens"):
            self._send(200, {"input_tokens": model_count(body) if self.counting() else len(raw) // 4})
            return
        if not path.endswith("/v1/messages"):
            self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
            return
        if request_kind(body) == "fail":
            self._send(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                        "message": "the fake server was asked to fail"}})
            return
        content, stop = reply_blocks(body, number)
        if self.counting():
            content = counting_blocks(body, content)
            usage = counted_usage(body, content)
        else:
            reply_chars = sum(len(b.get("text", "")) + len(json.dumps(b.get("input", ""))) for b in content)
            usage = usage_for(raw, body, reply_chars)
        message = {"id": f"msg_fake{number:04d}", "type": "message", "role": "assistant",
                   "model": body.get("model", "claude-fake"), "content": content, "stop_reason": stop,
                   "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            self._send(200, message)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in stream_events(message):
            self.wfile.write(event)
        self.wfile.flush()
        self.close_connection = True


if __name__ == "__main__":
    serve(Handler)
