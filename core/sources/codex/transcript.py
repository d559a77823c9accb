"""A Codex rollout as the neutral transcript: one turn per `task_started` (or, in an older
rollout without them, per user message), as `fields.py` counts them.

Each turn holds its prompt (`item_completed` `UserMessage`, or `user_message` in older versions:
never the developer instructions or the environment Codex injects as `response_item` messages),
the assistant's text (its reply; at a turn's start an auto-compaction's summary is not), the
reasoning summaries (kept apart, shown folded; the `agent_reasoning` events when the rollout keeps
no summary), its tool calls (`function_call`, `custom_tool_call`, `local_shell_call`,
`web_search_call`) each paired with its output by `call_id`, the commands it ran (the shell tools'
command lines, and the `CommandExecution` items of 0.171.0, whose code-mode `exec` tool runs
them) and the files `apply_patch` changed, all observed by Codex's host, its errors (an `error`
event, or the `error` of its `task_complete`), and its usage: the change in `total_token_usage`
over the turn, with the context measured at its newest `last_token_usage`. A `compacted` record
marks a compaction before the turn it starts, else before the next turn.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ...transcript import Command, Compaction, FileTouch, Status, ToolCall, Transcript, Turn, Usage
from .. import agent_json
from ..agent_transcript import cut, stamp_of
from .fields import ABORTED, token_figures
from .records import (
    COMPACTED,
    EVENT,
    KNOWN_TYPES,
    RESPONSE_ITEM,
    Record,
    event_item,
    integer,
    kind_of,
    payload_of,
    prompt_of,
    text_of,
)

SOURCE = "codex"
SHELL_TOOLS = frozenset({"shell", "container.exec", "local_shell", "shell_command", "exec_command"})
CODE_MODE_TOOL = "exec"   # 0.171.0's code-mode tool: JavaScript that calls the host's tools
_CODE_MODE_SHELL = re.compile(r"const (\w+) = await tools\.exec_command\((\{.*\})\);\ntext\(\1\.output\);\n?", re.S)
CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)


def command_line(name: str, arguments: Any) -> str | None:
    """The command line a shell tool call ran: `bash -lc SCRIPT` shows as its script."""
    if isinstance(arguments, str):
        try:
            arguments = agent_json.loads(arguments)
        except (ValueError, RecursionError):
            return None
    if not isinstance(arguments, dict) or name not in SHELL_TOOLS:
        return None
    command = arguments.get("command", arguments.get("cmd"))
    if isinstance(command, str):
        return str(command)
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        if len(command) == 3 and command[1] in ("-lc", "-c"):
            return str(command[2])
        return shlex.join(command)
    return None


def code_mode_command(script: Any) -> str | None:
    """The command line of a code-mode `exec` call (0.171.0) whose script runs one `tools.exec_command`
    of a JSON object and prints its output, as Codex writes it; None for any other script."""
    found = _CODE_MODE_SHELL.fullmatch(script) if isinstance(script, str) else None
    return command_line("exec_command", found.group(2)) if found is not None else None


def output_of(payload: dict[str, Any]) -> tuple[str, bool]:
    """(the text a tool gave back, whether it failed): a plain string, an object with `content`
    and `success`, or the JSON string of a shell's `output` and `metadata.exit_code`."""
    output = payload.get("output")
    if isinstance(output, list):   # content parts (0.171.0's code-mode `exec` tool)
        return text_of(output), False
    if isinstance(output, dict):
        content = output.get("content")
        text = content if isinstance(content, str) else text_of(content)
        return text, output.get("success") is False
    if not isinstance(output, str):
        return "", False
    if output.startswith("{"):
        try:
            decoded = agent_json.loads(output)
        except (ValueError, RecursionError):
            decoded = None
        if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
            metadata = decoded.get("metadata")
            code = integer(metadata.get("exit_code")) if isinstance(metadata, dict) else None
            return decoded["output"], code not in (None, 0)
    return output, False


