"""A new Codex rollout written from another agent's transcript (issue 30, `reprise continue` the native
way): pure, the bytes from the transcript, the new thread's id, its folder, the Codex version and the
clock; `rollout_path` names where it goes (today's date folder, named as `new.start_rollout` names one).

Per turn, what Codex 0.171.0 itself writes of a turn, as far as resuming and the listings read it:
`task_started`, the prompt as a `response_item` user message and as the `item_completed` `UserMessage`
event, each shell command as the code-mode `exec` call of one `tools.exec_command` (the script in the
form Codex's model writes it) with its `custom_tool_call_output`, every other tool call as an
assistant message of `tool_call_text`, the reply as an assistant message, then `task_complete` with
`last_agent_message` (and the `error` of a failed turn), or `turn_aborted` for an interrupted one. How
a turn that did not succeed ended is also said in the reply, as marked text, so the model reads it.
Records keep the source's times (a turn without any gets `now`); `session_meta`, the new thread's
birth, is dated `now`. Thinking is left out (Codex accepts only its own model's reasoning) and said.

What the real client needs, found with `codex exec resume NEWID` (0.171.0, against the fake server,
tests/compat/codex/test_continue_compat.py):
- No setup: on resuming a rollout without a `turn_context`, Codex injects its own whole setup (the
  `additional_tools` item, the base instructions and other developer context, the environment)
  after the history, just before the new prompt, each time from the config of the Codex that
  resumes. Setup records copied in (developer messages, tools, environment, `world_state`,
  `turn_context`) do not stop that: the request then carried the setup twice. A `turn_context` would
  also make Codex restore the thread's model and policies from it instead of the user's config.
  Without one the thread is continued as one from before multi-agent v2 (no `collaboration` tools).
- The `UserMessage` events: without them `codex exec resume --last` passes the rollout over (Codex's
  own listing sees no user turn) and starts a new thread; Reprise's listing and reader take prompts
  from them too. No `AgentMessage` event is needed (the model's history is the `response_item`s).
- No `token_count`, `metadata` or `history_mode`: Codex resumes it as a rollout of the older,
  unpaginated form and appends its own records (without `ordinal`, as that form has none).
Text is written as it is (newlines, quotes, U+2028, any non-ASCII: compact JSON escapes what it
must); a lone surrogate, which no UTF-8 file (nor Codex's Rust strings) can hold, becomes U+FFFD and
a note says how many texts held one.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...times import parse_time
from ...transcript import ToolCall, Transcript, Turn
from ..session_writing import (
    MARK,
    ending_text,
    prompt_only,
    tool_call_text,
    without_lone_surrogates,
    written_notes,
)
from .fork import dumps
from .layout import CodexRoot, check_session_id
from .records import EVENT, RESPONSE_ITEM, SESSION_META, Record
from .transcript import CODE_MODE_TOOL

ORIGINATOR = "reprise"
TARGET = "Codex"


def rollout_path(root: CodexRoot, session_id: str, now: datetime) -> Path:
    """Where the new rollout goes under `root`: today's date folder (local time), named as Codex names
    its own."""
    local = now.astimezone()
    name = f"rollout-{local.strftime('%Y-%m-%dT%H-%M-%S')}-{session_id}.jsonl"
    return root.sessions / local.strftime("%Y/%m/%d") / name


def codex_stamp(moment: datetime) -> str:
    """A time as Codex writes it: UTC to the millisecond, `2026-12-01T19:36:29.837Z`."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def shell_script(command: str) -> str:
    """The code-mode `exec` script running one shell command, in the form Codex's model writes it."""
    return f"const done = await tools.exec_command({json.dumps({'cmd': command})});\ntext(done.output);\n"


