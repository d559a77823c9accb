"""A fake Gemini API server that records every request (for the real Gemini CLI).

Started inside the test's network namespace (by tests/compat/live/launch.py with this file as its
server), on 127.0.0.1; the client reaches it through `GOOGLE_GEMINI_BASE_URL`. Every request is
saved as `<record>/NNNN.json` (the body as received; `NNNN.path` beside it holds the method and
the path with its query) and answered:

- `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`: the turn, as server-sent events
  (`data: {candidates, usageMetadata, modelVersion}` then a blank line; one chunk a part, the
  usage and `finishReason: STOP` on the last), then the connection is closed;
- `POST /v1beta/models/<model>:generateContent`: one JSON answer of the same shape, for the
  client's side calls: the model router (its request asks for `complexity_score`) gets
  `{"complexity_reasoning", "complexity_score": ROUTER_SCORE}` as its text, any other side call
  (a title, a summary) a short text naming the MARK words it was shown;
- anything else: HTTP 404 with a Google error body.

The turn's reply is scripted from the request's `contents` (`reply_parts`), looking at the newest
content and the newest prompt (the newest `user` text that is not the client's injected context,
such as its `<session_context>`):
- the newest content holds `functionResponse` parts: a text counting the output's lines (never
  quoting them, so a word of the output is found in the tool output only);
- "RUN: <command>" (to the end of the line) in the newest prompt, and `run_shell_command` among
  the request's function declarations: the text "I will run it." and a `functionCall` of it;
- "FAIL:" in the newest prompt: HTTP 400 `INVALID_ARGUMENT` (the client retries nothing on a 400);
- otherwise a text quoting each `MARK<word>` of the prompt and adding `REPLY<word>` (a word found
  only in the reply, for search tests). "THINK" in the prompt puts a thought part first;
  "LONGREPLY" makes the text 4,000 characters.

Usage is the fake's own count of the request, o200k_base (`request_tokens`, which the meter's compat
tests reproduce from the session file):
- `promptTokenCount` = count(the `systemInstruction` parts' texts, joined by "\\n")
  + for each function declaration of `tools`: count(its JSON, keys sorted, separators "," ":") + FRAME
  + for each content of `contents`: FRAME + for each of its parts count(`part_text(part)`);
  `part_text`: a part's `text` (a thought part too); a `functionCall` as "name\\n" + its `args` as
  JSON; a `functionResponse` as "name\\n" + its `response` as JSON; any other part its JSON without
  `thoughtSignature` (JSON always keys sorted, separators "," ":", ASCII-escaped as Python's default);
- `cachedContentTokenCount`: the part of that count before the newest prompt's content (the
  system instruction and tools included), 0 when nothing came before it;
- `candidatesTokenCount`: FRAME + count(part_text) of each non-thought reply part;
  `thoughtsTokenCount`: count of the thought parts' texts (absent without one);
  `totalTokenCount`: the three summed.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

if __package__:
    from ..codex.fake_openai import Handler as RecordingHandler
    from ..live.fake_server import marks, serve
else:  # run as a script (by launch.py)
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))    # the repository: core.tokens
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codex"))
    from fake_openai import Handler as RecordingHandler  # type: ignore[import-not-found,no-redef]
    from fake_server import marks, serve  # type: ignore[no-redef]

RUN_RE = re.compile(r"\bRUN: ?(.+)")
SHELL_TOOL = "run_shell_command"
ROUTER_HINT = "complexity_score"
ROUTER_SCORE = 80
ENCODING = "o200k_base"
FRAME = 4                     # tokens of framing a content or a function declaration
LONG_REPLY_CHARS = 4_000
API_PREFIX = "/v1beta/models/"
STREAM = ":streamGenerateContent"
GENERATE = ":generateContent"


def dumps(value: Any) -> str:
    """JSON as the fake counts it: keys sorted, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def count(text: str) -> int:
    from core.tokens import count_tokens
    return count_tokens(text, ENCODING) if text else 0


def parts_of(content: Any) -> list[dict]:
    if not isinstance(content, dict):
        return []
    return [part for part in content.get("parts") or [] if isinstance(part, dict)]


