"""A Claude Code session trimmed as a fork: pure planning (the original file's bytes and the trim
options -> the fork's bytes and the preview figures), then writing the fork beside the original.

Claude Code's own file is never rewritten. The fork is a new file in the original's folder (the
slug is lossy: never computed), named by a new uuid, with the new `sessionId` in every record. It
keeps the kept turns' `user`, `assistant`, `attachment` and `system` records of the main chain,
with each `parentUuid` re-joined to the nearest kept ancestor; no `tool_use` without its result;
`thinking` blocks copied whole (they carry signatures). It drops what repeats the text of dropped
turns: the request log (`api-request-shape`, `api-request-blob`, `api-request`), `prompt_snapshot`
attachments, `queue-operation` records, the old `last-prompt` records (one is written for the fork's
leaf), records off the main chain (rewound branches), `file-history-snapshot` records of dropped
messages, and the model's own `summary` and `ai-title` records when turns are dropped. Capped text
ends with a marker naming the original's SHA-256 (archived with the fork).
Planning has no clock and no randomness: the fork's id is given.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...trimming import Original, TrimOptions, TrimPlan, cap_marker
from .. import agent_json, fork_steps
from ..fork_steps import BuiltFork, Steps
from .chain import main_chain_records
from .messages import BOUNDARY, PROMPT, RESULT, kind_of, prompt_text, turn_starts
from .records import Record, parse_lines

DROPPED_TYPES = frozenset({"api-request-shape", "api-request-blob", "api-request", "queue-operation", "last-prompt"})
CHAIN_TYPES = frozenset({"user", "assistant", "attachment", "system"})
# Written by the model about the conversation (older versions' `summary`, the `ai-title`): left out of
# a fork that drops turns, which they may describe. A `custom-title` is the person's: kept.
TITLES_OF_TEXT = frozenset({"summary", "ai-title"})
# The keys of a `toolUseResult` that hold a tool's output or a file's text (Bash, Read, Write, Agent...).
RESULT_TEXT_KEYS = frozenset({"stdout", "stderr", "content", "text", "output", "result", "originalFile"})


def dumps(record: Record) -> bytes:
    """One record in Claude Code's byte form: compact JSON, not ASCII-escaped, one line."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"


@dataclass(frozen=True, slots=True)
class ChainTurn:
    """One turn of the main chain: its number (from 1, as shown), id (its first record's uuid),
    the uuids of its records (up to a compaction boundary, which is never dropped) and its prompt."""

    number: int
    turn_id: str
    uuids: tuple[str, ...]
    prompt: str


@dataclass(slots=True)
class ForkState:
    """What the fork holds besides its bytes: its id, its kept turns, its leaf, and the sidecars of
    its kept turns (subagent ids, `tool-results/` file names mentioned in kept records)."""

    fork_id: str
    kept_turns: list[str]
    leaf: str | None
    agent_ids: list[str] = field(default_factory=list)
    tool_results: list[str] = field(default_factory=list)
    removed_tokens: int = 0


def chain_turns(records: list[Record]) -> tuple[list[Record], list[ChainTurn], str | None]:
    """The main chain's records, its turns, and its leaf uuid."""
    chain, info, _ = main_chain_records(records)
    kinds = [kind_of(record) for record in chain]
    starts = turn_starts(kinds)
    turns = []
    for number, start in enumerate(starts, start=1):
        end = starts[number] if number < len(starts) else len(chain)
        uuids = []
        for at in range(start, end):
            if kinds[at] == BOUNDARY:
                break   # a compaction and what follows it up to the next turn stay in every fork
            uuids.append(str(chain[at]["uuid"]))
        text = prompt_text(chain[start]) if kinds[start] == PROMPT else str(chain[start].get("uuid"))
        turns.append(ChainTurn(number, str(chain[start]["uuid"]), tuple(uuids), text))
    return chain, turns, info.leaf


def _capped_text(text: str, cap: int, original_sha256: str) -> tuple[str, int]:
    if len(text) <= cap:
        return text, 0
    return text[:cap] + cap_marker(len(text) - cap, original_sha256), len(text) - cap


