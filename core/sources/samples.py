"""Sample stores: a few sessions of each source, written in its agent's own byte form into a folder
of its own, for the `--demo` store and the conformance suite alike. Each source's `samples` module
has one function, `write_samples(env) -> SampleSet`; what it returns says what it wrote, so a test
can check every command against it without knowing the agent.

The samples are made in shared project folders (`PROJECTS`, under `env.projects`), so one demo shows
every agent's sessions of one project together. Deterministic for a given clock and seed."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

# The demo's project folders and the instructions file some of them hold (AGENTS.md).
PROJECTS: dict[str, str | None] = {
    "webapp": "# AGENTS.md\n\nUse pnpm. Run `pnpm test` before committing. Keep components small.\n",
    "cli-tool": None,
    "data-pipeline": "# Pipeline rules\n\nNever touch prod credentials. Prefer polars over pandas.\n",
}


@dataclass(frozen=True, slots=True)
class SampleEnv:
    """Where and when samples are written: `root` holds each source's store in a folder of its own
    (`root/state` for Fractal, `root/<name>` for the others: what the test isolation and the demo
    point each source at), `projects` the project folders the sessions were made in."""

    root: Path
    projects: Path
    now: datetime
    seed: int = 7

    def project(self, name: str) -> Path:
        """One of `PROJECTS`, made when absent, resolved as a session records it."""
        return write_project(self.projects, name)


@dataclass(frozen=True, slots=True)
class Sample:
    """One session a `write_samples` wrote, as a listing and a transcript must show it."""

    session_id: str
    folder: Path                    # the project folder it was made in (resolved)
    prompts: tuple[str, ...]        # each turn's prompt, in order
    title: str | None = None        # the title the store gives it (Reprise's, or the agent's)
    tool_call: bool = False         # a turn ran a tool and recorded its result
    files: tuple[str, ...] = ()     # the agent's files holding it, relative to the store


@dataclass(frozen=True, slots=True)
class SampleSet:
    """What one source's `write_samples` wrote: its store's root, the sessions, the files a listing
    shows as problems (by file id), the files every session shares (relative to the store), and how
    one JSON value of a file is written back (`dumps`, for the hostile-values test), None for a store
    that is not JSON text."""

    source: str
    store: Path
    sessions: tuple[Sample, ...]
    problems: tuple[str, ...] = ()
    shared: tuple[str, ...] = ()
    dumps: Callable[[object], str] | None = None
    whole_files: bool = False       # each file is one JSON document (else one per line)
    # What points the source at `store` (Fractal's state root is the one Reprise is given: none).
    environment: dict[str, str] = field(default_factory=dict)

    def session(self, session_id: str) -> Sample:
        return next(sample for sample in self.sessions if sample.session_id == session_id)


def write_project(projects: Path, name: str) -> Path:
    """The project folder `name` with its instructions file; the folder, resolved."""
    folder = projects / name
    folder.mkdir(parents=True, exist_ok=True)
    instructions = PROJECTS.get(name)
    if instructions:
        (folder / "AGENTS.md").write_text(instructions, encoding="utf-8")
    return folder.resolve()


def compact(value: object) -> str:
    """One record as the JSON-lines agents write it: compact, non-ASCII kept as written."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def write_json_lines(path: Path, records: list[dict[str, object]], modified: datetime) -> Path:
    """One compact JSON line per record, the file modified when its last record was written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(compact(record).encode() + b"\n" for record in records))
    stamp = int(modified.timestamp() * 1e9)
    os.utime(path, ns=(stamp, stamp))
    return path