def part_text(part: dict) -> str:
    """The text of one part as the fake counts it."""
    if isinstance(part.get("text"), str):
        return str(part["text"])
    call = part.get("functionCall")
    if isinstance(call, dict):
        return f"{call.get('name', '')}\n{dumps(call.get('args') or {})}"
    response = part.get("functionResponse")
    if isinstance(response, dict):
        return f"{response.get('name', '')}\n{dumps(response.get('response') or {})}"
    return dumps({key: value for key, value in part.items() if key != "thoughtSignature"})


def texts(content: Any) -> str:
    """The `text` parts of a content (thoughts left out), joined by newlines."""
    return "\n".join(str(part["text"]) for part in parts_of(content)
                     if isinstance(part.get("text"), str) and not part.get("thought"))


def system_text(body: dict) -> str:
    system = body.get("systemInstruction")
    if isinstance(system, str):
        return system
    return "\n".join(str(part.get("text", "")) for part in parts_of(system))


def declarations(body: dict) -> list[dict]:
    """Every function declaration the request offers."""
    return [declaration for tool in body.get("tools") or [] if isinstance(tool, dict)
            for declaration in tool.get("functionDeclarations") or [] if isinstance(declaration, dict)]


def contents(body: dict) -> list[dict]:
    return [content for content in body.get("contents") or [] if isinstance(content, dict)]


def is_injected(text: str) -> bool:
    """The client's own user-role context (`<session_context>` and the like), not a prompt."""
    return text.lstrip().startswith("<")


def prompt_parts(content: dict) -> list[str]:
    """The prompts a content holds: its `user` text parts that are not the client's injected
    context (the client sends its `<session_context>` and the first prompt as two parts of one content)."""
    if content.get("role") != "user":
        return []
    return [str(part["text"]) for part in parts_of(content)
            if isinstance(part.get("text"), str) and not part.get("thought") and part["text"].strip()
            and not is_injected(part["text"])]


def prompts(body: dict) -> list[str]:
    """The text of each prompt, in order."""
    return [text for content in contents(body) for text in prompt_parts(content)]


def last_prompt(body: dict) -> str:
    found = prompts(body)
    return found[-1] if found else ""


def newest_prompt_at(items: list[dict]) -> int:
    """The index of the content holding the newest prompt among `items` (len(items) when none does)."""
    for index in range(len(items) - 1, -1, -1):
        if prompt_parts(items[index]):
            return index
    return len(items)


def content_tokens(content: dict) -> int:
    return FRAME + sum(count(part_text(part)) for part in parts_of(content))


def request_tokens(body: dict) -> int:
    """The fake's one count of a request as the model sees it (see the module's docstring)."""
    return (count(system_text(body))
            + sum(count(dumps(declaration)) + FRAME for declaration in declarations(body))
            + sum(content_tokens(content) for content in contents(body)))


def cached_tokens(body: dict) -> int:
    """The part of `request_tokens` before the newest prompt's content (0 with nothing before it)."""
    items = contents(body)
    at = newest_prompt_at(items)
    if at == 0:
        return 0
    fresh = sum(content_tokens(content) for content in items[at:])
    return request_tokens(body) - fresh


def tool_output(part: dict) -> str:
    """What a `functionResponse` part says: its response's `output` text, else the response as JSON."""
    response = part["functionResponse"].get("response") if isinstance(part.get("functionResponse"), dict) else None
    if isinstance(response, dict) and isinstance(response.get("output"), str):
        return str(response["output"])
    return dumps(response or {})


def is_router(body: dict) -> bool:
    return ROUTER_HINT in dumps(body)


def request_kind(body: dict) -> str:
    """What the turn's reply is: tool_result, fail, function_call or text."""
    items = contents(body)
    if items and any("functionResponse" in part for part in parts_of(items[-1])):
        return "tool_result"
    prompt = last_prompt(body)
    if "FAIL:" in prompt:
        return "fail"
    if RUN_RE.search(prompt) and any(d.get("name") == SHELL_TOOL for d in declarations(body)):
        return "function_call"
    return "text"


