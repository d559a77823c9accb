"""A new Codex session on an id Reprise chose: Codex picks a new thread's id itself and takes none on
its command line, so Reprise writes the thread's first line (a `session_meta` naming the id, the
folder, `source: "cli"` and the Codex version the store was last written by) as a new rollout in
today's date folder, and `[sources.codex] new` (`codex resume {session_id}`) starts Codex on it in the
workspace. The real client resumes such a rollout and writes the thread's context and the first turn
into it (checked with `codex exec resume`, tests/compat/codex/test_writes_compat.py); without
`cli_version` it refuses it as empty. So a title given in Reprise names the row that appears.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ...rooted import Root, write_new
from ...session_files import ReadProblem, read_head
from .. import agent_json
from .fork import dumps
from .layout import CodexRoot, session_id_of

VERIFIED_VERSION = "0.171.0"   # the version whose acceptance of such a rollout the compat tests check
MAX_META_BYTES = 1 << 20


def known_cli_version(root: CodexRoot) -> str:
    """The `cli_version` of the newest rollout under `root` (the Codex the user runs), else the verified one."""
    for folder in reversed(root.date_folders()):
        try:
            names = sorted((name for name in Path(folder).iterdir() if session_id_of(name.name)), reverse=True)
        except OSError:
            continue
        for path in names:
            try:   # a regular file only, opened without blocking: a FIFO named like a rollout is passed over
                first = agent_json.loads(read_head(path, MAX_META_BYTES)[0].split(b"\n", 1)[0])
            except (OSError, ValueError, RecursionError, ReadProblem):
                continue
            payload = first.get("payload") if isinstance(first, dict) else None
            version = payload.get("cli_version") if isinstance(payload, dict) else None
            if isinstance(version, str) and version:
                return version
    return VERIFIED_VERSION


def start_rollout(root: CodexRoot, session_id: str, folder: Path, now: datetime | None = None) -> Path:
    """Write the new thread's rollout (its `session_meta` line) under `root`, never over a file."""
    moment = now or datetime.now(UTC)
    local = moment.astimezone()
    stamp = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    meta = {"timestamp": stamp, "ordinal": 0, "type": "session_meta",
            "payload": {"id": session_id, "session_id": session_id, "timestamp": stamp, "cwd": str(folder),
                        "originator": "reprise", "cli_version": known_cli_version(root), "source": "cli"}}
    name = f"rollout-{local.strftime('%Y-%m-%dT%H-%M-%S')}-{session_id}.jsonl"
    path = root.sessions / local.strftime("%Y/%m/%d") / name
    with Root(root.path, "Codex root").parent(path, create=True) as (fd, leaf):
        write_new(fd, leaf, dumps(meta))
    return path