class _Capper:
    """Caps the long texts of one record (reply text blocks, tool results, `toolUseResult` strings),
    counting what it cut; thinking blocks are never touched."""

    def __init__(self, cap: int, original_sha256: str, count: Callable[[str], int]):
        self.cap, self.sha, self.count = cap, original_sha256, count
        self.cut = 0
        self.tokens = 0

    def text(self, text: str) -> str:
        new, cut = _capped_text(text, self.cap, self.sha)
        if cut:
            self.cut += cut
            self.tokens += self.count(text[self.cap:])
        return new

    def record(self, record: Record) -> Record:
        message = record.get("message")
        reply = record.get("type") == "assistant"
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            message = dict(message)
            message["content"] = [self.block(block, reply) for block in message["content"]]
            record = {**record, "message": message}
        elif isinstance(message, dict) and isinstance(message.get("content"), str) and reply:
            record = {**record, "message": {**message, "content": self.text(message["content"])}}
        if "toolUseResult" in record and record.get("type") == "user":
            record = {**record, "toolUseResult": self.deep(record["toolUseResult"], None)}
        return record

    def block(self, block: Any, reply: bool) -> Any:
        """A reply's text block or a tool result capped; a prompt's text is the person's, never cut."""
        if not isinstance(block, dict):
            return block
        kind = block.get("type")
        if kind == "text" and reply and isinstance(block.get("text"), str):
            return {**block, "text": self.text(block["text"])}
        if kind == "tool_result":
            content = block.get("content")
            if isinstance(content, str):
                return {**block, "content": self.text(content)}
            if isinstance(content, list):
                return {**block, "content": [self.block(part, True) for part in content]}
        return block   # thinking (signed), tool_use, images: whole

    def deep(self, value: Any, key: str | None) -> Any:
        """`toolUseResult`'s texts (outputs, file contents), never its ids, names or paths."""
        if isinstance(value, str):
            return self.text(value) if key in RESULT_TEXT_KEYS else value
        if isinstance(value, list):
            return [self.deep(item, key) for item in value]
        if isinstance(value, dict):
            return {name: self.deep(item, name) for name, item in value.items()}
        return value


def _texts(record: Record) -> Iterable[str]:
    """Every text of a record the model would read: prompt, reply, thinking, tool input and output."""
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            for key in ("text", "thinking"):
                if isinstance(block.get(key), str):
                    yield block[key]
            if block.get("type") == "tool_use":
                yield json.dumps(block.get("input"), ensure_ascii=False)
            inner = block.get("content")
            if isinstance(inner, str):
                yield inner
            elif isinstance(inner, list):
                yield from (part["text"] for part in inner
                            if isinstance(part, dict) and isinstance(part.get("text"), str))


def _tool_ids(record: Record, kind: str, key: str) -> list[str]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [str(block.get(key)) for block in content if isinstance(block, dict) and block.get("type") == kind]


_Built = BuiltFork[ForkState]


