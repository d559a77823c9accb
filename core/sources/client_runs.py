"""Turns run by an agent's own client (Claude Code's `claude -p`, Codex's `codex exec`): the
`[sources.NAME] send` command with the message on stdin (never an argv item: a long one fails
with E2BIG, one starting with `-` or `/` would be read as an option or a slash command), in the
turn's folder, with the variable naming the agent's root set only when that root is not the one
the client would use anyway. The client saves the turn in the session's file; Reprise reads its
outcome from what the client printed (each agent's `read_output`, for a run that ended by itself
within [agent] max_reply_bytes), and the turn back from the file.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from ..agents import TurnRequest, substitute
from ..errors import AgentError
from ..outcome import INTERRUPTED_ERROR, TurnOutcome, left_running_note
from ..processes import Finished, run_agent

STDERR_TAIL = 2000

# The outcome of a run that ended by itself within the cap, from what the client printed:
# (the run, the session id sent, the run's notes so far, to add to and keep in the outcome).
ReadOutput = Callable[[Finished, str, list[str]], TurnOutcome]


def client_env(root: Path, variable: str, home_folder: str) -> dict[str, str]:
    """The environment of an agent's run for a session under `root`: `variable` (Claude Code's
    CLAUDE_CONFIG_DIR, Codex's CODEX_HOME) names the root only when it is not the one the agent would
    use anyway (`variable`, else ~/`home_folder`; setting CLAUDE_CONFIG_DIR to ~/.claude would move
    Claude Code's own `.claude.json` into that folder)."""
    env = dict(os.environ)
    default = Path(env[variable]).expanduser() if env.get(variable) \
        else Path(env.get("HOME") or Path.home()) / home_folder
    if _same(default, root):
        return env
    env[variable] = str(root)
    return env


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


def run_client(template: list[str], request: TurnRequest, cancel: threading.Event, env: dict[str, str],
               label: str, source: str) -> Finished:
    """Run an agent's `[sources.SOURCE] send` for one turn: the message on stdin, in the turn's folder."""
    argv = substitute(template, session_id=request.session_id, workspace=str(request.workspace))
    try:
        return run_agent(argv, stdin=request.message, cwd=request.workspace, env=env, timeout=request.timeout,
                         cancel=cancel, stdout_cap=request.max_reply_bytes)
    except FileNotFoundError:
        raise AgentError(f"The {label} program {argv[0]!r} was not found.",
                         hint=f"install {label}, or set [sources.{source}] send") from None
    except OSError as exc:
        raise AgentError(f"Cannot start {argv[0]!r}: {exc.strerror or exc}.") from None


def stderr_tail(text: str) -> str:
    """The end of what the client printed on stderr, for an error message."""
    text = text.strip()
    return text if len(text) <= STDERR_TAIL else "…" + text[-STDERR_TAIL:]


def run_notes(finished: Finished) -> list[str]:
    """The notes of a run: the runner's own, and the processes it left running."""
    notes = list(finished.notes)
    if finished.output_held:
        notes.append(left_running_note([process.describe() for process in finished.left_running]))
    return notes


def unread_outcome(finished: Finished, timeout: float, label: str, notes: list[str]) -> TurnOutcome | None:
    """The outcome of a run whose output is not read: interrupted, timed out, or printing more than
    [agent] max_reply_bytes (the reply is then the one the agent saved); None for the others."""
    if finished.stopped == "interrupted":
        return TurnOutcome("interrupted", error=INTERRUPTED_ERROR, notes=notes)
    if finished.stopped == "timeout":
        return TurnOutcome("failed", error=f"Timed out after {timeout:g} s. {stderr_tail(finished.stderr)}".strip(),
                           notes=notes)
    if finished.stdout.over:
        notes.append(f"{label} printed {finished.stdout.total_bytes:,} bytes, over [agent] max_reply_bytes; the reply "
                     "is the one it saved.")
        return TurnOutcome("succeeded" if finished.status == 0 else "failed", notes=notes, unread=True,
                           error=None if finished.status == 0 else f"Exit status {finished.status}.")
    return None


class ClientSendBackend:
    """`[sources.NAME] send`: the agent's own client runs every turn of its sessions and saves it in
    the session's file. `env` makes the run's environment when the turn starts (`client_env`);
    `read_output` reads what the client printed, when the run was not stopped or over the cap."""

    writes_session = True

    def __init__(self, name: str, label: str, template: list[str], env: Callable[[], dict[str, str]],
                 read_output: ReadOutput):
        self.name = name
        self.label = label
        self.template = template
        self.env = env
        self.read_output = read_output

    def run(self, request: TurnRequest, cancel: threading.Event) -> TurnOutcome:
        finished = run_client(self.template, request, cancel, self.env(), self.label, self.name)
        notes = run_notes(finished)
        unread = unread_outcome(finished, request.timeout, self.label, notes)
        return unread if unread is not None else self.read_output(finished, request.session_id, notes)
