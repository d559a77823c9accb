"""Hand-made rollouts for the compat tests (not Reprise's trim: what the tests offer the real Codex
to learn what it accepts): read a rollout's records, split it into turns, and write a trimmed copy
with a new id, in Codex's own byte form (compact JSON, non-ASCII unescaped, one record a line).

A turn is the run of records up to and including its `task_complete` event, starting after the
previous turn's (so the `thread_settings_applied` before a `task_started` goes with its turn); the
first turn starts after `session_meta` and holds the injected context (tools, developer
instructions, environment) Codex writes at the start of a thread.
"""

from __future__ import annotations

import json
import os
import secrets
import time
import uuid
from pathlib import Path

ID_CHARS = 36


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def dumps(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def new_uuid7() -> str:
    """A uuid v7 (48 bits of Unix milliseconds, then random), as Codex's own ids are."""
    value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    value = (value & ~(0xF << 76)) | (0x7 << 76)       # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)       # RFC 4122 variant
    return str(uuid.UUID(int=value))


def is_event(record: dict, kind: str) -> bool:
    payload = record.get("payload")
    return record.get("type") == "event_msg" and isinstance(payload, dict) and payload.get("type") == kind


def turns(lines: list[dict]) -> tuple[dict, list[list[dict]]]:
    """The session_meta record and the turns after it (a trailing unfinished run is a turn too)."""
    meta, rest = lines[0], lines[1:]
    assert meta.get("type") == "session_meta", meta.get("type")
    found: list[list[dict]] = [[]]
    for record in rest:
        found[-1].append(record)
        if is_event(record, "task_complete"):
            found.append([])
    return meta, [turn for turn in found if turn]


def rollout_name(original: Path, session_id: str) -> str:
    """`rollout-<the original's timestamp>-<session_id>.jsonl`."""
    stem = original.name.removesuffix(".jsonl")
    return f"{stem[:-ID_CHARS]}{session_id}.jsonl"


def with_id(meta: dict, session_id: str) -> dict:
    payload = dict(meta["payload"], id=session_id)
    if "session_id" in payload:
        payload["session_id"] = session_id
    return dict(meta, payload=payload)


def write_new(folder: Path, name: str, lines: list[dict]) -> Path:
    """Write a new file (refusing to replace one), atomically."""
    target = folder / name
    temporary = folder / f".{name}.tmp"
    with temporary.open("x", encoding="utf-8") as handle:
        handle.write("".join(dumps(record) + "\n" for record in lines))
        handle.flush()
        os.fsync(handle.fileno())
    os.link(temporary, target)
    temporary.unlink()
    return target


def trimmed_copy(original: Path, keep: list[int], *, folder: Path | None = None) -> tuple[str, Path]:
    """A new rollout beside `original` (or in `folder`) holding the turns whose indexes are in
    `keep`, with a new id in its name and in session_meta; the original is only read."""
    meta, found = turns(records(original))
    session_id = new_uuid7()
    kept = [record for index, turn in enumerate(found) if index in keep for record in turn]
    path = write_new(folder or original.parent, rollout_name(original, session_id), [with_id(meta, session_id), *kept])
    return session_id, path


FORK_FIELDS = ("forked_from_id", "forked_from_ordinal_exclusive", "history_base")


def self_contained_fork(fork: Path, parent: Path, keep_parent: list[int], *, drop: tuple[str, ...] = FORK_FIELDS,
                        folder: Path | None = None) -> tuple[str, Path]:
    """A new rollout made of a Codex fork and the parent history it points at: the parent's turns in
    `keep_parent` (of those before the fork point), then the fork's own records, under the fork's
    session_meta with a new id and without the fields in `drop`."""
    fork_meta, fork_turns = turns(records(fork))
    end = fork_meta["payload"].get("forked_from_ordinal_exclusive")
    parent_lines = [r for r in records(parent) if end is None or r.get("ordinal", 0) < end]
    _, parent_turns = turns(parent_lines)
    session_id = new_uuid7()
    meta = with_id(fork_meta, session_id)
    meta["payload"] = {key: value for key, value in meta["payload"].items() if key not in drop}
    kept = [record for index, turn in enumerate(parent_turns) if index in keep_parent for record in turn]
    lines = [meta, *kept, *(record for turn in fork_turns for record in turn)]
    return session_id, write_new(folder or fork.parent, rollout_name(fork, session_id), lines)
