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

Usage is made up but derived from the request: `input_tokens = len(body) // 4` (so the measured
context of a turn is exactly the size of the request that produced it, over four), of which
`cached_tokens = input_tokens // 2` when the request holds an assistant item; `output_tokens =
len(reply) // 4 + 1`. "BIGUSAGE" in the newest user message adds `BIG_TOKENS` input tokens (to
push a session over `model_auto_compact_token_limit`).
"""

from __future__ import annotations

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
        if self.path.split("?", 1)[0] != "/v1/responses":
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
        usage = usage_for(raw, body, reply_chars(items))
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
