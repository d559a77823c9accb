"""One Reprise process for the concurrency tests; prints one JSON line with what happened.

    python race_child.py STATE WORKSPACE SESSION_ID append NAME COUNT
        appends COUNT echo turns ("NAME 0", "NAME 1", ...), retrying while the other process's
        turn is pending or holds the lock; with RACE_START_GATE set, it touches GATE.NAME and
        starts only once GATE exists
    python race_child.py STATE WORKSPACE SESSION_ID trim
        one in-place trim (cap replies at 20 characters, spare 0)
    python race_child.py STATE WORKSPACE SESSION_ID restore
        undo the newest trim
    python race_child.py STATE WORKSPACE SESSION_ID turn
        one echo turn

The configuration comes from REPRISE_CONFIG and fault points from REPRISE_FAULTS (with
WRITER_KILL_AT=n, a `kill` fires at the n-th pass of its point, counted as in writer.py).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

from reprise.core import config
from reprise.core.errors import LockedError, PendingTurnError, RepriseError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.trimming import TrimOptions

APPEND_DEADLINE_S = 300


def append(service: Service, ref: SessionRef, name: str, count: int) -> dict:
    start_gate = os.environ.get("RACE_START_GATE")
    if start_gate:  # both processes are built and start appending together
        Path(f"{start_gate}.{name}").touch()
        deadline = time.monotonic() + 60
        while not Path(start_gate).exists() and time.monotonic() < deadline:
            time.sleep(0.005)
    retries = 0
    deadline = time.monotonic() + APPEND_DEADLINE_S
    rng = random.Random(name)
    for number in range(count):
        while True:
            try:
                service.send_turn(ref, f"{name} {number}", agent="echo")
                break
            except (PendingTurnError, LockedError):
                if time.monotonic() > deadline:
                    raise
                retries += 1
                time.sleep(rng.uniform(0.001, 0.02))
    return {"ok": True, "retries": retries}


def main() -> int:
    state_dir, workspace, session_id, op, *rest = sys.argv[1:]
    if "WRITER_KILL_AT" in os.environ:  # kill at the n-th pass of the REPRISE_FAULTS point, as writer.py does
        import writer

        writer.install_fault_counter(writer.Log(os.devnull))
    service = Service(config.load(state_dir=state_dir), workspace=Path(workspace))
    ref = SessionRef(workspace_key(workspace), session_id, "fractal")
    try:
        if op == "append":
            result = append(service, ref, rest[0], int(rest[1]))
        elif op == "trim":
            trimmed = service.trim(ref, TrimOptions(cap_replies=20, spare=0))
            result = {"ok": True, "applied": trimmed.applied}
        elif op == "restore":
            restored = service.restore(ref)
            result = {"ok": True, "applied": restored.applied}
        elif op == "turn":
            sent = service.send_turn(ref, "reprise turn", agent="echo")
            result = {"ok": True, "turn_id": sent.turn_id}
        else:
            raise SystemExit(f"unknown op {op}")
    except RepriseError as exc:
        result = {"ok": False, "error": exc.code, "message": exc.message}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
