"""A Claude Code session as the neutral transcript: the main chain, one turn per real prompt.

A turn is a real user prompt (or a slash command the model answered, such as a custom `/review`)
and every record after it on the chain up to the next one: the
assistant's text (its reply) and thinking (kept apart), its tool calls with their results (a
`tool_use` and the `tool_result` naming its id), the files it read (`Read`) and changed (`Edit`,
`Write`, `MultiEdit`, `NotebookEdit`) and the commands it ran (`Bash`), all observed by Claude
Code's host, the API errors it hit and its usage, each API message counted once (split lines
share `message.id`). A compaction is marked before the turn that followed it. The rewound
branches in the file and the subagent files beside it are counted in the notes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ...transcript import Command, Compaction, FileTouch, ToolCall, Transcript, Turn, Usage
from ..agent_transcript import cut, stamp_of
from .chain import main_chain_records
from .messages import (
    ASSISTANT,
    BOUNDARY,
    COMMAND,
    ERROR,
    INTERRUPT,
    KNOWN_TYPES,
    RESULT,
    blocks,
    command_text,
    count,
    error_text,
    kind_of,
    prompt_text,
    turn_starts,
    usage_of,
)
from .records import Record

SOURCE = "claude"
READ_TOOLS = frozenset({"Read"})
EDIT_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
COMMAND_TOOLS = frozenset({"Bash"})


class _TurnBuilder:
    """The facts of one turn, gathered record by record."""

    def __init__(self, record: Record, number: int, kind: str):
        message = command_text(record) if kind == COMMAND else prompt_text(record)
        self.turn = Turn(turn_id=str(record["uuid"]), user_message=message, status="succeeded",
                         started_at=stamp_of(record), ended_at=stamp_of(record))
        self.replies: list[str] = []
        self.thinking: list[str] = []
        self.calls: dict[str, int] = {}            # tool_use id -> index in turn.tool_calls
        self.usage: dict[str, list[int]] = {}      # message.id -> [input, output, cache read, cache creation]
        self.unnamed = [0, 0, 0, 0]
        self.context: int | None = None
        self.duration: int | None = None
        self.errors: list[str] = []
        self.number = number

    def assistant(self, record: Record) -> None:
        self.turn.status = "succeeded"
        for block in blocks(record):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
                self.replies.append(block["text"])
            elif kind == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"]:
                self.thinking.append(block["thinking"])
            elif kind == "tool_use":
                self._tool_use(block)
        message_id, usage = usage_of(record)
        if usage is not None:
            figures = [count(usage, key) for key in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                                                     "cache_creation_input_tokens")]
            if message_id is None:
                self.unnamed = [a + b for a, b in zip(self.unnamed, figures, strict=True)]
            else:
                self.usage[message_id] = figures
            self.context = figures[0] + figures[2] + figures[3]

    def _tool_use(self, block: dict[str, Any]) -> None:
        name = block.get("name") if isinstance(block.get("name"), str) else "tool"
        tool_input = block.get("input")
        text = tool_input if isinstance(tool_input, str) else json.dumps(tool_input, ensure_ascii=False)
        turn = self.turn
        shell = tool_input.get("command") if name in COMMAND_TOOLS and isinstance(tool_input, dict) else None
        turn.tool_calls.append(ToolCall(str(name), cut(text), shell=shell if isinstance(shell, str) else None))
        if isinstance(block.get("id"), str):
            self.calls[block["id"]] = len(turn.tool_calls) - 1
        if not isinstance(tool_input, dict):
            return
        if name in READ_TOOLS and isinstance(tool_input.get("file_path"), str):
            turn.files_read.append(FileTouch(tool_input["file_path"], "observed"))
        elif name in EDIT_TOOLS and isinstance(tool_input.get(EDIT_TOOLS[str(name)]), str):
            path = tool_input[EDIT_TOOLS[str(name)]]
            if all(touch.path != path for touch in turn.files_modified):
                turn.files_modified.append(FileTouch(path, "observed"))
        elif name in COMMAND_TOOLS and isinstance(tool_input.get("command"), str):
            turn.commands.append(Command(tool_input["command"], "observed"))

    def result(self, record: Record, warnings: list[str]) -> None:
        results = [block for block in blocks(record) if block.get("type") == "tool_result"]
        raw = record.get("toolUseResult") if len(results) == 1 else None   # the raw output of the one tool it answers
        for block in results:
            text = _result_text(block, raw)
            tool_id = block.get("tool_use_id")
            at = self.calls.get(tool_id) if isinstance(tool_id, str) else None
            if at is None:
                warnings.append(f"turn {self.number}: a tool result for a call the conversation does not have")
                self.turn.tool_calls.append(ToolCall("tool", "", cut(text), block.get("is_error") is True))
                continue
            self.turn.tool_calls[at] = replace(self.turn.tool_calls[at], result=cut(text),
                                               is_error=block.get("is_error") is True)

    def error(self, record: Record) -> None:
        self.turn.status = "failed"
        self.errors.append(error_text(record))

    def finish(self) -> Turn:
        turn = self.turn
        turn.reply = "\n\n".join(self.replies)
        turn.thinking = "\n\n".join(self.thinking)
        if turn.status == "failed" and self.errors:
            turn.error = self.errors[-1]
        totals = list(self.unnamed)
        for figures in self.usage.values():
            totals = [a + b for a, b in zip(totals, figures, strict=True)]
        calls = len(self.usage) + (1 if any(self.unnamed) else 0)
        if calls or self.duration is not None:
            turn.usage = Usage(input_tokens=totals[0], output_tokens=totals[1], cache_read_tokens=totals[2],
                               cache_creation_tokens=totals[3], context_tokens=self.context,
                               duration_ms=self.duration, iterations=calls or None)
        return turn


def read_transcript(records: Iterable[Record], *, subagents: int = 0) -> tuple[Transcript, list[str]]:
    """The transcript of a session's main chain, and what was left out of it or could not be joined."""
    records = list(records)
    chain, info, _ = main_chain_records(records)
    session_id = next((r["sessionId"] for r in records if isinstance(r.get("sessionId"), str)), "")
    transcript = Transcript(SOURCE, session_id)
    warnings: list[str] = []
    current: _TurnBuilder | None = None
    before_first = 0
    kinds = [kind_of(record) for record in chain]
    starts = set(turn_starts(kinds))
    for at, (record, kind) in enumerate(zip(chain, kinds, strict=True)):
        if at in starts:
            if current is not None:
                transcript.turns.append(current.finish())
            current = _TurnBuilder(record, len(transcript.turns) + 1, kind)
            continue
        if kind == BOUNDARY:
            transcript.compactions.append(_compaction(record, len(transcript.turns) + (current is not None)))
            continue
        if current is None:
            before_first += kind in (ASSISTANT, RESULT, ERROR)
            continue
        stamp = stamp_of(record)
        if stamp is not None:
            current.turn.ended_at = stamp
        if kind == ASSISTANT:
            current.assistant(record)
        elif kind == RESULT:
            current.result(record, warnings)
        elif kind == ERROR:
            current.error(record)
        elif kind == INTERRUPT:
            current.turn.status = "interrupted"
        elif record.get("type") == "system" and record.get("subtype") == "turn_duration":
            duration = record.get("durationMs")
            if isinstance(duration, int) and not isinstance(duration, bool):
                current.duration = (current.duration or 0) + duration
    if current is not None:
        transcript.turns.append(current.finish())
    _notes(transcript, info.branches, subagents, before_first)
    unknown = sorted({str(r["type"]) for r in records if r["type"] not in KNOWN_TYPES})
    if unknown:
        skipped = sum(r["type"] not in KNOWN_TYPES for r in records)
        warnings.append(f"{skipped} record{'s' if skipped != 1 else ''} of a type Reprise does not know "
                        f"({', '.join(unknown[:5])}{', …' if len(unknown) > 5 else ''}) skipped")
    if info.cut_at is not None:
        warnings.append(f"the conversation's oldest record names a parent the file does not have ({info.cut_at}): "
                        "the turns before it are not in this file")
    return transcript, warnings


