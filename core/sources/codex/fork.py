"""A Codex rollout trimmed as a fork: pure planning (the rollout's bytes, and for a fork Codex made
the records it inherits, with the trim options -> the new rollout's bytes and the preview figures).

Codex's own rollout is never rewritten. The new rollout goes in the original's date folder, named
like it but for the new id (a uuid v7), which is also `session_meta.id` (and `session_id`): Codex
refuses a rollout whose name and `session_meta` disagree. A turn is the run of records after the
previous turn's end up to its `task_complete` (or `turn_aborted`), holding one `task_started` (as
`fields.py` counts turns); a dropped turn goes whole, except, in the thread's first turn, the context
Codex injected before its prompt (the tool list, the developer instructions, the environment, the
`world_state`), which every later turn relies on. No tool call is left without its output (nor an
output without its call). `--cap-replies` cuts the replies and tool outputs of the kept turns but the
newest `spare` (in the history items and the events repeating them; a prompt never), each cut ending
with a marker naming the original's SHA-256 (archived with the fork); `--fit` climbs the same ladder
as Claude Code's forks. A compaction kept after a dropped turn no longer carries that turn's prompt
in its `replacement_history` nor its messages in its `retained_context` (its summary text may still
mention it: a note says so). Every other
line is kept byte for byte, unknown records included; `ordinal` and `metadata` sequence gaps are
fine for Codex (README of tests/fixtures/codex-store).

A fork Codex made (`forked_from_id`) holds only its own turns: its trim is written self-contained,
the inherited records (its parents' lines before the fork) first, then its own, under its
`session_meta` without `forked_from_id`, `forked_from_ordinal_exclusive` and `history_base`, the
one form the real client was seen to accept alone. Planning has no clock and no randomness: the
fork's id is given.
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...errors import UsageError
from ...trimming import Original, TrimOptions, TrimPlan
from .. import agent_json, fork_steps
from ..fork_steps import BuiltFork, Steps
from .records import COMPACTED, EVENT, RESPONSE_ITEM, SESSION_META, Record, kind_of, payload_of, prompt_of, text_of
from .transcript import CALLS, OUTPUTS

FORK_FIELDS = ("forked_from_id", "forked_from_ordinal_exclusive", "history_base")
ENDS = frozenset({"task_complete", "turn_aborted", "aborted"})
# What Codex injects at the start of a thread, before the first prompt: kept when that turn is dropped.
SETUP_ITEMS = frozenset({"additional_tools", "message"})
SETUP_ROLES = frozenset({"developer", "user"})


def dumps(record: Record) -> bytes:
    """One record in Codex's byte form: compact JSON, not ASCII-escaped, one line."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"


@dataclass(slots=True)
class Line:
    """One record of the new rollout, with the bytes it was read as (None: written anew)."""

    record: Record
    raw: bytes | None = None

    def encoded(self) -> bytes:
        return self.raw if self.raw is not None else dumps(self.record)


@dataclass(frozen=True, slots=True)
class CodexTurn:
    """One turn: its number (from 1, as the transcript shows it), id (`task_started.turn_id`), the
    indexes of its records `[start, end)`, its prompt, and where its prompt begins."""

    number: int
    turn_id: str
    start: int
    end: int
    prompt: str
    prompt_at: int


@dataclass(slots=True)
class ForkState:
    """What the new rollout holds besides its bytes: its id, its kept turns, what it left out."""

    fork_id: str
    kept_turns: list[str]
    removed_tokens: int = 0
    self_contained: bool = False
    dropped_calls: list[str] = field(default_factory=list)


def read_lines(data: bytes) -> tuple[list[Line], int, list[str]]:
    """The rollout's complete lines as records with their bytes, the offset past the last complete
    line, and the numbers of the lines that are not JSON objects (kept as they are)."""
    end = data.rfind(b"\n") + 1
    lines: list[Line] = []
    bad: list[str] = []
    for number, raw in enumerate(data[:end].split(b"\n")[:-1], start=1):
        try:
            record = agent_json.loads(raw)
        except (ValueError, RecursionError):   # kept as it was, byte for byte, like any line not a record
            record = None
        if not isinstance(record, dict):
            bad.append(str(number))
            record = {}
        lines.append(Line(record, raw + b"\n"))
    return lines, end, bad


