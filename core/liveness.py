"""Whether a session is being written by a running agent: the one question that send, recover
(the TUI's `x` and its "agent is gone" banner), trim, restore, rm, prune and relink all ask.

Each source answers it with its own rule (Fractal's: `core/sources/fractal/liveness.py`; a
source without a pending marker judges by its newest record's age or an open file handle).
What is common lives here: the verdict on one pending turn (`PendingTurn`), and the records of
the turns Reprise itself is running (`reprise/runs/<session id>/`, with Reprise's pid, that
process's start time, the host and the `[agent] timeout`), which every rule consults first.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import RepriseError
from .paths import OwnPaths, SessionRef
from .processes import process_stat
from .rooted import Root

CAP_S = 24 * 3600
CLOCK_SLACK_S = 1.0
MAX_RECORD_BYTES = 4096
RUN_RECORD_FORMAT = "reprise.run/1"


@dataclass(frozen=True, slots=True)
class PendingTurn:
    """One pending turn and the verdict on it; `why` says what the verdict rests on."""

    turn_id: str
    number: int | None  # its position in the summary from 1 (None: only the history marks it pending)
    created_at: str | None
    live: bool
    why: str


# --- Reprise's own runs ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RunRecord:
    pid: int
    host: str
    boot_id: str | None
    start_ticks: int | None
    started_ts: float
    timeout: float

    def process_alive(self) -> bool | None:
        """Whether the Reprise process that wrote the record still runs (None: not checkable here)."""
        if self.host != _host():
            return None
        boot = _boot_id()
        if self.boot_id and boot and self.boot_id != boot:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # alive, another user's
        except (OSError, OverflowError):
            return None
        info = process_stat(self.pid)
        state, ticks = (info[1], info[2]) if info else (None, None)
        if state == "Z":
            return False
        return self.start_ticks is None or ticks is None or ticks == self.start_ticks  # else the pid was reused


def _host() -> str:
    """This machine's name, as `socket.gethostname()` gives it (the kernel's node name), without the
    socket module: every command imports this one."""
    return os.uname().nodename


@contextlib.contextmanager
def reprise_run(paths: OwnPaths, ref: SessionRef, *, timeout: float) -> Iterator[None]:
    """Mark the pending turns of `ref` created while this block runs as Reprise's own."""
    info = process_stat(os.getpid())
    ticks = info[2] if info else None
    record = {"format": RUN_RECORD_FORMAT, "pid": os.getpid(), "host": _host(),
              "boot_id": _boot_id(), "start_ticks": ticks, "started_ts": time.time(), "timeout": timeout}
    root = Root(paths.root)
    directory = paths.runs_dir(ref)
    path = directory / f"{os.getpid()}-{uuid.uuid4().hex[:12]}.json"
    written = False
    try:
        _drop_ended_runs(root, directory)
        # Whole or absent for readers, but not fsynced and outside the session write path's fault
        # points: a record matters only while its process lives, and a crash of the machine ends both.
        root.write_atomic(path, (json.dumps(record, indent=2) + "\n").encode("ascii"), durable=False)
        written = True
    except (OSError, RepriseError):
        pass  # without a record (a link in the way, a full disk) the turn is judged by the 24 h rule,
        # which only refuses longer
    try:
        yield
    finally:
        if written:
            with contextlib.suppress(OSError, RepriseError):
                root.unlink(path)


def run_records(paths: OwnPaths, ref: SessionRef) -> list[RunRecord]:
    """The run records of a session; a record that is not one (hostile, torn, foreign, behind a
    link out of the state root) is ignored."""
    root = Root(paths.root)
    records = []
    for path in _record_files(root, paths.runs_dir(ref)):
        record = _read_record(root, path)
        if record is not None:
            records.append(record)
    return records


def _record_files(root: Root, directory: Path) -> list[Path]:
    try:
        return [directory / name for name, is_dir in root.names(directory)
                if not is_dir and name.endswith(".json") and not name.startswith(".")]
    except (OSError, RepriseError):
        return []


def _read_record(root: Root, path: Path) -> RunRecord | None:
    try:
        item = json.loads(root.read(path, MAX_RECORD_BYTES))
    except (OSError, ValueError, RepriseError):
        return None
    if not isinstance(item, dict) or item.get("format") != RUN_RECORD_FORMAT:
        return None
    pid, started, timeout = item.get("pid"), _number(item.get("started_ts")), _number(item.get("timeout"))
    if type(pid) is not int or not 0 < pid < 1 << 31 or started is None or timeout is None:
        return None
    ticks, boot_id = item.get("start_ticks"), item.get("boot_id")
    return RunRecord(pid, str(item.get("host")), boot_id if isinstance(boot_id, str) else None,
                     ticks if type(ticks) is int else None, started, timeout)


def _number(value: Any) -> float | None:
    if type(value) not in (int, float) or not math.isfinite(value) or abs(value) >= 1e12:
        return None
    return float(value)


def _drop_ended_runs(root: Root, directory: Path) -> None:
    """Remove records left by Reprise processes that died more than the cap ago (they judge nothing now)."""
    now = time.time()
    for path in _record_files(root, directory):
        record = _read_record(root, path)
        if record is not None and now - record.started_ts > CAP_S and record.process_alive() is False:
            with contextlib.suppress(OSError, RepriseError):
                root.unlink(path)


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


# --- Fractal's rule ----------------------------------------------------------------------------------
