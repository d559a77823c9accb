"""Codex CLI rollouts for tests, written the way Codex CLI 0.171.0 writes them (see
/work/shared/reference/agent-stores.md): compact JSON lines `{timestamp, ordinal, type, payload}`,
a `session_meta` first, a `turn_context` and `task_started` per turn, the injected developer and
environment messages as `response_item`s, the prompt and reply also as `item_completed` events
(`user_message`/`agent_message` events with `legacy`, as older versions wrote them), reasoning
summaries, commands through the code-mode `exec` tool, function calls and their outputs paired by
`call_id`, `token_count` events with the cumulative and the last call's usage, `compacted`, errors
and aborted turns, and types no reader knows. Compare tests/core/codex/data/ (a real rollout).
"""

from __future__ import annotations

import json
import random
import uuid as uuids
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
WINDOW = 258_400
ENVIRONMENT = "<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>bash</shell>\n</environment_context>"
PERMISSIONS = "<permissions instructions>Filesystem sandboxing: workspace-write.</permissions instructions>"


def uuid7(moment: datetime, rng: random.Random) -> str:
    """A UUIDv7: 48 bits of milliseconds, then random bits (version 7, variant 10)."""
    millis = int(moment.timestamp() * 1000)
    value = (millis << 80) | (0x7 << 76) | (rng.getrandbits(12) << 64) | (0b10 << 62) | rng.getrandbits(62)
    return str(uuids.UUID(int=value))


