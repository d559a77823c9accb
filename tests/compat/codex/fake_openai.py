"""A fake OpenAI Responses server that records every request (for the real Codex CLI).

Started inside the test's network namespace (by tests/compat/live/launch.py with this file as
its server), on 127.0.0.1. Every request is saved as `<record>/NNNN.json` (the body as received;
`NNNN.path` beside it holds the method and path) and answered:

- `POST /v1/responses` as Responses SSE: `response.created`, for each output item
  `response.output_item.added`, (`response.output_text.delta` for a message), and
  `response.output_item.done`, then `response.completed` with `usage`; then the connection is
  closed (`Connection: close`: the stream has no length).
- anything else: HTTP 404 with an OpenAI error body.

The reply is scripted from the request's `input` (`reply_items`), looking at its newest item and
its newest `user` message:
- the newest item a `function_call_output`: a text reply counting the output's lines (never quoting
  them, so a word of the output is found in the tool output only);
- "RUN: <command>" (to the end of the line) in the newest user message, and a shell tool among
  the request's tools: a `function_call` of that tool running the command;
- a compaction request (Codex's summarisation prompt): a summary naming the MARK words of every
  user message;
- "FAIL:" in the newest user message: HTTP 400 `invalid_request_error`;
- "SLOW:" in the newest user message: the stream starts (`response.created`), then nothing for
  `SLOW_S` seconds before the reply (time for a test to interrupt the client mid-turn);
- otherwise a text reply quoting each `MARK<word>` of the prompt and adding `REPLY<word>` (a word
  found only in the reply, for search tests).

Counting mode (the meter's compat tests, issue 25): a request to `/count/v1/responses` (a Codex
home whose provider's base_url is `.../count/v1`) is answered the same way, but its usage is one
fixed count of the request as the model sees it (`request_tokens`): o200k_base of the
instructions, of each tool's definition (its JSON), of every input item's text (a message's
parts, a function call's name and arguments, a tool output, a reasoning item's summary and the
text its `encrypted_content` stands for, any other item's JSON less its id), plus `FRAME` tokens an
item or tool. `input_tokens` is that count, of which `cached_tokens` is the count of every item
but the newest user message and what follows it; `output_tokens` is the same count of the reply's
items plus its reasoning tokens (`output_tokens_details.reasoning_tokens`). In the newest user
message, "THINK" makes the reply start with a reasoning item (a summary and `encrypted_content`),
"LONGREPLY" makes its text 4,000 characters.

Usage is made up but derived from the request: `input_tokens = len(body) // 4` (so the measured
context of a turn is exactly the size of the request that produced it, over four), of which
`cached_tokens = input_tokens // 2` when the request holds an assistant item; `output_tokens =
len(reply) // 4 + 1`. "BIGUSAGE" in the newest user message adds `BIG_TOKENS` input tokens (to
push a session over `model_auto_compact_token_limit`).
"""

from __future__ import annotations

import base64
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

if __package__:
    from ..live.fake_server import Handler as RecordingHandler
    from ..live.fake_server import marks, serve
else:  # run as a script (by launch.py)
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))    # the repository: core.tokens
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))
    from fake_server import Handler as RecordingHandler  # type: ignore[import-not-found,no-redef]
    from fake_server import marks, serve  # type: ignore[no-redef]

RUN_RE = re.compile(r"\bRUN: ?(.+)")
BIG_TOKENS = 120_000
SLOW_S = 60
COMPACTION_HINTS = ("context checkpoint compaction", "handoff summary", "summarize the conversation",
                    "summary of the conversation")
# the shell tools Codex may offer, and how each takes a command line
SHELL_TOOLS = ("shell_command", "exec_command", "shell")
CODE_TOOL = "exec"
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
COUNT_PREFIX = "/count"       # the counting mode's path prefix: POST /count/v1/responses
ENCODING = "o200k_base"
FRAME = 4                     # tokens of framing an item or tool, in the counting mode
LONG_REPLY_CHARS = 4_000
ENCRYPTED_PREFIX = "fakeenc:"