def split_turns(lines: list[Line], session_id: str) -> list[CodexTurn]:
    """The turns of these records (the first, `session_meta`, is in none)."""
    turns: list[CodexTurn] = []
    begin, start, turn_id = 1, None, ""

    def close(end: int) -> None:
        assert start is not None
        prompt, prompt_at = _prompt_of(lines, start, end)
        turns.append(CodexTurn(len(turns) + 1, turn_id or f"{session_id[-8:]}-{len(turns) + 1}", start, end, prompt,
                               prompt_at))

    for at, line in enumerate(lines):
        kind, inner = kind_of(line.record)
        if kind == SESSION_META and at == 0:
            continue
        if kind != EVENT:
            continue
        if inner == "task_started":
            if start is not None:
                close(at)
                begin = at
            start = begin
            found = payload_of(line.record).get("turn_id")
            turn_id = found if isinstance(found, str) else ""
        elif inner in ENDS and start is not None:
            close(at + 1)
            begin, start = at + 1, None
    if start is not None:
        close(len(lines))
    return turns


def _prompt_of(lines: list[Line], start: int, end: int) -> tuple[str, int]:
    """The turn's prompt (its event), and the index its prompt's first record has (the response_item
    user message of that text, which Codex writes just before the event)."""
    prompt, event_at = "", end
    for at in range(start, end):
        kind, inner = kind_of(lines[at].record)
        if kind == EVENT and (found := prompt_of(inner, payload_of(lines[at].record))) is not None:
            prompt, event_at = found, at
            break
    for at in range(start, event_at):
        payload = payload_of(lines[at].record)
        if kind_of(lines[at].record) == (RESPONSE_ITEM, "message") and payload.get("role") == "user" \
                and text_of(payload.get("content")) == prompt:
            return prompt, at
    return prompt, event_at


def _role(payload: dict[str, Any]) -> str:
    """A message's role ("" when the record says something that is not one)."""
    role = payload.get("role")
    return role if isinstance(role, str) else ""


def _is_setup(record: Record) -> bool:
    kind, inner = kind_of(record)
    if kind == "world_state":
        return True
    payload = payload_of(record)
    return kind == RESPONSE_ITEM and inner in SETUP_ITEMS and (inner != "message" or _role(payload) in SETUP_ROLES)


def _texts(record: Record) -> Iterable[str]:
    """The texts of a history item the model would be sent: a message's, a tool call's input and output."""
    kind, inner = kind_of(record)
    if kind != RESPONSE_ITEM or inner == "additional_tools":
        return
    payload = payload_of(record)
    if inner in ("message", "reasoning"):
        yield text_of(payload.get("content")) or text_of(payload.get("summary"))
        return
    for key in ("arguments", "input", "output", "action"):
        value = payload.get(key)
        if value is not None:
            yield value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _call_id(record: Record, kinds: frozenset[str]) -> str | None:
    kind, inner = kind_of(record)
    value = payload_of(record).get("call_id")
    return value if kind == RESPONSE_ITEM and inner in kinds and isinstance(value, str) else None


def _new_meta(line: Line, fork_id: str, self_contained: bool) -> Line:
    payload = dict(payload_of(line.record), id=fork_id)
    if "session_id" in payload:
        payload["session_id"] = fork_id
    if self_contained:
        payload = {key: value for key, value in payload.items() if key not in FORK_FIELDS}
    return Line({**line.record, "payload": payload})


def _dropped_item(item: Any, metadata: Any, prompts: set[str], turn_ids: set[str]) -> bool:
    """Whether a `replacement_history` item is a dropped turn's: its prompt, or retained from that turn."""
    if isinstance(metadata, dict):
        source = metadata.get("retained_source")
        named = source.get("id") if isinstance(source, dict) else None
        if isinstance(named, dict) and named.get("turn_id") in turn_ids:
            return True
    return isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user" \
        and text_of(item.get("content")) in prompts


