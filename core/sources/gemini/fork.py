"""A Gemini CLI session trimmed as a fork: pure planning (the session file's bytes and the trim
options -> the new session file's bytes and the preview figures).

The session is read as the client loads it (`lines.chat_of_bytes`: headers, `$set`, messages
replaced by id, `$rewindTo`), so a rewound message or one a later `$set.messages` replaced is not in
the fork. The fork is a flat file in the client's byte form (`writer.py`): one header naming the new
id, the original's `projectHash` and `directories`, started and updated at the moment of the fork,
then one line per kept message. It has no `$set.messages` snapshot, so a dropped turn is nowhere in
it; it leaves out the original's `summary` (the client's title of the whole session) and
`memoryScratchpad` (its notes may describe dropped turns). Its name is the client's for a session
started now (`session-<minute>-<id8>.jsonl`), beside the original in the same `chats/` folder: the
client resumes it there by its id (checked with the real client, tests/compat/gemini/test_writes_compat.py).

A turn is a prompt (a user message the client resumes whose content has text: not a command, not
injected `<session_context>`, not only tool results) and every message up to the next prompt: the
model's replies with their tool calls (each holds its calls' results), the user messages holding
tool results, the client's info and error lines. What comes before the first prompt (the injected
session context) is every turn's and is kept. `--cap-replies` cuts the text of the model's replies
and the tool results of the kept turns but the newest `spare` (a prompt never), each cut ending with
a marker naming the original's SHA-256 (archived with the fork). Planning has no clock and no
randomness: the fork's id and moment are given.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...errors import UsageError
from ...trimming import Original, TrimOptions, TrimPlan
from .. import fork_steps
from ..fork_steps import BuiltFork, Steps
from .lines import Chat, chat_of_bytes, content_text, prompt_text
from .writer import header, session_bytes

LEFT_OUT = ("summary", "memoryScratchpad")   # metadata of the whole original, not copied into a fork


@dataclass(frozen=True, slots=True)
class GeminiTurn:
    """One turn: its number (from 1), id (its prompt message's), and the indexes `[start, end)` of its messages."""

    number: int
    turn_id: str
    start: int
    end: int


@dataclass(slots=True)
class ForkState:
    """What the new session file holds besides its bytes: its id and kept turns, what it left out."""

    fork_id: str
    kept_turns: list[str]
    removed_tokens: int = 0


def new_session_id() -> str:
    """A fresh session id, as the client makes one (a random UUID)."""
    return str(uuid.uuid4())


def split_turns(messages: list[dict[str, Any]]) -> list[GeminiTurn]:
    """The turns of a session's merged messages (what comes before the first prompt is in none)."""
    starts = [at for at, message in enumerate(messages) if prompt_text(message) is not None]
    ends = [*starts[1:], len(messages)][:len(starts)]
    return [GeminiTurn(number, str(messages[start]["id"]), start, end)
            for number, (start, end) in enumerate(zip(starts, ends, strict=True), start=1)]


def message_texts(message: dict[str, Any]) -> list[str]:
    """The texts of a message the model is sent: its content, its tool calls' arguments and results."""
    texts = [content_text(message.get("content"))]
    for call in message.get("toolCalls") or ():
        if isinstance(call, dict):
            texts += [json.dumps(call.get(key), ensure_ascii=False) if not isinstance(call.get(key), str)
                      else call[key] for key in ("args", "result") if call.get(key) is not None]
    return [text for text in texts if text]


class _Capper(fork_steps.TextCapper):
    """Cuts the model's reply texts and the tool results of one message, counting what it cut."""

    def parts(self, content: Any) -> Any:
        """A content (a string, a part, or a list of them) with its `text` parts cut (thoughts kept whole)."""
        if isinstance(content, str):
            return self.text(content)
        if isinstance(content, list):
            return [self.parts(part) for part in content]
        if isinstance(content, dict) and isinstance(content.get("text"), str) and not content.get("thought"):
            return {**content, "text": self.text(content["text"])}
        if isinstance(content, dict) and isinstance(content.get("functionResponse"), dict):
            return {**content, "functionResponse": self._response(content["functionResponse"])}
        return content

    def _response(self, response: dict[str, Any]) -> dict[str, Any]:
        inner = response.get("response")
        if isinstance(inner, dict) and isinstance(inner.get("output"), str):
            return {**response, "response": {**inner, "output": self.text(inner["output"])}}
        return response

    def message(self, message: dict[str, Any]) -> dict[str, Any]:
        """The message with its replies and tool results cut; a prompt is the person's and is never cut."""
        if message.get("type") == "gemini":
            changed = {**message, "content": self.parts(message.get("content"))}
            calls = message.get("toolCalls")
            if isinstance(calls, list):
                changed["toolCalls"] = [{**call, "result": self.parts(call["result"])}
                                        if isinstance(call, dict) and call.get("result") is not None else call
                                        for call in calls]
            return changed
        if message.get("type") == "user" and prompt_text(message) is None:   # tool results sent back
            return {**message, "content": self.parts(message.get("content"))}
        return message


_Built = BuiltFork[ForkState]


def plan_fork(data: bytes, options: TrimOptions, *, fork_id: str, now: datetime, context_before: int | None,
              count: Callable[[str], int]) -> TrimPlan:
    """The trimmed copy of a Gemini CLI session file (its bytes) with these options; pure and
    deterministic (`now`: the fork's start). `context_before` is the original's measured context; the
    copy's is that minus the tokens of what it leaves out or cuts (`count` counts a text), an estimate
    until its first turn."""
    fork_steps.refuse_options(options, "Gemini CLI")
    original = Original.of(data)
    chat = chat_of_bytes(data)
    if not chat.session_id:
        raise UsageError("This file names no Gemini CLI session (no sessionId); Reprise does not fork it.")
    if chat.kind == "subagent":
        raise UsageError("This is a subagent's session, which Gemini CLI does not resume; Reprise does not fork it.")
    turns = split_turns(chat.messages)
    if not turns:
        raise UsageError("This session has no prompt yet: there is nothing to trim.")
    notes = fork_steps.cut_line_notes(len(data), chat.end) if not chat.legacy else []
    if chat.warnings:
        notes.append(f"{len(chat.warnings)} line(s) of the original Gemini CLI ignores were left out")
    if chat.rewound:
        notes.append("the original was rewound: the fork holds what Gemini CLI would resume, without the "
                     "messages the rewind took away")
    try:
        chosen = fork_steps.chosen_fork(chat.session_id, options, original, turns, context_before, notes,
                                        lambda steps: _build(chat, turns, steps, fork_id, now, original, count))
    except RecursionError:
        raise UsageError("A message of this session is nested too deeply to be written again; Reprise does not "
                         "fork it.") from None
    if isinstance(chosen, TrimPlan):
        return chosen
    built, _, fit = chosen
    notes.append("the fork's context is an estimate (the measured context minus what was left out) until its "
                  "first turn")
    left_out = [key for key in LEFT_OUT if chat.metadata.get(key)]
    if left_out:
        notes.append(f"the original's {' and '.join(left_out)} describe(s) the whole session and was left out")
    return fork_steps.fork_plan(chat.session_id, options, original, built, context_before, fit, notes)


def _build(chat: Chat, turns: list[GeminiTurn], steps: Steps, fork_id: str, now: datetime, original: Original,
           count: Callable[[str], int]) -> _Built:
    messages = chat.messages
    gone = {at for index in steps.drop for at in range(turns[index].start, turns[index].end)}
    removed = sum(count(text) for at in sorted(gone) for text in message_texts(messages[at]))
    capped: dict[int, int] = {}   # message index -> its turn's index
    if steps.cap is not None:
        kept_turns = [index for index in range(len(turns)) if index not in steps.drop]
        for index in kept_turns[:max(len(kept_turns) - steps.spare, 0)]:
            capped.update((at, index) for at in range(turns[index].start, turns[index].end))
    cut_by_turn: dict[int, int] = {}
    out: list[dict[str, Any]] = []
    for at, message in enumerate(messages):
        if at in gone:
            continue
        if at in capped:
            capper = _Capper(steps.cap or 0, original.sha256, count)
            message = capper.message(message)
            if capper.cut:
                cut_by_turn[capped[at]] = cut_by_turn.get(capped[at], 0) + capper.cut
                removed += capper.tokens
        out.append(message)
    directories = chat.metadata.get("directories")
    head = header(fork_id, chat.project_hash or "", now, now,
                  directories=[item for item in directories if isinstance(item, str)]
                  if isinstance(directories, list) else None)
    changes, kept_ids = fork_steps.turn_changes(turns, steps.drop, cut_by_turn)
    return _Built(session_bytes(head, out), ForkState(fork_id, kept_ids, removed), changes)
