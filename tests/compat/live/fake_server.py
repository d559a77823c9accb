"""A fake OpenAI-compatible chat-completions server that records every request.

Started inside the test's network namespace (by launch.py), on 127.0.0.1. Each POST to
`.../chat/completions` is saved as `<record>/NNNN.json` (the request body as received) and
answered in DSPy's ChatAdapter reply format, with the output fields the request's system
message asks for: the RLM's action call (`reasoning`, `code`) gets code that calls
`SUBMIT(response=..., changed_files=[])`; any other call (the fallback extraction Fractal makes
after max iterations) gets each of its fields filled. `FAKE_REPLY` (a JSON object in the
environment, field name -> value) overrides the replies; `FAKE_MODE=loop` answers the action
call with code that never submits, so the turn reaches max iterations.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

MARK_RE = re.compile(r"\bMARK(\w+)")
FIELDS_RE = re.compile(r"Your output fields are:\n(.*?)(?:\n\n|\Z)", re.DOTALL)
FIELD_RE = re.compile(r"^\d+\. `([^`]+)`", re.MULTILINE)


def output_fields(body: dict) -> list[str]:
    system = next((m.get("content") for m in body.get("messages", []) if m.get("role") == "system"), "") or ""
    if isinstance(system, list):
        system = "".join(part.get("text", "") for part in system if isinstance(part, dict))
    match = FIELDS_RE.search(system)
    return FIELD_RE.findall(match.group(1)) if match else []


def marks(text: str) -> list[str]:
    """The words of each `MARK<word>` in `text`, once each, in order (the compat scenarios' prompts
    carry them, and the fake servers' replies quote them)."""
    return list(dict.fromkeys(MARK_RE.findall(text)))


def reply_text(fields: list[str], overrides: dict[str, str], loop: bool) -> str:
    response = overrides.get("response", "Done: the fake model answered.")
    code = ('print("still working")' if loop else
            f"SUBMIT(response={json.dumps(response)}, changed_files=[])")
    values = {"reasoning": "The request is clear; submit the answer.", "code": f"```python\n{code}\n```",
              "response": response, "changed_files": "[]"}
    values.update({k: v for k, v in overrides.items() if k != "response"})
    parts = [f"[[ ## {name} ## ]]\n{values.get(name, '')}" for name in fields or ["reasoning", "code"]]
    return "\n\n".join(parts) + "\n\n[[ ## completed ## ]]"


class Handler(BaseHTTPRequestHandler):
    counter = itertools.count(1)
    record: Path
    overrides: ClassVar[dict[str, str]] = {}
    loop = False
    lock = threading.Lock()

    def log_message(self, *args) -> None:  # quiet: the test reads the records instead
        pass

    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": [{"id": "gpt-5", "object": "model"}]})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.lock:
            number = next(self.counter)
            (self.record / f"{number:04d}.json").write_bytes(raw)
        body = json.loads(raw)
        fields = output_fields(body)
        is_action = "code" in fields
        text = reply_text(fields, self.overrides, self.loop and is_action)
        prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
        answer = {"id": f"chatcmpl-fake-{number}", "object": "chat.completion", "created": int(time.time()),
                  "model": body.get("model", "gpt-5"),
                  "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": text}}],
                  # made-up figures (a fake server cannot know); request characters are real
                  "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(text) // 4,
                            "total_tokens": prompt_chars // 4 + len(text) // 4}}
        self._send(200, answer)

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(handler: type[Handler]) -> None:
    """Parse `--port`, `--record`, `--ready`; serve `handler` on 127.0.0.1, recording into the record
    folder, and write this pid into the ready file once listening (launch.py waits for it)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--ready", type=Path, required=True)
    args = parser.parse_args()
    args.record.mkdir(parents=True, exist_ok=True)
    handler.record = args.record
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    args.ready.write_text(str(os.getpid()))
    server.serve_forever()


def main() -> None:
    Handler.overrides = json.loads(os.environ.get("FAKE_REPLY") or "{}")
    Handler.loop = os.environ.get("FAKE_MODE") == "loop"
    serve(Handler)


if __name__ == "__main__":
    main()
