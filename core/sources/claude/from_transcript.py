"""Another agent's session as a new Claude Code session file: pure (a transcript, the new id, the
folder and a clock in; the file's bytes and notes out).

The file holds one chain of records (`parentUuid` to `uuid`), as Claude Code writes a conversation:
per turn the prompt as a user record, each shell command as a `Bash` tool_use and its tool_result
(with `toolUseResult` stdout, as Claude Code records a command), every other tool call as marked
text (`session_writing.tool_call_text`) in the next assistant message, and the reply as the turn's
last assistant message. Each turn ends with an assistant message, so the API's user/assistant
alternation holds; a turn that recorded no reply gets a marked line saying how it ended. Records
keep the source's times; no message carries usage (the figures were the source agent's, on its own
model: Reprise's meter estimates the new session until Claude Code measures its first turn).
Thinking is left out: Claude Code sends back only thinking its own API signed.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ...transcript import ToolCall, Transcript, Turn
from ..session_writing import MARK, prompt_only, tool_call_text, written_notes

VERSION = "2.1.332"   # the Claude Code whose resume of such a file the compat tests check
SHELL_TOOL = "Bash"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def stamp(text: str | None, now: datetime) -> str:
    """A record's time in Claude Code's form (`2026-12-01T16:32:35.102Z`): the source's, else `now`."""
    moment = _parsed(text) or now
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _parsed(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.astimezone(UTC) if moment.tzinfo is not None else None


def dumps(record: dict[str, Any]) -> bytes:
    """One record as Claude Code writes it: compact JSON on one line, UTF-8, a lone surrogate escaped
    (as JavaScript's JSON.stringify writes one)."""
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text).encode("utf-8") + b"\n"


@dataclass(slots=True)
class _Chain:
    """The records written so far, each the parent of the next."""

    session_id: str
    folder: str
    model: str
    now: datetime
    parent: str | None = None
    lines: list[bytes] = field(default_factory=list)
    messages: int = 0

    def _add(self, kind: str, message: dict[str, Any], at: str | None, extra: dict[str, Any]) -> str:
        """Append a record under the previous one; its uuid (derived from the session id and its line)."""
        new = str(uuid.uuid5(uuid.UUID(self.session_id), str(len(self.lines))))
        record = {"parentUuid": self.parent, "isSidechain": False, "type": kind, "message": message, **extra,
                  "uuid": new, "timestamp": stamp(at, self.now), "userType": "external", "cwd": self.folder,
                  "sessionId": self.session_id, "version": VERSION}
        self.lines.append(dumps(record))
        self.parent = new
        return new

    def user(self, content: str | list[dict[str, Any]], at: str | None, **extra: Any) -> str:
        return self._add("user", {"role": "user", "content": content}, at, extra)

    def assistant(self, blocks: list[dict[str, Any]], at: str | None, stop: str) -> str:
        self.messages += 1
        message = {"id": f"msg_reprise{self.messages:06d}", "type": "message", "role": "assistant",
                   "model": self.model, "content": blocks, "stop_reason": stop, "stop_sequence": None}
        return self._add("assistant", message, at, {})


def _texts(texts: list[str]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text} for text in texts if text]


def _turn(chain: _Chain, turn: Turn, agent: str) -> Iterator[str]:
    """Write one turn; yield a note for each thing it could not carry as it was."""
    start, end = turn.started_at, turn.ended_at or turn.started_at
    chain.user(turn.user_message, start)
    if prompt_only(turn):   # a brief: the agent answers it when the session is resumed
        return
    pending: list[str] = []
    for number, call in enumerate(turn.tool_calls, start=1):
        if call.shell is None:
            pending.append(tool_call_text(call, agent))
            continue
        tool_id = f"toolu_reprise{chain.messages + 1:06d}{number:03d}"
        use = {"type": "tool_use", "id": tool_id, "name": SHELL_TOOL, "input": {"command": call.shell}}
        asked = chain.assistant([*_texts(pending), use], start, "tool_use")
        pending = []
        chain.user([_result(tool_id, call)], start, toolUseResult=_raw_result(call), sourceToolAssistantUUID=asked)
    ending = _ending(turn)
    chain.assistant(_texts([*pending, turn.reply, ending]) or _texts([f"{MARK} no reply was recorded."]), end,
                    "end_turn")
    if turn.status == "pending":
        yield f"turn {turn.turn_id} was still running in {agent}; what it had written is carried"


def _result(tool_id: str, call: ToolCall) -> dict[str, Any]:
    return {"tool_use_id": tool_id, "type": "tool_result", "content": call.result or "", "is_error": call.is_error}


def _raw_result(call: ToolCall) -> dict[str, Any]:
    return {"stdout": call.result or "", "stderr": "", "interrupted": False, "isImage": False}


def _ending(turn: Turn) -> str:
    """A marked line for a turn that did not succeed."""
    if turn.status == "failed":
        return f"{MARK} this turn failed" + (f": {turn.error}" if turn.error else ".")
    if turn.status in ("interrupted", "max_iterations"):
        return f"{MARK} this turn was {'interrupted' if turn.status == 'interrupted' else 'stopped at its step limit'}."
    return ""


def session_file_of(transcript: Transcript, *, session_id: str, folder: str, model: str, agent: str,
                    now: datetime) -> tuple[bytes, list[str]]:
    """The bytes of a new Claude Code session `session_id` in `folder` holding the transcript's turns
    (`agent`: the source agent's label, `model`: the model named on the assistant messages), and
    notes on what was left out or changed."""
    chain = _Chain(session_id, folder, model, now)
    notes = written_notes(transcript, agent, "Claude Code")
    for turn in transcript.turns:
        notes.extend(_turn(chain, turn, agent))
    return b"".join(chain.lines), notes
