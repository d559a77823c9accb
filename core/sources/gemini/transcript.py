"""A Gemini CLI session as the neutral transcript: its messages after the client's merge
(`lines.py`: what the client would send, a rewound part left out), one turn per prompt.

A prompt is a user message the client resumes with text in it (never the injected
`<session_context>`, a command, or the tool results a user message carries back). Each turn holds
the gemini replies' text (its reply), their thoughts (kept apart, shown folded), their tool calls
with each call's result (the client writes a call again once it has its result), the commands
`run_shell_command` ran and the files its file tools read and changed (observed by the client),
its error messages, and its usage: the gemini replies' tokens summed, with the context measured at
the newest reply's input. After a resume the client rewrites the history as the API's parts (a reply's
calls as `functionCall` parts, their results in the user messages after it, no `toolCalls`, no
`tokens`): the calls and results are read from those parts; the usage of such replies is gone from
the file (tests/fixtures/gemini/resumed-tool-0.61.0).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ...transcript import Command, FileTouch, Status, ToolCall, Transcript, Turn, Usage
from ..agent_transcript import cut
from .fields import TOKEN_KEYS, integer
from .lines import Chat, content_text, prompt_text

SOURCE = "gemini"
SHELL_TOOLS = frozenset({"run_shell_command"})
READ_TOOLS = frozenset({"read_file", "read_many_files"})
WRITE_TOOLS = frozenset({"write_file", "replace", "edit"})
_PATH_KEYS = ("file_path", "absolute_path", "path")
REWOUND_NOTE = ("Rewound in Gemini CLI: the messages it took back are not shown, and the client does not "
                "send them any more.")


def as_json(value: Any) -> str:
    """A JSON value as text, or a sentence when it is nested too deeply to write."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (RecursionError, ValueError):
        return "(a value nested too deeply to show)"


def _arguments(call: dict[str, Any]) -> str:
    args = call.get("args")
    if isinstance(args, str):
        return args
    return as_json(args) if args is not None else ""


def result_text(result: Any) -> str:
    """The text a tool call's result carries back: its function responses' `output` (or `error`),
    else the result as JSON."""
    if isinstance(result, str):
        return result
    parts = result if isinstance(result, list) else [result]
    texts = []
    for part in parts:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        answer = response.get("response") if isinstance(response, dict) else None
        if isinstance(answer, dict):
            text = answer.get("output", answer.get("error"))
            if isinstance(text, str):
                texts.append(text)
                continue
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part is not None:
            texts.append(as_json(part))
    return "\n".join(texts)