class _TurnBuilder:
    """The facts of one turn, gathered record by record."""

    def __init__(self, turn_id: str, stamp: str | None, totals: tuple[int, int, int]):
        self.turn = Turn(turn_id=turn_id, user_message="", status="succeeded", started_at=stamp, ended_at=stamp)
        self.prompted = False
        self.replies: list[str] = []
        self.said: list[str] = []          # agent_message events: the reply when no response item has it
        self.summaries: list[str] = []
        self.reasoning_events: list[str] = []
        self.errors: list[str] = []
        self.ended: Status | None = None
        self.totals_before = totals
        self.context: int | None = None
        self.calls = 0
        self.duration_ms: int | None = None   # task_complete's own figure

    def prompt(self, message: str) -> bool:
        """Take a user message as the prompt; False when the turn has one (a steering message)."""
        if self.prompted:
            return False
        self.prompted = True
        self.turn.user_message = message
        return True

    def finish(self, totals: tuple[int, int, int], *, cut_off: bool) -> Turn:
        turn = self.turn
        turn.reply = "\n\n".join(self.replies or self.said)
        turn.thinking = "\n\n".join(self.summaries or self.reasoning_events)
        if self.errors:
            turn.status, turn.error = "failed", self.errors[-1]
        elif self.ended is not None:
            turn.status = self.ended
        elif cut_off:
            turn.status = "interrupted"
        if self.calls:
            used = [after - before for after, before in zip(totals, self.totals_before, strict=True)]
            if min(used) < 0:   # the totals started again (a fork's own count): take them as they are
                used = list(totals)
            turn.usage = Usage(input_tokens=used[0] - used[1], output_tokens=used[2], cache_read_tokens=used[1],
                               context_tokens=self.context, duration_ms=self.duration_ms, iterations=self.calls)
        return turn