def _build(records: list[Record], chain: list[Record], turns: list[ChainTurn], leaf: str | None, steps: Steps,
           fork_id: str, original: Original, count: Callable[[str], int]) -> _Built:
    chain_uuids = {str(record["uuid"]) for record in chain}
    dropped_turn_uuids = {uuid for index in steps.drop for uuid in turns[index].uuids}
    capped_uuids: dict[str, int] = {}
    if steps.cap is not None:
        kept_indices = [index for index in range(len(turns)) if index not in steps.drop]
        for index in kept_indices[:max(len(kept_indices) - steps.spare, 0)]:
            for uuid in turns[index].uuids:
                capped_uuids[uuid] = index
    parent_of: dict[str, str | None] = {}
    dropped: set[str] = set()
    removed_tokens = 0
    for record in records:
        record_id = record.get("uuid")
        if not isinstance(record_id, str):
            continue
        parent = record.get("logicalParentUuid") if kind_of(record) == BOUNDARY else record.get("parentUuid")
        parent_of.setdefault(record_id, parent if isinstance(parent, str) else None)
        attachment = record.get("attachment")
        if record_id in dropped_turn_uuids:
            dropped.add(record_id)
            removed_tokens += sum(count(text) for text in _texts(record))
        elif record_id not in chain_uuids or record.get("type") not in CHAIN_TYPES \
                or (isinstance(attachment, dict) and attachment.get("type") == "prompt_snapshot"):
            dropped.add(record_id)
    # Kept records, capped; then no tool call left without its result.
    kept: dict[int, Record] = {}
    cut_by_turn: dict[int, int] = {}
    for at, record in enumerate(records):
        record_id = record.get("uuid")
        if isinstance(record_id, str):
            if record_id in dropped:
                continue
            if record_id in capped_uuids:
                capper = _Capper(steps.cap or 0, original.sha256, count)
                record = capper.record(record)
                if capper.cut:
                    turn_at = capped_uuids[record_id]
                    cut_by_turn[turn_at] = cut_by_turn.get(turn_at, 0) + capper.cut
                    removed_tokens += capper.tokens
        kept[at] = record
    results = {tool_id for record in kept.values() if kind_of(record) == RESULT
               for tool_id in _tool_ids(record, "tool_result", "tool_use_id")}
    for at, record in list(kept.items()):
        if record.get("type") != "assistant" or not isinstance(record.get("uuid"), str):
            continue
        orphans = set(_tool_ids(record, "tool_use", "id")) - results
        if not orphans:
            continue
        message = record["message"]
        content = [block for block in message["content"] if not (
            isinstance(block, dict) and block.get("type") == "tool_use" and str(block.get("id")) in orphans)]
        if content:
            kept[at] = {**record, "message": {**message, "content": content}}
        else:
            del kept[at]
            dropped.add(record["uuid"])

    def joined(parent: str | None) -> str | None:
        seen: set[str] = set()
        while parent is not None and parent in dropped and parent not in seen:
            seen.add(parent)
            parent = parent_of.get(parent)
        return None if parent in dropped else parent

    out: list[bytes] = []
    last_prompt: str | None = None
    agent_ids: list[str] = []
    tool_results: list[str] = []
    for at in sorted(kept):
        record = kept[at]
        kind = record.get("type")
        if not isinstance(record.get("uuid"), str):
            if kind in DROPPED_TYPES or (kind in TITLES_OF_TEXT and steps.drop):
                continue
            if kind == "file-history-snapshot" and record.get("messageId") in dropped:
                continue
        else:
            if isinstance(record.get("parentUuid"), str):
                record = {**record, "parentUuid": joined(record["parentUuid"])}
            if isinstance(record.get("logicalParentUuid"), str):
                record = {**record, "logicalParentUuid": joined(record["logicalParentUuid"])}
            if kind_of(record) == BOUNDARY:
                record = _preserved_kept(record, dropped)
            if kind_of(record) == PROMPT:
                last_prompt = prompt_text(record)
            result = record.get("toolUseResult")
            agent_id = result.get("agentId") if isinstance(result, dict) else None
            if isinstance(agent_id, str) and is_plain_name(f"agent-{agent_id}") and agent_id not in agent_ids:
                agent_ids.append(agent_id)
        if "sessionId" in record:
            record = {**record, "sessionId": fork_id}
        line = dumps(record)
        for name in _tool_result_names(line):
            if name not in tool_results:
                tool_results.append(name)
        out.append(line)
    new_leaf = joined(leaf)
    if new_leaf is not None:
        tail: Record = {"type": "last-prompt"}
        if last_prompt is not None:
            tail["lastPrompt"] = last_prompt
        tail.update({"leafUuid": new_leaf, "sessionId": fork_id})
        out.append(dumps(tail))
    changes, kept_turns = fork_steps.turn_changes(turns, steps.drop, cut_by_turn)
    state = ForkState(fork_id, kept_turns, new_leaf, agent_ids, tool_results, removed_tokens)
    return _Built(b"".join(out), state, changes)