def part_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [str(part.get("text", "")) for part in content or []
            if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text")]


def message_text(item: dict) -> str:
    return "\n".join(part_texts(item.get("content")))


def is_injected(text: str) -> bool:
    """Codex's own user-role context (environment, AGENTS.md, permissions), not a prompt."""
    stripped = text.lstrip()
    return stripped.startswith("<") and not stripped.startswith("<user")


def user_messages(body: dict) -> list[str]:
    """The text of each user message that is a prompt (not Codex's injected context), in order."""
    return [text for item in body.get("input") or [] if isinstance(item, dict)
            and item.get("type", "message") == "message" and item.get("role") == "user"
            for text in [message_text(item)] if text and not is_injected(text)]


def last_prompt(body: dict) -> str:
    prompts = user_messages(body)
    return prompts[-1] if prompts else ""


def _flatten(tools: list) -> list[dict]:
    found = []
    for tool in tools:
        if isinstance(tool, dict):
            found.append(tool)
            found.extend(_flatten(tool.get("tools") or []))
    return found


def tools_of(body: dict) -> list[dict]:
    """Every tool the request offers: its `tools`, and those of `additional_tools` input items
    (where Codex puts them), namespaces opened."""
    listed = list(body.get("tools") or [])
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            listed.extend(item.get("tools") or [])
    return _flatten(listed)


def shell_tool(body: dict) -> str | None:
    """The tool a command runs through: Codex's code-mode `exec` (a custom tool taking JavaScript
    that calls `tools.exec_command`), else a function tool that takes a command."""
    tools = tools_of(body)
    if any(t.get("type") == "custom" and t.get("name") == CODE_TOOL for t in tools):
        return CODE_TOOL
    names = [t.get("name") for t in tools if t.get("type") == "function"]
    return next((name for name in SHELL_TOOLS if name in names), None)


def output_text(item: dict) -> str:
    output = item.get("output")
    if isinstance(output, list):
        return "\n".join(part_texts(output))
    if isinstance(output, dict):
        return str(output.get("content", ""))
    return str(output or "")


def request_kind(body: dict) -> str:
    items = [item for item in body.get("input") or [] if isinstance(item, dict)]
    if items and items[-1].get("type") in OUTPUT_TYPES:
        return "tool_result"
    everything = (str(body.get("instructions") or "") + "\n" + "\n".join(
        message_text(item) for item in items[-2:])).lower()
    if any(hint in everything for hint in COMPACTION_HINTS):
        return "summary"
    prompt = last_prompt(body)
    if "FAIL:" in prompt:
        return "fail"
    if "SLOW:" in prompt:
        return "slow"
    if RUN_RE.search(prompt) and shell_tool(body):
        return "function_call"
    return "text"


def shell_arguments(tool: str, command: str) -> dict:
    if tool == "exec_command":
        return {"cmd": command}
    if tool == "shell_command":
        return {"command": command}
    return {"command": ["bash", "-lc", command]}


def tool_call(tool: str, command: str, number: int) -> dict:
    ids = {"id": f"fc_fake{number:04d}", "call_id": f"call_fake{number:04d}", "status": "completed"}
    if tool == CODE_TOOL:
        script = f"const done = await tools.exec_command({json.dumps({'cmd': command})});\ntext(done.output);\n"
        return {"type": "custom_tool_call", **ids, "name": tool, "input": script}
    return {"type": "function_call", **ids, "name": tool, "arguments": json.dumps(shell_arguments(tool, command))}


def text_item(text: str, number: int) -> dict:
    return {"type": "message", "id": f"msg_fake{number:04d}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def reply_items(body: dict, number: int) -> list[dict]:
    """The output items of the reply to `body`."""
    kind = request_kind(body)
    prompt = last_prompt(body)
    if kind == "tool_result":
        lines = output_text(body["input"][-1]).strip().splitlines()
        return [text_item(f"The command printed {len(lines)} lines; REPLYtoolresult.", number)]
    if kind == "function_call":
        tool = shell_tool(body)
        assert tool is not None
        found = RUN_RE.search(prompt)
        assert found is not None
        return [text_item("I will run it.", number), tool_call(tool, found.group(1).strip(), number)]
    if kind == "summary":
        words = [w for text in user_messages(body) for w in marks(text)]
        listed = ", ".join(f"MARK{w}" for w in dict.fromkeys(words)) or "none"
        return [text_item(f"SUMMARYfake: the user sent prompts marked {listed}. Pending tasks: none.", number)]
    words = marks(prompt)
    said = " ".join(f"Noted MARK{w}; my answer word is REPLY{w}." for w in words) or "Done: the fake model answered."
    return [text_item(said, number)]


def usage_for(raw: bytes, body: dict, reply_chars: int) -> dict:
    items = [item for item in body.get("input") or [] if isinstance(item, dict)]
    input_tokens = len(raw) // 4 + (BIG_TOKENS if "BIGUSAGE" in last_prompt(body) else 0)
    history = any(item.get("role") == "assistant" or item.get("type") in ("function_call", "custom_tool_call")
                  for item in items)
    cached = input_tokens // 2 if history else 0
    output_tokens = reply_chars // 4 + 1
    return {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens}


def sse(data: dict) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def stream_events(response_id: str, items: list[dict], usage: dict, model: str) -> list[bytes]:
    base = {"id": response_id, "object": "response", "model": model}
    events = [sse({"type": "response.created", "response": dict(base, status="in_progress", output=[])})]
    for index, item in enumerate(items):
        if item["type"] == "message":
            events.append(sse({"type": "response.output_item.added", "output_index": index,
                               "item": dict(item, status="in_progress", content=[])}))
            events.append(sse({"type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                               "content_index": 0, "delta": item["content"][0]["text"]}))
        else:
            events.append(sse({"type": "response.output_item.added", "output_index": index,
                               "item": dict(item, status="in_progress")}))
        events.append(sse({"type": "response.output_item.done", "output_index": index, "item": item}))
    events.append(sse({"type": "response.completed",
                       "response": dict(base, status="completed", output=items, usage=usage)}))
    return events


def reply_chars(items: list[dict]) -> int:
    return sum(len(item.get("arguments", "")) + len(item.get("input", ""))
               + sum(len(part.get("text", "")) for part in item.get("content", [])) for item in items)


def count(text: str) -> int:
    from core.tokens import count_tokens
    return count_tokens(text, ENCODING) if text else 0


def reasoning_text(item: dict) -> str:
    """The reasoning an item's `encrypted_content` stands for (the fake's own encoding), or ""."""
    encrypted = item.get("encrypted_content")
    if isinstance(encrypted, str) and encrypted.startswith(ENCRYPTED_PREFIX):
        return base64.b64decode(encrypted[len(ENCRYPTED_PREFIX):]).decode()
    return ""


def item_text(item: dict) -> str:
    """The text of one input or output item as the model sees it (the counting mode)."""
    kind = item.get("type", "message")
    if kind == "message":
        return message_text(item)
    if kind == "function_call":
        return f"{item.get('name', '')}\n{item.get('arguments', '')}"
    if kind == "custom_tool_call":
        return f"{item.get('name', '')}\n{item.get('input', '')}"
    if kind in OUTPUT_TYPES:
        return output_text(item)
    if kind == "reasoning":
        summary = "\n".join(str(part.get("text", "")) for part in item.get("summary") or [] if isinstance(part, dict))
        return "\n".join(text for text in (summary, reasoning_text(item)) if text)
    if kind == "additional_tools":
        return ""     # its tools are counted one by one
    return json.dumps({key: value for key, value in item.items() if key != "id"}, sort_keys=True)


def tool_tokens(tool: dict) -> int:
    return count(json.dumps(tool, sort_keys=True, separators=(",", ":"))) + FRAME


def item_tokens(item: dict) -> int:
    listed = item.get("tools") if item.get("type") == "additional_tools" else None
    tools = sum(tool_tokens(tool) for tool in listed or [] if isinstance(tool, dict))
    return count(item_text(item)) + FRAME + tools


def request_tokens(body: dict) -> int:
    """The counting mode's one count of a request as the model sees it."""
    return (count(str(body.get("instructions") or ""))
            + sum(tool_tokens(tool) for tool in body.get("tools") or [] if isinstance(tool, dict))
            + sum(item_tokens(item) for item in body.get("input") or [] if isinstance(item, dict)))


def newest_prompt_at(items: list) -> int:
    """The index of the newest user prompt among `items` (len(items) when there is none)."""
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if isinstance(item, dict) and item.get("type", "message") == "message" and item.get("role") == "user" \
                and not is_injected(message_text(item)):
            return index
    return len(items)


def counted_usage(body: dict, items: list[dict]) -> dict:
    """The counting mode's usage: the request's count (cached: all before the newest prompt) and the reply's."""
    inputs = [item for item in body.get("input") or [] if isinstance(item, dict)]
    total = request_tokens(body)
    fresh = sum(item_tokens(item) for item in inputs[newest_prompt_at(inputs):])
    reasoning = sum(count(reasoning_text(item)) for item in items if item.get("type") == "reasoning")
    output = sum(count(item_text(item)) + FRAME for item in items if item.get("type") != "reasoning") + reasoning
    return {"input_tokens": total, "input_tokens_details": {"cached_tokens": total - fresh},
            "output_tokens": output, "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": total + output}


def reasoning_item(number: int) -> dict:
    thought = f"The user wants an answer; I think it through step {number} before I reply. " * 6
    return {"type": "reasoning", "id": f"rs_fake{number:04d}",
            "summary": [{"type": "summary_text", "text": f"**Thinking {number}** about the answer"}],
            "encrypted_content": ENCRYPTED_PREFIX + base64.b64encode(thought.encode()).decode()}


def long_reply(number: int) -> str:
    sentence = f"Here is the long answer {number}, line by line, with words to count. "
    return (sentence * (LONG_REPLY_CHARS // len(sentence) + 1))[:LONG_REPLY_CHARS]


class Handler(RecordingHandler):
    """The Fractal fake's recording handler (its counter, lock, quiet log, JSON replies), answering
    the OpenAI Responses API instead."""

    protocol_version = "HTTP/1.1"

    def _record(self, raw: bytes) -> int:
        with self.lock:
            number = next(self.counter)
            (self.record / f"{number:04d}.json").write_bytes(raw)
            (self.record / f"{number:04d}.path").write_text(f"{self.command} {self.path}")
        return number

    def _not_found(self) -> None:
        self._send(404, {"error": {"type": "invalid_request_error", "code": "not_found",
                                   "message": f"the fake server has no {self.command} {self.path}"}})

    def do_GET(self) -> None:
        self._record(b"{}")
        self._not_found()

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        number = self._record(raw)
        if self.path.split("?", 1)[0].removeprefix(COUNT_PREFIX) != "/v1/responses":
            self._not_found()
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        if request_kind(body) == "fail":
            self._send(400, {"error": {"type": "invalid_request_error", "code": "fake_failure",
                                       "message": "the fake server was asked to fail"}})
            return
        items = reply_items(body, number)
        counting = self.path.startswith(COUNT_PREFIX + "/")
        if counting:
            prompt = last_prompt(body)
            if "LONGREPLY" in prompt and items and items[-1]["type"] == "message" and request_kind(body) == "text":
                items[-1] = text_item(long_reply(number), number)
            if "THINK" in prompt:
                items.insert(0, reasoning_item(number))
        usage = counted_usage(body, items) if counting else usage_for(raw, body, reply_chars(items))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        events = stream_events(f"resp_fake{number:04d}", items, usage, str(body.get("model", "gpt-fake")))
        if request_kind(body) == "slow":
            self.wfile.write(events[0])
            self.wfile.flush()
            time.sleep(SLOW_S)
        for event in events:
            self.wfile.write(event)
        self.wfile.flush()
        self.close_connection = True


if __name__ == "__main__":
    serve(Handler)
