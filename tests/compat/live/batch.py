"""One batch of real-client runs in a fresh loopback-only network namespace, with a fake model
server beside them (launch.py is the namespace's pid 1), and what each run left behind: its exit
status, its output and the request files the server recorded while it ran.

Used by the Claude Code and Codex harnesses (tests/compat/claude/sessions.py,
tests/compat/codex/sessions.py); their fake servers record each request as `NNNN.json` with a
`NNNN.path` beside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

LAUNCHER = Path(__file__).resolve().with_name("launch.py")
NAMESPACE = ["unshare", "-n", "-p", "-f", "--mount-proc"]


class ClientUnavailable(RuntimeError):
    """What stops a real client's compat tests on this machine (they skip, or fail under CI)."""


def configured_binary(env_var: str) -> Path | None:
    configured = os.environ.get(env_var)
    return Path(configured) if configured else None


def prepare_client(env_var: str, what: str) -> Path:
    """The client binary `$env_var`, checked, and a namespace check; raises ClientUnavailable."""
    binary = configured_binary(env_var)
    if binary is None:
        raise ClientUnavailable(f"{what} is not installed (set {env_var})")
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise ClientUnavailable(f"{env_var}={binary} is not an executable file")
    problem = namespace_problem()
    if problem:
        raise ClientUnavailable(problem)
    return binary


def namespace_problem() -> str | None:
    """Why a network namespace cannot be made here, or None when it can."""
    done = subprocess.run([*NAMESPACE, "true"], check=False, capture_output=True, text=True)
    if done.returncode != 0:
        return f"cannot create a network namespace (unshare -n -p -f): {done.stderr.strip()}"
    return None


@dataclass(slots=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    request_files: list[Path]


def record_folder(workdir: Path) -> Path:
    return workdir / "requests"


def run_batch(workdir: Path, *, port: int, server: Path, runs: list[dict], timeout: int) -> list[Run]:
    """Run `runs` (launch.py's form: argv, stdin, env, cwd, timeout) one after another in one new
    namespace, the server listening on `port`; raises AssertionError when the launcher fails."""
    record = record_folder(workdir)
    record.mkdir(parents=True)
    spec = workdir / "spec.json"
    spec.write_text(json.dumps({"port": port, "record": str(record), "workdir": str(workdir), "runs": runs,
                                "server": str(server)}))
    done = subprocess.run([*NAMESPACE, sys.executable, str(LAUNCHER), str(spec)], check=False, capture_output=True,
                          text=True, timeout=timeout * len(runs) + 60)
    results_path = workdir / "results.json"
    if done.returncode != 0 or not results_path.exists():
        raise AssertionError(f"the namespace launcher failed ({done.returncode}): {done.stderr[-3000:]}")
    files = sorted(record.glob("*.json"))
    found, seen = [], 0
    for raw in json.loads(results_path.read_text()):
        found.append(Run(raw["returncode"], raw["stdout"], raw["stderr"], files[seen:raw["requests"]]))
        seen = raw["requests"]
    return found