class _TurnBuilder:
    """The facts of one turn, gathered message by message."""

    def __init__(self, turn_id: str, prompt: str, stamp: str | None):
        self.turn = Turn(turn_id=turn_id, user_message=prompt, status="interrupted", started_at=stamp, ended_at=stamp)
        self.replies: list[str] = []
        self.thoughts: list[str] = []
        self.errors: list[str] = []
        self.totals = [0] * len(TOKEN_KEYS)
        self.calls = 0
        self.context: int | None = None
        self.replied = False
        self.pending: dict[object, int] = {}   # a snapshot's function call ids -> their index in tool_calls

    def responses(self, message: dict[str, Any]) -> None:
        """A user message of function responses: the results of the snapshot's calls it answers (the
        client writes them twice after a resume: the first one is kept)."""
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            at = self.pending.pop(response.get("id"), None) if isinstance(response, dict) else None
            if at is not None:
                call = self.turn.tool_calls[at]
                self.turn.tool_calls[at] = replace(call, result=cut(result_text([part])))

    def gemini(self, message: dict[str, Any]) -> None:
        content = message.get("content")
        asked = _function_calls(content)
        text = content_text(content) if not asked else _texts(content)
        if text.strip():
            self.replies.append(text)
        thoughts = message.get("thoughts")
        for thought in thoughts if isinstance(thoughts, list) else []:
            if isinstance(thought, dict):
                said = "\n".join(str(thought[key]) for key in ("subject", "description")
                                 if isinstance(thought.get(key), str) and thought[key])
                if said:
                    self.thoughts.append(said)
        calls = message.get("toolCalls")
        waiting = False
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                waiting = self._call(call) or waiting
        if not isinstance(calls, list):   # a resume's snapshot: the API's calls, their results in user messages
            for call in asked:
                self.pending[call.get("id")] = len(self.turn.tool_calls)
                waiting = self._call({"name": call.get("name"), "args": call.get("args")}) or waiting
        tokens = message.get("tokens")
        if isinstance(tokens, dict) and integer(tokens.get("input")) is not None:
            self.calls += 1
            self.totals = [total + (integer(tokens.get(key)) or 0) for total, key in zip(self.totals, TOKEN_KEYS,
                                                                                          strict=True)]
            self.context = integer(tokens.get("input"))
        self.replied = not waiting

    def _call(self, call: dict[str, Any]) -> bool:
        """Add one tool call; whether it still waits on its result."""
        name = call.get("name") if isinstance(call.get("name"), str) else "tool"
        assert isinstance(name, str)
        has_result = "result" in call and call.get("result") is not None
        status = call.get("status")
        args = call.get("args") if isinstance(call.get("args"), dict) else {}
        assert isinstance(args, dict)
        shell = args["command"] if name in SHELL_TOOLS and isinstance(args.get("command"), str) else None
        self.turn.tool_calls.append(ToolCall(name, cut(_arguments(call)),
                                             cut(result_text(call.get("result"))) if has_result else None,
                                             is_error=status == "error", shell=shell))
        if name in SHELL_TOOLS and isinstance(args.get("command"), str):
            self.turn.commands.append(Command(args["command"], "observed"))
        path = next((args[key] for key in _PATH_KEYS if isinstance(args.get(key), str)), None)
        if path is not None and name in READ_TOOLS:
            self.turn.files_read.append(FileTouch(path, "observed"))
        elif path is not None and name in WRITE_TOOLS:
            self.turn.files_modified.append(FileTouch(path, "observed"))
        return not has_result and status not in ("error", "cancelled", "success")

    def finish(self) -> Turn:
        turn = self.turn
        turn.reply = "\n\n".join(self.replies)
        turn.thinking = "\n\n".join(self.thoughts)
        status: Status = "succeeded" if self.replied else "interrupted"
        if self.errors:
            status, turn.error = "failed", self.errors[-1]
        turn.status = status
        if self.calls:
            input_tokens, output, cached, thoughts, tool = self.totals
            turn.usage = Usage(input_tokens=max(0, input_tokens + tool - cached), output_tokens=output + thoughts,
                               cache_read_tokens=cached, context_tokens=self.context, iterations=self.calls)
        return turn


def read_transcript(chat: Chat, session_id: str | None = None, *, subagents: int = 0) -> tuple[Transcript, list[str]]:
    """The session as the neutral transcript, and the notes on what it leaves out."""
    transcript = Transcript(SOURCE, session_id or chat.session_id or "")
    current: _TurnBuilder | None = None
    before_first = 0
    for message in chat.messages:
        kind = message.get("type")
        stamp = message.get("timestamp") if isinstance(message.get("timestamp"), str) else None
        prompt = prompt_text(message)
        if prompt is not None:
            if current is not None:
                transcript.turns.append(current.finish())
            message_id = message.get("id")
            current = _TurnBuilder(message_id if isinstance(message_id, str) else f"turn-{len(transcript.turns) + 1}",
                                   prompt, stamp)
            continue
        if current is None:
            before_first += kind == "gemini"
            continue
        if stamp is not None:
            current.turn.ended_at = stamp
        if kind == "gemini":
            current.gemini(message)
        elif kind == "user" and current.pending:
            current.responses(message)
        elif kind == "error":
            current.errors.append(content_text(message.get("content")) or "an error")
    if current is not None:
        transcript.turns.append(current.finish())
    notes = []
    if chat.rewound:
        transcript.notes.append(REWOUND_NOTE)
    if subagents:
        transcript.notes.append(f"{subagents} subagent session{'s' if subagents != 1 else ''} of this session "
                                f"{'are' if subagents != 1 else 'is'} not shown.")
    if before_first:
        notes.append(f"{before_first} gemini message{'s' if before_first != 1 else ''} before the first prompt "
                     "are not shown")
    return transcript, notes


def _function_calls(content: Any) -> list[dict[str, Any]]:
    """The `functionCall` parts of a message's content (how a resume's snapshot holds a reply's calls)."""
    parts = content if isinstance(content, list) else []
    return [part["functionCall"] for part in parts
            if isinstance(part, dict) and isinstance(part.get("functionCall"), dict)]


def _texts(content: Any) -> str:
    """The text parts of a content list, without the placeholders of its calls."""
    parts = content if isinstance(content, list) else []
    return "".join(part["text"] for part in parts
                   if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"))