class _Writer:
    """The records of the new rollout, appended in order with their ordinals."""

    def __init__(self, session_id: str, agent: str, now: datetime):
        self.session_id = session_id
        self.namespace = uuid.UUID(session_id)
        self.agent = agent
        self.now = now
        self.records: list[Record] = []
        self.surrogates = 0
        self.undated = 0

    def text(self, value: str) -> str:
        mended: str = without_lone_surrogates(value)
        self.surrogates += mended is not value
        return mended

    def add(self, stamp: str, kind: str, payload: dict[str, Any]) -> None:
        self.records.append({"timestamp": stamp, "ordinal": len(self.records), "type": kind, "payload": payload})

    def message(self, stamp: str, role: str, text: str) -> None:
        part = "input_text" if role == "user" else "output_text"
        self.add(stamp, RESPONSE_ITEM, {"type": "message", "role": role, "content": [{"type": part, "text": text}]})

    def stamp(self, value: str | None) -> str:
        moment = parse_time(value)
        return codex_stamp(moment if moment is not None else self.now)

    def turn(self, number: int, turn: Turn) -> None:
        turn_id = str(uuid.uuid5(self.namespace, f"turn {number}"))
        self.undated += turn.started_at is None and turn.ended_at is None
        start, end = self.stamp(turn.started_at or turn.ended_at), self.stamp(turn.ended_at or turn.started_at)
        prompt = self.text(turn.user_message)
        self.add(start, EVENT, {"type": "task_started", "turn_id": turn_id})
        self.message(start, "user", prompt)
        item = {"type": "UserMessage", "id": str(uuid.uuid5(self.namespace, f"prompt {number}")),
                "content": [{"type": "text", "text": prompt, "text_elements": []}]}
        self.add(start, EVENT, {"type": "item_completed", "thread_id": self.session_id, "turn_id": turn_id,
                                "item": item})
        if prompt_only(turn):   # a brief: closed without a reply, Codex answers it with the next prompt
            self.add(start, EVENT, {"type": "task_complete", "turn_id": turn_id, "last_agent_message": None})
            return
        for at, call in enumerate(turn.tool_calls, start=1):
            if call.shell is not None:
                self.shell_call(end, f"call_{turn_id}_{at}", call)
            else:
                self.message(end, "assistant", self.text(tool_call_text(call, self.agent)))
        reply = "\n\n".join(part for part in (turn.reply, ending_text(turn, self.agent)) if part)
        reply = self.text(reply)
        if reply:
            self.message(end, "assistant", reply)
        if turn.status == "interrupted":
            self.add(end, EVENT, {"type": "turn_aborted", "turn_id": turn_id, "reason": "interrupted"})
            return
        complete: dict[str, Any] = {"type": "task_complete", "turn_id": turn_id, "last_agent_message": reply or None}
        if turn.status == "failed":
            error = self.text(turn.error or "no error was recorded")
            complete["error"] = {"message": error, "codex_error_info": "other"}
        self.add(end, EVENT, complete)

    def shell_call(self, stamp: str, call_id: str, call: ToolCall) -> None:
        assert call.shell is not None
        self.add(stamp, RESPONSE_ITEM, {"type": "custom_tool_call", "status": "completed", "call_id": call_id,
                                        "name": CODE_MODE_TOOL, "input": shell_script(self.text(call.shell))})
        head = "Script completed\nOutput:\n"
        if call.is_error:
            head = f"{MARK} the command failed in {self.agent}.\nOutput:\n"
        output = self.text(call.result) if call.result is not None else f"{MARK} no output was recorded."
        self.add(stamp, RESPONSE_ITEM, {"type": "custom_tool_call_output", "call_id": call_id,
                                        "output": [{"type": "input_text", "text": head},
                                                   {"type": "input_text", "text": output}]})


def rollout_of(transcript: Transcript, *, session_id: str, folder: str, cli_version: str, agent: str,
               now: datetime) -> tuple[bytes, list[str]]:
    """The bytes of a new Codex rollout holding `transcript` (of `agent`, as its label reads) as thread
    `session_id` run in `folder`, and notes on what was left out or changed on the way."""
    writer = _Writer(check_session_id(session_id), agent, now)
    stamp = codex_stamp(now)
    writer.add(stamp, SESSION_META, {"id": session_id, "session_id": session_id, "timestamp": stamp,
                                     "cwd": writer.text(folder), "originator": ORIGINATOR, "cli_version": cli_version,
                                     "source": "cli"})
    for number, turn in enumerate(transcript.turns, start=1):
        writer.turn(number, turn)
    notes = written_notes(transcript, agent, TARGET, undated=writer.undated, mended=writer.surrogates)
    return b"".join(dumps(record) for record in writer.records), notes
