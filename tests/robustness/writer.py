"""A child process that keeps writing one session through Reprise's service until it is killed.

Run as `python writer.py STATE WORKSPACE SESSION_ID LOG SEED`. It loops over echo turns, trims,
restores and stale-turn recovery, with `REPRISE_CONFIG` setting `[history] max_turns = 3` so
turns evict history too. Every session write is logged to LOG, one line per event, written with
a single `os.write` to an O_APPEND descriptor so a SIGKILL never leaves a torn line:

    READY                       the service is built; writes may start
    OP <name> <detail>          an operation starts
    BEGIN <sha256>              bytes about to replace the session file
    DONE <sha256>               the replace returned
    FAIL <sha256>               the write raised (the file keeps its previous version)
    ERR <op> <code>             the operation ended with a Reprise error (refusals are normal)
    KILL <point> <n>            the n-th pass through a fault point, which now kills the process

`REPRISE_FAULTS=<point>=kill` with `WRITER_KILL_AT=<n>`: the child takes the spec out of its
environment, counts its passes through each fault point and puts the spec back for the n-th pass
of that point, so core's own fault point sends the SIGKILL there.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
from pathlib import Path

from reprise.core import config, faults
from reprise.core.errors import RepriseError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.sources.fractal import store as store_module
from reprise.core.trimming import TrimOptions

MAX_OPS = 400


class Log:
    def __init__(self, path: str):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def __call__(self, *words: object) -> None:
        os.write(self.fd, (" ".join(str(word) for word in words) + "\n").encode("ascii", "replace"))


def install_fault_counter(log: Log) -> None:
    spec = os.environ.pop(faults.ENV, "")
    target, _, action = spec.partition("=")
    kill_at = int(os.environ.get("WRITER_KILL_AT", "1"))
    real_point = faults.point
    passes: dict[str, int] = {}

    def counted(name: str) -> None:
        passes[name] = passes.get(name, 0) + 1
        if spec and name == target and passes[name] == kill_at:
            log("KILL", name, passes[name])
            os.environ[faults.ENV] = f"{target}={action}"
        real_point(name)

    faults.point = counted


def install_write_log(log: Log, session_file: Path) -> None:
    real_write = store_module.write_atomic

    def logged(path: Path, data: bytes, **kwargs) -> None:
        if Path(path) != session_file:
            return real_write(path, data, **kwargs)
        sha = hashlib.sha256(data).hexdigest()
        log("BEGIN", sha)
        try:
            real_write(path, data, **kwargs)
        except BaseException:
            log("FAIL", sha)
            raise
        log("DONE", sha)

    store_module.write_atomic = logged


def trim_options(rng: random.Random) -> TrimOptions:
    kind = rng.choice(("cap", "fold", "drop", "keep", "cap+keep"))
    if kind == "cap":
        return TrimOptions(cap_replies=rng.randint(5, 20), spare=rng.randint(0, 1))
    if kind == "fold":
        return TrimOptions(fold=rng.randint(1, 2))
    if kind == "drop":
        return TrimOptions(drop=(str(rng.randint(1, 3)),))
    if kind == "keep":
        return TrimOptions(keep_history=rng.randint(0, 2))
    return TrimOptions(cap_replies=rng.randint(5, 20), spare=0, keep_history=rng.randint(0, 2))


def main() -> int:
    state_dir, workspace, session_id, log_path, seed = sys.argv[1:6]
    log = Log(log_path)
    ref = SessionRef(workspace_key(workspace), session_id, "fractal")
    service = Service(config.load(state_dir=state_dir), workspace=Path(workspace))
    install_fault_counter(log)
    install_write_log(log, service.sources["fractal"].store.paths.session_file(ref))
    rng = random.Random(seed)
    log("READY")
    operations = ("turn", "turn", "turn", "trim", "trim", "restore")
    for number in range(MAX_OPS):
        op = "recover" if number == 0 else rng.choice(operations)
        try:
            if op == "recover":
                log("OP recover -")
                service.mark_stale_interrupted(ref)
            elif op == "turn":
                words = " ".join(rng.choice(("alpha", "beta", "gamma", "delta")) for _ in range(12))
                log("OP turn", number)
                service.send_turn(ref, f"message {number} {words}", agent="echo")
            elif op == "trim":
                options = trim_options(rng)
                log("OP trim", ",".join(f"{k}={v}" for k, v in options.as_dict().items()))
                service.trim(ref, options, force=rng.random() < 0.3)
            else:
                log("OP restore -")
                service.restore(ref)
        except RepriseError as exc:
            log("ERR", op, exc.code)
    log("END")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
