"""A stand-in for the `claude` program in unit tests (tests/core/claude/test_claude_send.py).

It appends one line to `$FAKE_CLAUDE_LOG` with its argv, stdin, folder and CLAUDE_CONFIG_DIR, then
acts on `$FAKE_CLAUDE_MODE`:
- `ok` (default): appends a prompt and a reply to the session named by `--resume ID` (or starts
  `--session-id ID` in the folder's project), the way Claude Code 2.1.332 writes them, and with
  `-p` prints the `--output-format json` result;
- `deny`: the same, and the result lists a Bash call Claude Code's permissions denied;
- `error`: writes nothing, prints an `is_error` result and exits 1;
- `sleep`: writes `$FAKE_CLAUDE_STARTED`, then sleeps (a turn to interrupt).
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

REPLY = "Fake reply to: "
USAGE = {"input_tokens": 11, "cache_creation_input_tokens": 220, "cache_read_input_tokens": 3300, "output_tokens": 9}


def dumps(record: dict) -> str:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"


def stamp() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def last_chain_uuid(path: Path) -> str | None:
    last = None
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record.get("type") in ("user", "assistant") and not record.get("isSidechain"):
                last = record["uuid"]
    return last


def main() -> int:
    args = sys.argv[1:]
    prompt = sys.stdin.read()
    root = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    with open(os.environ["FAKE_CLAUDE_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"argv": args, "stdin": prompt, "cwd": os.getcwd(),
                              "config_dir": os.environ.get("CLAUDE_CONFIG_DIR")}) + "\n")
    mode = os.environ.get("FAKE_CLAUDE_MODE", "ok")
    if "--resume" in args:
        session_id = args[args.index("--resume") + 1]
        path = next(root.glob(f"projects/*/{session_id}.jsonl"))
    else:
        session_id = args[args.index("--session-id") + 1]
        slug = "".join(c if c.isalnum() else "-" for c in os.getcwd())
        path = root / "projects" / slug / f"{session_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
    if mode == "sleep":
        Path(os.environ["FAKE_CLAUDE_STARTED"]).write_text("started")
        time.sleep(120)
        return 0
    if mode == "error":
        print(json.dumps({"type": "result", "subtype": "success", "is_error": True, "session_id": session_id,
                          "result": "API Error: 500 the fake server failed", "usage": USAGE,
                          "permission_denials": [], "num_turns": 1}))
        return 1
    common = {"userType": "external", "entrypoint": "sdk-cli" if "-p" in args else "cli", "cwd": os.getcwd(),
              "sessionId": session_id, "version": "2.1.332", "gitBranch": "HEAD"}
    user_id, reply_id = str(uuid.uuid4()), str(uuid.uuid4())
    reply = REPLY + prompt.strip()
    with open(path, "a", encoding="utf-8") as session:
        session.write(dumps({"parentUuid": last_chain_uuid(path), "isSidechain": False, "promptId": str(uuid.uuid4()),
                             "type": "user", "message": {"role": "user", "content": prompt}, "uuid": user_id,
                             "timestamp": stamp(), "permissionMode": "default", **common}))
        session.write(dumps({"parentUuid": user_id, "isSidechain": False, "message": {
            "id": f"msg_{uuid.uuid4().hex[:12]}", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
            "content": [{"type": "text", "text": reply}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": USAGE}, "type": "assistant", "uuid": reply_id, "timestamp": stamp(), **common}))
    if "-p" in args:
        denials = [{"tool_name": "Bash", "tool_use_id": "toolu_fake1", "tool_input": {"command": "rm -rf build"}}] \
            if mode == "deny" else []
        print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "session_id": session_id,
                          "result": reply, "usage": USAGE, "total_cost_usd": 0.0123, "duration_ms": 42,
                          "num_turns": 1, "permission_denials": denials}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
