"""A fake `codex` for the send tests: logs its argv, stdin, cwd and CODEX_HOME to $FAKE_CODEX_LOG, and
for `exec ... resume ID -` appends one turn to that session's rollout the way Codex 0.171.0 writes it
(task_started, the prompt as a response_item and an item_completed UserMessage, the reply, a
token_count whose last input is 4,321, task_complete), then prints the `--json` events `codex exec`
prints. A message containing FAILNOW gets a `turn.failed` and exit status 1, and no turn."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

STAMP = "2026-12-01T20:00:00.000Z"


def line(kind: str, payload: dict) -> str:
    return json.dumps({"timestamp": STAMP, "type": kind, "payload": payload}, separators=(",", ":"),
                      ensure_ascii=False) + "\n"


def main() -> int:
    args = sys.argv[1:]
    message = sys.stdin.read()
    home = os.environ.get("CODEX_HOME", "")
    with open(os.environ["FAKE_CODEX_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"argv": args, "stdin": message, "cwd": os.getcwd(), "codex_home": home}) + "\n")
    session_id = args[args.index("resume") + 1]
    print(json.dumps({"type": "thread.started", "thread_id": session_id}))
    if "FAILNOW" in message:
        print(json.dumps({"type": "turn.failed", "error": {"message": "the model refused FAILNOW"}}))
        return 1
    [path] = Path(home, "sessions").glob(f"*/*/*/rollout-*-{session_id}.jsonl")
    reply = f"Reply to: {message}"
    usage = {"input_tokens": 4321, "cached_input_tokens": 1000, "output_tokens": 9, "total_tokens": 4330}
    with path.open("a", encoding="utf-8") as rollout:
        rollout.write(line("event_msg", {"type": "task_started", "turn_id": "turn-fake",
                                         "model_context_window": 475000}))
        rollout.write(line("response_item", {"type": "message", "role": "user",
                                             "content": [{"type": "input_text", "text": message}]}))
        rollout.write(line("event_msg", {"type": "item_completed", "item": {
            "type": "UserMessage", "content": [{"type": "text", "text": message}]}}))
        rollout.write(line("response_item", {"type": "message", "role": "assistant",
                                             "content": [{"type": "output_text", "text": reply}]}))
        rollout.write(line("event_msg", {"type": "token_count", "info": {
            "total_token_usage": usage, "last_token_usage": usage, "model_context_window": 475000}}))
        rollout.write(line("event_msg", {"type": "task_complete", "turn_id": "turn-fake", "last_agent_message": reply}))
    print(json.dumps({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": reply}}))
    print(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 99999, "output_tokens": 9}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