def dumps(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


class CodexRollout:
    def __init__(self, session_id: str | None = None, *, cwd: str = "/work/proj", source: Any = "exec",
                 model: str = "gpt-5.1-codex", branch: str | None = "main", forked_from: str | None = None,
                 forked_at: int | None = None,
                 start: datetime = START, seed: int = 0, ordinals: bool = True, legacy: bool = False):
        self.rng = random.Random(seed)
        self.clock = start
        self.started = start
        self.session_id = session_id or uuid7(start, self.rng)
        self.cwd, self.model = cwd, model
        self.lines: list[bytes] = []
        self.ordinal = forked_at or 0   # a fork's lines go on from its parent's
        self.ordinals = ordinals
        self.legacy = legacy   # the events of versions before 0.171.0: user_message, agent_message, error
        self.totals = [0, 0, 0, 0]   # input, cached input, output, reasoning output
        self.calls = 0
        meta: dict[str, Any] = {"id": self.session_id, "timestamp": self._stamp(advance=False), "cwd": cwd,
                                "originator": "codex_exec" if source == "exec" else "codex_cli_rs",
                                "cli_version": "0.171.0", "source": source, "model_provider": "fake",
                                "base_instructions": {"text": "You are Codex, a coding agent."}}
        if forked_from is not None:
            meta["forked_from_id"] = forked_from
            if forked_at is not None:
                meta["forked_from_ordinal_exclusive"] = forked_at
        if branch is not None:
            meta["git"] = {"commit_hash": "0" * 40, "branch": branch, "repository_url": None}
        self.record("session_meta", meta)

    # --- plumbing ------------------------------------------------------------------------------------
    def _stamp(self, *, advance: bool = True) -> str:
        if advance:
            self.clock += timedelta(seconds=1)
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def record(self, kind: str, payload: dict[str, Any]) -> None:
        record: dict[str, Any] = {"timestamp": self._stamp()}
        if self.ordinals:
            record["ordinal"] = self.ordinal
        record.update({"type": kind, "payload": payload})
        self.ordinal += 1
        self.lines.append(dumps(record))

    def item(self, payload: dict[str, Any]) -> None:
        self.record("response_item", payload)

    def event(self, payload: dict[str, Any]) -> None:
        self.record("event_msg", payload)

    def raw(self, line: bytes) -> None:
        """A line as it is (a bad line, a truncated one: no newline is added)."""
        self.lines.append(line)

    # --- the conversation ----------------------------------------------------------------------------
    def task_started(self, *, window: int = WINDOW) -> str:
        turn_id = f"turn-{self.ordinal}"
        self.record("turn_context", {"turn_id": turn_id, "cwd": self.cwd, "approval_policy": "never",
                                     "sandbox_policy": {"type": "workspace-write"}, "model": self.model,
                                     "effort": "medium", "summary": "auto"})
        self.event({"type": "task_started", "turn_id": turn_id, "model_context_window": window})
        return turn_id

    def injected(self) -> None:
        """The developer instructions and environment Codex sends before the first prompt."""
        self.item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": PERMISSIONS}]})
        self.item({"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": ENVIRONMENT.format(cwd=self.cwd)}]})

    def completed(self, item: dict[str, Any]) -> None:
        self.event({"type": "item_completed", "thread_id": self.session_id, "turn_id": f"turn-{self.ordinal}",
                    "item": item, "started_at_ms": 0, "completed_at_ms": 0})

    def prompt(self, text: str) -> None:
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        if self.legacy:
            self.event({"type": "user_message", "message": text, "images": [], "local_images": [],
                        "text_elements": []})
        else:
            self.completed({"type": "UserMessage", "id": f"u{self.ordinal}",
                            "content": [{"type": "text", "text": text, "text_elements": []}]})

    def reasoning(self, summary: str) -> None:
        self.item({"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}], "content": None,
                   "encrypted_content": "gAAAA-opaque"})
        self.event({"type": "agent_reasoning", "text": summary})

    def reply(self, text: str) -> None:
        if self.legacy:
            self.event({"type": "agent_message", "message": text})
        else:
            self.completed({"type": "AgentMessage", "id": f"m{self.ordinal}",
                            "content": [{"type": "Text", "text": text}]})
        self.item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})

    def command(self, command: str, output: str) -> str:
        """A command as 0.171.0 runs it: the code-mode `exec` custom tool, the host's
        `CommandExecution` item, and the tool's output as content parts."""
        call_id = f"call_{self.ordinal:04d}"
        script = f"const done = await tools.exec_command({json.dumps({'cmd': command})});\ntext(done.output);\n"
        self.item({"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "exec",
                   "input": script})
        self.completed({"type": "CommandExecution", "id": f"exec-{self.ordinal}", "command": ["/bin/bash", "-lc",
                        command], "cwd": f"file://{self.cwd}"})
        self.item({"type": "custom_tool_call_output", "call_id": call_id, "output": [
            {"type": "input_text", "text": "Script completed\nWall time 0.1 seconds\nOutput:\n"},
            {"type": "input_text", "text": output}]})
        return call_id

    def shell(self, command: list[str], output: str, *, exit_code: int = 0, call_id: str | None = None,
              answered: bool = True) -> str:
        call_id = call_id or f"call_{self.ordinal:04d}"
        self.item({"type": "function_call", "name": "shell", "arguments": json.dumps({"command": command}),
                   "call_id": call_id})
        if answered:
            self.item({"type": "function_call_output", "call_id": call_id, "output": json.dumps(
                {"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": 0.1}})})
        return call_id

    def patch(self, patch: str, output: str = "Success.") -> str:
        call_id = f"call_{self.ordinal:04d}"
        self.item({"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "apply_patch",
                   "input": patch})
        self.item({"type": "custom_tool_call_output", "call_id": call_id, "output": output})
        return call_id

    def tokens(self, input_tokens: int, output_tokens: int, *, cached: int = 0, window: int = WINDOW) -> None:
        """One model call's usage: `last_token_usage` is this call, `total_token_usage` the running sum."""
        self.totals = [self.totals[0] + input_tokens, self.totals[1] + cached, self.totals[2] + output_tokens,
                       self.totals[3]]
        last = {"input_tokens": input_tokens, "cached_input_tokens": cached, "output_tokens": output_tokens,
                "reasoning_output_tokens": 0, "total_tokens": input_tokens + output_tokens}
        total = {"input_tokens": self.totals[0], "cached_input_tokens": self.totals[1],
                 "output_tokens": self.totals[2], "reasoning_output_tokens": 0,
                 "total_tokens": self.totals[0] + self.totals[2]}
        self.event({"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last,
                                                    "model_context_window": window},
                    "rate_limits": {"primary": None, "secondary": None}})

    def task_complete(self, last_message: str | None = None, *, error: str | None = None) -> None:
        """The turn's end; with `error`, as 0.171.0 ends a turn whose API call failed."""
        payload: dict[str, Any] = {"type": "task_complete", "turn_id": f"turn-{self.ordinal}",
                                   "last_agent_message": last_message}
        if error is not None:
            payload["error"] = {"message": error, "codex_error_info": "other"}
        self.event(payload)

    def aborted(self) -> None:
        self.event({"type": "turn_aborted", "reason": "interrupted"})

    def error(self, message: str) -> None:
        """An `error` event (versions before 0.171.0; it puts the error in `task_complete`)."""
        self.event({"type": "error", "message": message})

    def compacted(self, summary: str) -> None:
        self.record("compacted", {"message": summary, "replacement_history": []})

    def turn(self, prompt: str, reply: str, *, tokens: tuple[int, int] = (12_000, 40), cached: int = 0,
             reasoning: str | None = None, first: bool | None = None) -> None:
        """A whole turn: task_started, (injected context on the first), prompt, reasoning, reply, usage, done."""
        self.task_started()
        if first if first is not None else self.calls == 0:
            self.injected()
        self.calls += 1
        self.prompt(prompt)
        if reasoning is not None:
            self.reasoning(reasoning)
        self.reply(reply)
        self.tokens(*tokens, cached=cached)
        self.task_complete(reply)

    # --- the file ------------------------------------------------------------------------------------
    def data(self) -> bytes:
        return b"".join(self.lines)

    def file_name(self) -> str:
        return f"rollout-{self.started.strftime('%Y-%m-%dT%H-%M-%S')}-{self.session_id}.jsonl"

    def path_in(self, root: Path, *, archived: bool = False) -> Path:
        folder = root / "archived_sessions" if archived else root / "sessions" / self.started.strftime("%Y/%m/%d")
        return folder / self.file_name()

    def write(self, root: Path, *, archived: bool = False) -> Path:
        path = self.path_in(root, archived=archived)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.data())
        return path


def rename(root: Path, session_id: str, name: str, updated_at: str = "2026-11-21T10:00:00Z") -> None:
    """An entry of `session_index.jsonl`, as a rename in Codex appends it."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "session_index.jsonl", "ab") as file:
        file.write(dumps({"id": session_id, "thread_name": name, "updated_at": updated_at}))