def _without_turns(line: Line, prompts: set[str], turn_ids: set[str]) -> Line:
    """A `compacted` record that no longer holds what dropped turns said: their prompts (user messages)
    in its `replacement_history` (with their entries of `replacement_history_metadata`, which go item for
    item), and their messages in its `retained_context` (named by `turn_id`)."""
    payload = payload_of(line.record)
    changed = dict(payload)
    history = payload.get("replacement_history")
    metadata = payload.get("replacement_history_metadata")
    if isinstance(history, list):
        aligned = isinstance(metadata, list) and len(metadata) == len(history)   # one entry per item
        gone = {at for at, item in enumerate(history) if _dropped_item(
            item, metadata[at] if aligned and isinstance(metadata, list) else None, prompts, turn_ids)}
        changed["replacement_history"] = [item for at, item in enumerate(history) if at not in gone]
        if aligned and isinstance(metadata, list):
            changed["replacement_history_metadata"] = [entry for at, entry in enumerate(metadata) if at not in gone]
    retained = payload.get("retained_context")
    if isinstance(retained, dict):
        changed["retained_context"] = {
            key: [item for item in value if not (isinstance(item, dict) and item.get("turn_id") in turn_ids)]
            if isinstance(value, list) else value for key, value in retained.items()}
    if changed == payload:
        return line
    return Line({**line.record, "payload": changed})


_Built = BuiltFork[ForkState]


def plan_fork(data: bytes, options: TrimOptions, *, fork_id: str, context_before: int | None,
              count: Callable[[str], int], inherited: list[Record] | None = None) -> TrimPlan:
    """The trimmed copy of a Codex rollout (its bytes) with these options; pure and deterministic.

    `inherited`: the records a fork Codex made inherits (`lineage.inherited`), written into the copy
    so it stands alone. `context_before` is the original's measured context; the copy's is that minus
    the tokens of the history it leaves out or cuts (`count` counts a text), an estimate until its first
    turn."""
    fork_steps.refuse_options(options, "Codex")
    original = Original.of(data)
    own, end, bad = read_lines(data)
    if not own or kind_of(own[0].record)[0] != SESSION_META:
        raise UsageError("This rollout does not start with its session_meta record; Reprise does not fork it.")
    session_id = str(payload_of(own[0].record).get("id") or "")
    notes = fork_steps.cut_line_notes(len(data), end)
    if bad:
        notes.append(f"line(s) {', '.join(bad[:10])} of the original are not JSON records; the fork keeps them as "
                     "they are")
    self_contained = inherited is not None
    lines = [own[0]]
    if inherited:
        lines += [Line(record) for record in inherited if kind_of(record)[0] != SESSION_META]
    lines += own[1:]
    if not any(kind_of(line.record) == (EVENT, "task_started") for line in lines):
        raise UsageError("This rollout has no turn markers (task_started): it was written by an older Codex, whose "
                         "rollouts Reprise does not trim.")
    turns = split_turns(lines, session_id)
    chosen = fork_steps.chosen_fork(session_id, options, original, turns, context_before, notes,
                         lambda steps: _build(lines, turns, steps, fork_id, self_contained, original, count))
    if isinstance(chosen, TrimPlan):
        return chosen
    built, _, fit = chosen
    notes.append("the fork's context is an estimate (the measured context minus what was left out) until its "
                 "first turn: its copied token counts describe the untrimmed session")
    if self_contained:
        notes.append("a fork Codex made holds only its own turns: this one is written whole (the history it "
                     "inherits, then its own turns), without its lineage fields, so it resumes on its own")
    compacted_at = [at for at, line in enumerate(lines) if kind_of(line.record)[0] == COMPACTED]
    dropped_now = [change.number - 1 for change in built.changes if change.change == "dropped"]
    notes += fork_steps.compaction_notes([turns[index].number for index in dropped_now
                               if any(at >= turns[index].end for at in compacted_at)], "Codex")
    if built.state.dropped_calls:
        notes.append(f"{len(built.state.dropped_calls)} tool call(s) without their output (or outputs without their "
                     "call) were left out")
    return fork_steps.fork_plan(session_id, options, original, built, context_before, fit, notes)