def long_reply(number: int) -> str:
    sentence = f"Here is the long answer {number}, line by line, with words to count. "
    return (sentence * (LONG_REPLY_CHARS // len(sentence) + 1))[:LONG_REPLY_CHARS]


def reply_parts(body: dict, number: int) -> list[dict]:
    """The parts of the turn's reply to `body`."""
    kind = request_kind(body)
    prompt = last_prompt(body)
    if kind == "tool_result":
        outputs = [tool_output(part) for part in parts_of(contents(body)[-1]) if "functionResponse" in part]
        lines = sum(len(output.strip().splitlines()) for output in outputs)
        return [{"text": f"The command printed {lines} lines; REPLYtoolresult."}]
    if kind == "function_call":
        found = RUN_RE.search(prompt)
        assert found is not None
        command = found.group(1).strip()
        return [{"text": "I will run it."},
                {"functionCall": {"name": SHELL_TOOL, "args": {"command": command,
                                                               "description": "Run the command the user gave."}}}]
    words = marks(prompt)
    said = " ".join(f"Noted MARK{w}; my answer word is REPLY{w}." for w in words) or "Done: the fake model answered."
    if "LONGREPLY" in prompt:
        said = long_reply(number)
    parts: list[dict] = [{"text": said}]
    if "THINK" in prompt:
        thought = f"**Thinking {number}** The user wants an answer; I think it through before I reply."
        parts.insert(0, {"text": thought, "thought": True})
    return parts


def side_text(body: dict) -> str:
    """The answer to a side call (`:generateContent`): the router's JSON, or a short title."""
    if is_router(body):
        return dumps({"complexity_reasoning": "The fake router rates every request the same.",
                      "complexity_score": ROUTER_SCORE})
    seen = [word for text in prompts(body) for word in marks(text)]
    if not seen:
        seen = marks("\n".join(texts(content) for content in contents(body)))
    listed = " ".join(f"MARK{word}" for word in dict.fromkeys(seen)) or "nothing marked"
    return f"Fake title about {listed}"


def usage_for(body: dict, reply: list[dict]) -> dict:
    prompt_tokens = request_tokens(body)
    thoughts = sum(count(str(part.get("text", ""))) for part in reply if part.get("thought"))
    candidates = FRAME + sum(count(part_text(part)) for part in reply if not part.get("thought"))
    usage = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": candidates,
             "totalTokenCount": prompt_tokens + candidates + thoughts}
    cached = cached_tokens(body)
    if cached:
        usage["cachedContentTokenCount"] = cached
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def model_of(path: str) -> str:
    """The model a request's path names (`/v1beta/models/<model>:<method>`)."""
    rest = path.split("?", 1)[0].removeprefix(API_PREFIX)
    return rest.split(":", 1)[0] or "gemini-fake"


def chunk(parts: list[dict], model: str, *, usage: dict | None = None, last: bool = False) -> dict:
    candidate: dict = {"content": {"role": "model", "parts": parts}, "index": 0}
    if last:
        candidate["finishReason"] = "STOP"
    answer: dict = {"candidates": [candidate], "modelVersion": model, "responseId": "fake-response"}
    if usage is not None:
        answer["usageMetadata"] = usage
    return answer


def stream_chunks(parts: list[dict], usage: dict, model: str) -> list[bytes]:
    """The SSE events of a streamed reply: one chunk a part, the usage and finish on the last."""
    events = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        data = chunk([part], model, usage=usage if last else None, last=last)
        events.append(f"data: {json.dumps(data, separators=(',', ':'))}\n\n".encode())
    return events


class Handler(RecordingHandler):
    """The Codex fake's recording handler (each request saved as NNNN.json with its NNNN.path, HTTP/1.1,
    JSON replies), answering the Gemini API instead."""

    def _error(self, status: int, state: str, message: str) -> None:
        self._send(status, {"error": {"code": status, "message": message, "status": state}})

    def do_GET(self) -> None:
        self._record(b"{}")
        self._error(404, "NOT_FOUND", f"the fake server has no GET {self.path}")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        number = self._record(raw)
        path = self.path.split("?", 1)[0]
        if not path.startswith(API_PREFIX) or not path.endswith((STREAM, GENERATE)):
            self._error(404, "NOT_FOUND", f"the fake server has no POST {self.path}")
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        model = model_of(self.path)
        if path.endswith(GENERATE):
            parts = [{"text": side_text(body)}]
            self._send(200, chunk(parts, model, usage=usage_for(body, parts), last=True))
            return
        if request_kind(body) == "fail":
            self._error(400, "INVALID_ARGUMENT", "the fake server was asked to fail")
            return
        parts = reply_parts(body, number)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in stream_chunks(parts, usage_for(body, parts), model):
            self.wfile.write(event)
        self.wfile.flush()
        self.close_connection = True


if __name__ == "__main__":
    serve(Handler)
