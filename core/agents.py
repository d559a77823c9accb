"""Agent backends behind one small protocol: Reprise's own `command` (any program; Reprise records
the turn) and `echo` (built in, offline, deterministic; for the demo and tests, only when chosen
explicitly), and those a source offers by name in its spec (Fractal's `fractal`, headless, which
writes the session itself: `sources/fractal/turns.py`).

Programs always run as argv lists, never through a shell, in the session's workspace.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from .archive import Archive
from .backend_names import backend_names, offered_backends
from .config import DEFAULT_REPLY_BYTES
from .errors import AgentError, RepriseError, UsageError
from .outcome import INTERRUPTED_ERROR, TurnOutcome, cut_reply, left_running_note
from .paths import SessionRef
from .processes import Finished, run_agent
from .rooted import Root
from .sources.registry import load_object

if TYPE_CHECKING:
    from .settings_models import AgentSettings

STDERR_TAIL = 2000


@dataclass(slots=True)
class TurnRequest:
    session_id: str
    workspace: Path
    message: str
    summary_text: str
    timeout: float
    estimate: int | None = None
    max_reply_bytes: int = DEFAULT_REPLY_BYTES
    spool_dir: Path | None = None  # where the whole of an over-long reply is written (the session's archive)
    spool_root: Root | None = None  # the root that folder is reached through


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
        usage = {"input_tokens": estimate, "output_tokens": len(reply) // 4, "cost": 0.0, "duration_ms": 1,
                 "iterations": 1, "context_tokens": 0}
        return TurnOutcome("succeeded", reply, files_read=["README.md", "AGENTS.md"][: 1 + len(words) % 2],
                           usage=usage)


def substitute(template: list[str], **values: str) -> list[str]:
    """Replace whole argv items like "{session_id}"; never through a shell, never inside items."""
    return [values.get(item[1:-1], item) if item.startswith("{") and item.endswith("}") else item
            for item in template]


def run_process(argv: list[str], request: TurnRequest, *, env: dict[str, str], cancel: threading.Event,
                spool: bool) -> Finished:
    """Run one turn's program: the message on stdin, in the workspace, under the request's timeout and
    reply cap (the whole of an over-long stdout spooled when `spool`); a missing program is an AgentError."""
    try:
        return run_agent(argv, stdin=request.message, cwd=request.workspace, env=env, timeout=request.timeout,
                         cancel=cancel, stdout_cap=request.max_reply_bytes,
                         spool_dir=request.spool_dir if spool else None,
                         spool_root=request.spool_root if spool else None)
    except FileNotFoundError:
        raise AgentError(f"The agent program {argv[0]!r} was not found.",
                         hint="set [agent] turn or install the program") from None
    except OSError as exc:
        raise AgentError(f"Cannot start {argv[0]!r}: {exc.strerror or exc}.") from None


def held_note(finished: Finished) -> list[str]:
    """The note for a turn whose output was still held open by processes it left running."""
    if not finished.output_held:
        return []
    return [left_running_note([process.describe() for process in finished.left_running])]


def stderr_tail(text: str) -> str:
    """The end of a program's stderr, short enough for an error line."""
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
            finished = run_process(argv, request, env=env, cancel=cancel, spool=True)
        out, err, stopped = finished.stdout, finished.stderr, finished.stopped
        notes = finished.notes + held_note(finished)
        if out.over:  # the service archives the whole output and adds the marker
            response = out.head_text()
        else:
            response = out.text()
            response = response.removesuffix("\n")
        if stopped == "interrupted":
            status, error = "interrupted", INTERRUPTED_ERROR
        elif stopped == "timeout":
            status, error = "failed", f"Timed out after {request.timeout:g} s. {stderr_tail(err)}".strip()
        elif finished.status != 0:
            status, error = "failed", f"Exit status {finished.status}. {stderr_tail(err)}".strip()
        else:
            status, error = "succeeded", None
        return TurnOutcome(status, response, error=error, notes=notes, output=out if out.over else None)


def recorded_reply(archive: Archive, ref: SessionRef, turn_id: str, outcome: TurnOutcome) -> TurnOutcome:
    """The outcome of a backend whose reply Reprise records, as recorded: a reply over the cap
    cut with a marker naming the archive entry that holds the whole output (or saying why none
    could be written), and Reprise's notes on the run appended as marker lines."""
    output = outcome.output
    if output is not None:
        outcome.output = None
        archived, why = None, output.spool_error or "no folder to write it to"
        if output.spool is not None:
            try:
                archived = archive.put_file(ref, output.spool, output.sha256, op="output", turn_id=turn_id,
                                            bytes=output.total_bytes).digest
            except RepriseError as exc:
                why = exc.message
        outcome.response = cut_reply(outcome.response, output.total_chars - len(outcome.response), archived, why)
    for note in outcome.notes:
        outcome.response += f"\n[reprise: {note}]"
    return outcome


class OfferedBackend(Backend, Protocol):
    """A backend a source offers by name (its spec's `backends`): a program found on PATH, built
    without arguments."""

    program: str
    install_hint: str   # what installs the program: "install fractal-rlm"


def _offered(dotted: str) -> OfferedBackend:
    """The backend a spec names by its dotted path, built; an AgentError when its code does not load."""
    try:
        factory = load_object(dotted)
        if not callable(factory):
            raise TypeError(f"{dotted} is not callable")
        return cast(OfferedBackend, factory())
    except Exception as exc:   # a plug-in's code may raise anything: said as the backend's failure
        raise AgentError(f"The agent backend {dotted} did not load: {type(exc).__name__}: {exc}") from None


def choose_backend(name: str | None, settings: AgentSettings) -> Backend | None:
    """`--agent`, else `[agent] backend`, else the first backend a source offers whose program is
    installed (Fractal's, when `fractal` is on PATH); None when nothing fits."""
    wanted = name or settings.backend
    offered = offered_backends()
    if wanted is None:
        for dotted in offered.values():
            backend = _offered(dotted)
            if shutil.which(backend.program):
                return backend
        return None
    if wanted == "echo":
        return EchoBackend()
    if wanted == "command":
        if not settings.turn:
            raise AgentError("The command backend needs [agent] turn = [\"program\", \"arg\", ...] in the config.")
        return CommandBackend(settings.turn)
    if wanted in offered:
        backend = _offered(offered[wanted])
        if not shutil.which(backend.program):
            raise AgentError(f"The {backend.program} program was not found on PATH.",
                             hint=f"{backend.install_hint}, or choose another backend with --agent or [agent] backend")
        return backend
    raise UsageError(f"Unknown agent backend {wanted!r}; choose one of {', '.join(backend_names())}.")