class _Reader:
    def __init__(self, session_id: str):
        self.transcript = Transcript(SOURCE, session_id)
        self.warnings: list[str] = []
        self.current: _TurnBuilder | None = None
        self.totals: tuple[int, int, int] = (0, 0, 0)
        self.seen_totals: tuple[int, int, int] | None = None
        self.calls: dict[str, tuple[Turn, int]] = {}
        self.tasks_seen = False
        self.unknown: dict[str, int] = {}
        self.before_first = 0

    def start(self, record: Record, turn_id: object = None) -> _TurnBuilder:
        self.close(cut_off=True)
        number = len(self.transcript.turns) + 1
        name = turn_id if isinstance(turn_id, str) and turn_id else f"{self.transcript.session_id[-8:]}-{number}"
        self.current = _TurnBuilder(name, stamp_of(record), self.totals)
        return self.current

    def close(self, *, cut_off: bool) -> None:
        if self.current is not None:
            self.transcript.turns.append(self.current.finish(self.totals, cut_off=cut_off))
            self.current = None

    def feed(self, record: Record) -> None:
        kind, inner = kind_of(record)
        if kind not in KNOWN_TYPES:
            self.unknown[kind] = self.unknown.get(kind, 0) + 1
            return
        payload = payload_of(record)
        if kind == EVENT and inner == "task_started":
            self.tasks_seen = True
            self.start(record, payload.get("turn_id"))
            return
        prompt = prompt_of(inner, payload) if kind == EVENT else None
        if prompt is not None:
            if self.current is None or (self.current.prompted and not self.tasks_seen):
                self.start(record)
            assert self.current is not None
            if not self.current.prompt(prompt) and prompt != self.current.turn.user_message:
                self.current.turn.user_message += "\n\n" + prompt   # typed while the turn ran
            return
        if kind == COMPACTED:
            # Mid-turn it shapes the turns after this one; before the turn's prompt (an auto-compaction
            # at its start), this turn too.
            prompted = self.current is not None and self.current.prompted
            self.transcript.compactions.append(Compaction(len(self.transcript.turns) + prompted, at=stamp_of(record)))
            if self.current is not None and not self.current.prompted:
                # An auto-compaction at a turn's start: what the model said so far was the summary.
                self.current.replies.clear()
                self.current.said.clear()
            return
        current = self.current
        if current is None:
            self.before_first += kind == RESPONSE_ITEM and inner in CALLS | {"reasoning"}
            if kind == EVENT and inner == "token_count":
                self._tokens(None, payload)
            return
        stamp = stamp_of(record)
        if stamp is not None:
            current.turn.ended_at = stamp
        if kind == RESPONSE_ITEM:
            self._item(current, inner, payload)
        elif kind == EVENT:
            self._event(current, inner, payload)

    def _item(self, current: _TurnBuilder, inner: str, payload: dict[str, Any]) -> None:
        if inner == "message" and payload.get("role") == "assistant":
            text = text_of(payload.get("content"))
            if text:
                current.replies.append(text)
        elif inner == "reasoning":
            summary = text_of(payload.get("summary"))
            if summary:
                current.summaries.append(summary)
        elif inner in CALLS:
            self._call(current, inner, payload)
        elif inner in OUTPUTS:
            self._output(payload)

    def _call(self, current: _TurnBuilder, inner: str, payload: dict[str, Any]) -> None:
        turn = current.turn
        if inner == "local_shell_call":
            action = payload.get("action")
            arguments: Any = action if isinstance(action, dict) else {}
            name = "local_shell"
        elif inner == "web_search_call":
            action = payload.get("action")
            arguments, name = action if isinstance(action, dict) else {}, "web_search"
        else:
            name = payload["name"] if isinstance(payload.get("name"), str) else "tool"
            arguments = payload.get("arguments" if inner == "function_call" else "input")
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        command = command_line(name, arguments) if name != CODE_MODE_TOOL else code_mode_command(arguments)
        turn.tool_calls.append(ToolCall(name, cut(shown, brackets="[]"), shell=command))
        call_id = payload.get("call_id", payload.get("id"))
        if isinstance(call_id, str):
            self.calls[call_id] = (turn, len(turn.tool_calls) - 1)
        if command is not None and all(seen.command != command for seen in turn.commands):
            turn.commands.append(Command(command, "observed"))
        if name == "apply_patch" and isinstance(arguments, str):
            for path in _PATCH_FILE.findall(arguments):
                if all(touch.path != path.strip() for touch in turn.files_modified):
                    turn.files_modified.append(FileTouch(path.strip(), "observed"))

    def _output(self, payload: dict[str, Any]) -> None:
        text, failed = output_of(payload)
        call_id = payload.get("call_id")
        found = self.calls.pop(call_id, None) if isinstance(call_id, str) else None
        if found is None:
            self.warnings.append("a tool output for a call the rollout does not have")
            if self.current is not None:
                self.current.turn.tool_calls.append(ToolCall("tool", "", cut(text, brackets="[]"), failed))
            return
        turn, at = found
        turn.tool_calls[at] = replace(turn.tool_calls[at], result=cut(text, brackets="[]"), is_error=failed)

    def _event(self, current: _TurnBuilder, inner: str, payload: dict[str, Any]) -> None:
        if inner == "agent_message" and isinstance(payload.get("message"), str) and payload["message"]:
            current.said.append(payload["message"])
        elif inner == "item_completed":
            self._completed(current, *event_item(payload))
        elif inner == "agent_reasoning" and isinstance(payload.get("text"), str) and payload["text"]:
            current.reasoning_events.append(payload["text"])
        elif inner == "token_count":
            self._tokens(current, payload)
        elif inner == "error":
            message = payload.get("message")
            current.errors.append(message if isinstance(message, str) and message else "an error (no message)")
        elif inner in ABORTED:
            current.ended = "interrupted"
            self.close(cut_off=False)
        elif inner == "task_complete":
            error = payload.get("error")
            if isinstance(error, dict):
                message = error.get("message")
                current.errors.append(message if isinstance(message, str) and message else "an error (no message)")
            duration = payload.get("duration_ms")
            if isinstance(duration, int) and not isinstance(duration, bool) and duration >= 0:
                current.duration_ms = duration
            current.ended = current.ended or "succeeded"
            self.close(cut_off=False)

    @staticmethod
    def _completed(current: _TurnBuilder, kind: str, item: dict[str, Any]) -> None:
        """An `item_completed` event (0.171.0): a reply's text, a command Codex's host ran."""
        if kind == "AgentMessage":
            text = text_of(item.get("content"))
            if text:
                current.said.append(text)
        elif kind == "CommandExecution":
            command = command_line("shell", {"command": item.get("command")})
            if command is not None and all(seen.command != command for seen in current.turn.commands):
                current.turn.commands.append(Command(command, "observed"))

    def _tokens(self, current: _TurnBuilder | None, payload: dict[str, Any]) -> None:
        info = payload.get("info")
        if not isinstance(info, dict):
            return
        total = token_figures(info.get("total_token_usage"))
        last = token_figures(info.get("last_token_usage"))
        if total is not None:
            if current is not None and total != self.seen_totals:
                current.calls += 1
            self.totals = self.seen_totals = total
        if current is not None and last is not None:
            current.context = last[0]

    def result(self) -> tuple[Transcript, list[str]]:
        self.close(cut_off=self.tasks_seen)   # an unfinished last turn in a rollout that marks its turns
        transcript, warnings = self.transcript, self.warnings
        if self.before_first:
            transcript.notes.append(f"{self.before_first} tool call{'s' if self.before_first != 1 else ''} or "
                                    "reasoning item(s) before the first turn are not shown.")
        if self.calls:
            transcript.notes.append(f"{len(self.calls)} tool call{'s' if len(self.calls) != 1 else ''} without a "
                                    "recorded output (Codex answers such a call as aborted when it resumes).")
        if self.unknown:
            skipped = sum(self.unknown.values())
            names = sorted(self.unknown)
            warnings.append(f"{skipped} record{'s' if skipped != 1 else ''} of a type Reprise does not know "
                            f"({', '.join(names[:5])}{', …' if len(names) > 5 else ''}) skipped")
        return transcript, warnings


def read_transcript(records: Iterable[Record], session_id: str) -> tuple[Transcript, list[str]]:
    """The transcript of a rollout's records (a fork's inherited records first, see `lineage.py`),
    and what could not be joined or was left out."""
    reader = _Reader(session_id)
    for record in records:
        reader.feed(record)
    return reader.result()
