"""Agent backends behind one small protocol: `fractal` (headless; it writes the session
itself), `command` (any program; Reprise records the turn) and `echo` (built in, offline,
deterministic; for the demo and tests, only when chosen explicitly).

Programs always run as argv lists, never through a shell, in the session's workspace.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .config import AgentSettings
from .errors import AgentError, UsageError
from .models import INTERRUPTED_ERROR, TurnUsage
from .turns import TurnOutcome

STDERR_TAIL = 2000
BACKENDS = ("fractal", "command", "echo")


@dataclass(slots=True)
class TurnRequest:
    session_id: str
    workspace: Path
    message: str
    summary_text: str
    timeout: float
    estimate: int | None = None


class Backend(Protocol):
    name: str
    writes_session: bool

    def run(self, request: TurnRequest, cancel: threading.Event) -> TurnOutcome: ...


class EchoBackend:
    """Replies from the message itself. It is not a provider: it measures nothing, so the turns it
    records carry no context size (`context_tokens` 0) and the meter shows no "measured" figure."""

    name = "echo"
    writes_session = False

    def run(self, request: TurnRequest, cancel: threading.Event) -> TurnOutcome:
        words = request.message.split()
        reply = f"Echo: {' '.join(words[:60])}" + (" …" if len(words) > 60 else "")
        estimate = request.estimate or 0
        usage = TurnUsage(input_tokens=estimate, output_tokens=len(reply) // 4, cost=0.0, duration_ms=1,
                          iterations=1, context_tokens=0)
        return TurnOutcome("succeeded", reply, files_read=["README.md", "AGENTS.md"][: 1 + len(words) % 2],
                           usage=usage)


def substitute(template: list[str], **values: str) -> list[str]:
    """Replace whole argv items like "{session_id}"; never through a shell, never inside items."""
    return [values.get(item[1:-1], item) if item.startswith("{") and item.endswith("}") else item
            for item in template]


def _run_process(argv: list[str], *, stdin: str, cwd: Path, env: dict[str, str], timeout: float,
                 cancel: threading.Event) -> tuple[int | None, str, str, str | None]:
    """(exit status, stdout, stderr, why it stopped early: "timeout" / "interrupted" / None)."""
    try:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   cwd=cwd, env=env, start_new_session=True)
    except FileNotFoundError:
        raise AgentError(f"The agent program {argv[0]!r} was not found.",
                         hint="set [agent] turn or install the program") from None
    except OSError as exc:
        raise AgentError(f"Cannot start {argv[0]!r}: {exc.strerror or exc}.") from None
    deadline = time.monotonic() + timeout
    data: bytes | None = stdin.encode("utf-8", "replace")
    stopped = None
    while True:
        try:
            out, err = process.communicate(data, timeout=0.1)
            break
        except subprocess.TimeoutExpired:
            data = None
            if cancel.is_set():
                stopped = "interrupted"
            elif time.monotonic() > deadline:
                stopped = "timeout"
            if stopped:
                _stop(process)
                out, err = process.communicate()
                break
    decode = lambda raw: raw.decode("utf-8", "replace")  # noqa: E731
    return process.returncode, decode(out), decode(err), stopped


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM the agent's process group, then SIGKILL if it lingers."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= STDERR_TAIL else "…" + text[-STDERR_TAIL:]


class CommandBackend:
    """Any program: the message on stdin, stdout as the response, exit status as success."""

    name = "command"
    writes_session = False

    def __init__(self, template: list[str]):
        self.template = template

    def run(self, request: TurnRequest, cancel: threading.Event) -> TurnOutcome:
        with tempfile.TemporaryDirectory(prefix="reprise-turn-") as scratch:
            summary_file = Path(scratch) / "summary.txt"
            summary_file.write_text(request.summary_text, encoding="utf-8", errors="replace")
            argv = substitute(self.template, session_id=request.session_id, workspace=str(request.workspace),
                              summary_file=str(summary_file))
            env = {**os.environ, "REPRISE_SESSION_ID": request.session_id,
                   "REPRISE_WORKSPACE": str(request.workspace), "REPRISE_SUMMARY_FILE": str(summary_file)}
            status, out, err, stopped = _run_process(argv, stdin=request.message, cwd=request.workspace, env=env,
                                                     timeout=request.timeout, cancel=cancel)
        response = out[:-1] if out.endswith("\n") else out
        if stopped == "interrupted":
            return TurnOutcome("interrupted", response, error=INTERRUPTED_ERROR)
        if stopped == "timeout":
            return TurnOutcome("failed", response, error=f"Timed out after {request.timeout:g} s. {_tail(err)}".strip())
        if status != 0:
            return TurnOutcome("failed", response, error=f"Exit status {status}. {_tail(err)}".strip())
        return TurnOutcome("succeeded", response)


class FractalBackend:
    """`fractal --workspace DIR --resume ID -p - --json --quiet`: Fractal runs the turn and saves the file."""

    name = "fractal"
    writes_session = True

    def __init__(self, program: str = "fractal"):
        self.program = program

    def run(self, request: TurnRequest, cancel: threading.Event) -> TurnOutcome:
        argv = [self.program, "--workspace", str(request.workspace), "--resume", request.session_id,
                "-p", "-", "--json", "--quiet"]
        status, out, err, stopped = _run_process(argv, stdin=request.message, cwd=request.workspace,
                                                 env=dict(os.environ), timeout=request.timeout, cancel=cancel)
        if stopped == "interrupted":
            return TurnOutcome("interrupted", error=INTERRUPTED_ERROR)
        if stopped == "timeout":
            return TurnOutcome("failed", error=f"Timed out after {request.timeout:g} s. {_tail(err)}".strip())
        result = _last_json_object(out)
        if result is None:
            return TurnOutcome("failed", out.strip(), error=f"Exit status {status}; no JSON result. {_tail(err)}".strip())
        usage = result.get("usage")
        try:
            usage_model = TurnUsage.model_validate(usage) if isinstance(usage, dict) else None
        except ValueError:
            usage_model = None
        turn_status = result.get("status") if result.get("status") in ("succeeded", "failed", "max_iterations",
                                                                       "interrupted") else "failed"
        changed = [f for f in result.get("changed_files") or [] if isinstance(f, str)]
        error = result.get("error") if isinstance(result.get("error"), str) else None
        if status != 0 and turn_status == "succeeded":
            turn_status, error = "failed", error or f"Exit status {status}. {_tail(err)}".strip()
        return TurnOutcome(turn_status, str(result.get("response") or ""), files_modified=changed, error=error,
                           usage=usage_model)


def _last_json_object(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def choose_backend(name: str | None, settings: AgentSettings) -> Backend | None:
    """`--agent`, else `[agent] backend`, else fractal when it is installed; None when nothing fits."""
    wanted = name or settings.backend
    if wanted is None:
        return FractalBackend() if shutil.which("fractal") else None
    if wanted == "echo":
        return EchoBackend()
    if wanted == "fractal":
        if not shutil.which("fractal"):
            raise AgentError("The fractal program was not found on PATH.",
                             hint="install fractal-rlm, or choose another backend with --agent or [agent] backend")
        return FractalBackend()
    if wanted == "command":
        if not settings.turn:
            raise AgentError("The command backend needs [agent] turn = [\"program\", \"arg\", ...] in the config.")
        return CommandBackend(settings.turn)
    raise UsageError(f"Unknown agent backend {wanted!r}; choose one of {', '.join(BACKENDS)}.")