def _compaction(record: Record, before_turn: int) -> Compaction:
    metadata = record.get("compactMetadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    return Compaction(before_turn=before_turn, at=stamp_of(record), tokens_after=_int(metadata.get("postTokens")),
                      tokens_before=_int(metadata.get("preTokens")))


def _notes(transcript: Transcript, branches: int, subagents: int, before_first: int) -> None:
    notes = transcript.notes
    if branches:
        notes.append(f"{branches} rewound or forked branch{'es' if branches != 1 else ''} in this file "
                     f"{'are' if branches != 1 else 'is'} not part of the conversation Claude Code resumes.")
    if subagents:
        notes.append(f"{subagents} subagent transcript{'s' if subagents != 1 else ''} beside this session "
                     f"{'are' if subagents != 1 else 'is'} not shown.")
    if before_first:
        notes.append(f"{before_first} record{'s' if before_first != 1 else ''} before the first prompt "
                     "(a resumed or compacted start) are not shown as a turn.")


def _result_text(block: dict[str, Any], raw: Any) -> str:
    """What a tool gave back: its stdout and stderr when Claude Code recorded them, else the result block."""
    stdout = raw.get("stdout") if isinstance(raw, dict) else None
    if isinstance(stdout, str):
        stderr = raw.get("stderr")
        return stdout + (f"\n{stderr}" if isinstance(stderr, str) and stderr else "")
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content
                         if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str))
    return ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