class _Capper(fork_steps.TextCapper):
    """Caps the replies and tool outputs of one record (the history item and the events that repeat
    it), counting what it cut; a prompt is the person's and is never cut."""

    def parts(self, parts: Any) -> Any:
        if isinstance(parts, str):
            return self.text(parts)
        if not isinstance(parts, list):
            return parts
        return [{**part, "text": self.text(part["text"])}
                if isinstance(part, dict) and isinstance(part.get("text"), str) else part for part in parts]

    def record(self, record: Record) -> Record:
        kind, inner = kind_of(record)
        payload = payload_of(record)
        if kind == RESPONSE_ITEM and inner == "message" and payload.get("role") == "assistant":
            payload = {**payload, "content": self.parts(payload.get("content"))}
        elif kind == RESPONSE_ITEM and inner in OUTPUTS:
            payload = {**payload, "output": self.parts(payload.get("output"))}
        elif kind == EVENT and inner == "task_complete" and isinstance(payload.get("last_agent_message"), str):
            payload = {**payload, "last_agent_message": self.text(payload["last_agent_message"])}
        elif kind == EVENT and inner == "item_completed" and isinstance(payload.get("item"), dict):
            item = payload["item"]
            if item.get("type") == "AgentMessage":
                payload = {**payload, "item": {**item, "content": self.parts(item.get("content"))}}
            elif item.get("type") == "CommandExecution" and isinstance(item.get("aggregated_output"), str):
                payload = {**payload, "item": {**item, "aggregated_output": self.text(item["aggregated_output"])}}
            else:
                return record
        else:
            return record
        return {**record, "payload": payload}


def _build(lines: list[Line], turns: list[CodexTurn], steps: Steps, fork_id: str, self_contained: bool,
           original: Original, count: Callable[[str], int]) -> _Built:
    gone: set[int] = set()
    for index in steps.drop:
        turn = turns[index]
        for at in range(turn.start, turn.end):
            if not (index == 0 and at < turn.prompt_at and _is_setup(lines[at].record)):
                gone.add(at)
    kept = [at for at in range(len(lines)) if at not in gone]
    calls = {call for at in kept if (call := _call_id(lines[at].record, CALLS)) is not None}
    outputs = {call for at in kept if (call := _call_id(lines[at].record, OUTPUTS)) is not None}
    orphans = [at for at in kept if (_call_id(lines[at].record, CALLS) or "") in calls - outputs
               or (_call_id(lines[at].record, OUTPUTS) or "") in outputs - calls]
    gone.update(orphans)
    removed = sum(count(text) for at in sorted(gone) for text in _texts(lines[at].record) if text)
    capped: dict[int, int] = {}   # line index -> its turn's index
    if steps.cap is not None:
        kept_turns = [index for index in range(len(turns)) if index not in steps.drop]
        for index in kept_turns[:max(len(kept_turns) - steps.spare, 0)]:
            capped.update((at, index) for at in range(turns[index].start, turns[index].end))
    cut_by_turn: dict[int, int] = {}
    prompts = {turns[index].prompt for index in steps.drop if turns[index].prompt}
    turn_ids = {turns[index].turn_id for index in steps.drop}
    out: list[Line] = []
    for at, line in enumerate(lines):
        if at in gone:
            continue
        if at == 0:
            line = _new_meta(line, fork_id, self_contained)
        elif kind_of(line.record)[0] == COMPACTED and steps.drop:
            line = _without_turns(line, prompts, turn_ids)
        elif at in capped:
            capper = _Capper(steps.cap or 0, original.sha256, count)
            record = capper.record(line.record)
            if capper.cut:
                line = Line(record)
                cut_by_turn[capped[at]] = cut_by_turn.get(capped[at], 0) + capper.cut
                if kind_of(record)[0] == RESPONSE_ITEM:   # what the model is sent; the events repeat it
                    removed += capper.tokens
        out.append(line)
    changes, kept_ids = fork_steps.turn_changes(turns, steps.drop, cut_by_turn)
    dropped_calls = [str(_call_id(lines[at].record, CALLS | OUTPUTS)) for at in orphans]
    state = ForkState(fork_id, kept_ids, removed, self_contained, dropped_calls)
    return _Built(b"".join(line.encoded() for line in out), state, changes)


def new_thread_id(now: float | None = None) -> str:
    """A fresh thread id (a fork's, a new session's): a uuid v7, 48 bits of Unix milliseconds then random."""
    millis = int((time.time() if now is None else now) * 1000)
    value = (millis << 80) | secrets.randbits(80)
    value = (value & ~(0xF << 76)) | (0x7 << 76)       # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)       # RFC 4122 variant
    return str(uuid.UUID(int=value))


def fork_name(original_name: str, fork_id: str) -> str:
    """`rollout-<the original's timestamp>-<fork_id>.jsonl`: the same date folder, the new id."""
    stem = original_name.removesuffix(".jsonl")
    return f"{stem[:-36]}{fork_id}.jsonl"