def _preserved_kept(boundary: Record, dropped: set[str]) -> Record:
    """A compaction boundary naming only kept records as the segment it preserved after its summary
    (Claude Code re-sends that segment, and skips what follows it when the segment is missing)."""
    metadata = boundary.get("compactMetadata")
    if not isinstance(metadata, dict):
        return boundary
    preserved = metadata.get("preservedMessages")
    segment = metadata.get("preservedSegment")
    named: set[str] = set()
    if isinstance(preserved, dict):
        named.update(u for key in ("uuids", "allUuids") for u in preserved.get(key) or () if isinstance(u, str))
    if isinstance(segment, dict):
        named.update(str(segment[key]) for key in ("headUuid", "tailUuid") if isinstance(segment.get(key), str))
    if not named & dropped:
        return boundary
    metadata = dict(metadata)
    kept = [u for u in (preserved.get("allUuids") or preserved.get("uuids") or [])
            if isinstance(u, str) and u not in dropped] if isinstance(preserved, dict) else []
    if not kept:
        metadata.pop("preservedMessages", None)
        metadata.pop("preservedSegment", None)
    else:
        assert isinstance(preserved, dict)
        metadata["preservedMessages"] = {**preserved, **{key: [u for u in preserved[key] if u not in dropped]
                                                         for key in ("uuids", "allUuids")
                                                         if isinstance(preserved.get(key), list)}}
        if isinstance(segment, dict):
            metadata["preservedSegment"] = {**segment, "headUuid": kept[0], "tailUuid": kept[-1]}
    return {**boundary, "compactMetadata": metadata}


# A name: ASCII letters, digits, `._-` and any non-ASCII UTF-8 (a cut or invalid sequence is passed over).
_TOOL_RESULT_NAME = re.compile(rb"/tool-results/([A-Za-z0-9._\x80-\xff-]+)")


def _tool_result_names(line: bytes) -> list[str]:
    """The `tool-results/` sidecar file names a record's line mentions (a persisted long output)."""
    names = []
    for match in _TOOL_RESULT_NAME.finditer(line):
        try:
            name = match.group(1).decode()
        except UnicodeDecodeError:
            continue   # not a name the file system holds as UTF-8: nothing to copy
        if is_plain_name(name):
            names.append(name)
    return names


def is_plain_name(name: str) -> bool:
    """Whether `name` (from a record) is one file name in its folder: not empty, `.` or `..`, no `/`
    or NUL (a sidecar's name is taken from the records, which may say anything)."""
    return name not in ("", ".", "..") and "/" not in name and "\0" not in name


def plan_fork(data: bytes, options: TrimOptions, *, fork_id: str, context_before: int | None,
              count: Callable[[str], int]) -> TrimPlan:
    """The fork of a Claude Code session file (its bytes) with these options; pure and deterministic.

    `context_before` is the original's measured context; the fork's is that minus the tokens of
    what the fork leaves out (`count` counts a text), an estimate until the fork's first turn."""
    fork_steps.refuse_options(options, "Claude Code")
    original = Original.of(data)
    parsed = parse_lines(data, 0, skim=False)
    records = parsed.records
    session_id = next((str(r["sessionId"]) for r in records if isinstance(r.get("sessionId"), str)), "")
    chain, turns, leaf = chain_turns(records)
    notes = fork_steps.cut_line_notes(len(data), parsed.end)
    notes += [f"the original's {warning}; the fork leaves it out" for warning in parsed.warnings[:5]]
    chosen = fork_steps.chosen_fork(session_id, options, original, turns, context_before, notes,
                         lambda steps: _build(records, chain, turns, leaf, steps, fork_id, original, count))
    if isinstance(chosen, TrimPlan):
        return chosen
    built, dropped, fit = chosen
    notes.append("the fork's context is an estimate (the measured context minus what was left out) until its "
                 "first turn: its copied usage records describe the untrimmed session")
    notes += fork_steps.compaction_notes([turns[index].number for index in sorted(dropped)
                               if _before_compaction(chain, turns[index])], "Claude Code")
    return fork_steps.fork_plan(session_id, options, original, built, context_before, fit, notes)


def _before_compaction(chain: list[Record], turn: ChainTurn) -> bool:
    uuids = [str(record["uuid"]) for record in chain]
    position = uuids.index(turn.turn_id)
    return any(kind_of(record) == BOUNDARY for record in chain[position:])


def new_fork_id() -> str:
    """A fresh session id for a fork: a random (version 4) UUID, as Claude Code's own."""
    raw = bytearray(secrets.token_bytes(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def rewrite_subagent(data: bytes, fork_id: str) -> bytes:
    """A subagent's transcript with the fork's `sessionId` (its other bytes as they were, record by record)."""
    out = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = agent_json.loads(line)
        except (ValueError, RecursionError):
            out.append(line + b"\n")   # kept as it was
            continue
        if isinstance(record, dict) and "sessionId" in record:
            record["sessionId"] = fork_id
            out.append(dumps(record))
        else:
            out.append(line + b"\n")
    return b"".join(out)
