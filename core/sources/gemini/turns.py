"""Gemini CLI's turns run by Reprise: `[sources.gemini] send` (`gemini --resume ID --output-format json
-p ""`) run by the client runner (`client_runs.py`: the message on stdin, never in argv, in the session's
own folder, where alone `--resume ID` finds it), with GEMINI_CLI_HOME naming the store's home when the
store is not the one the client would use anyway. Headless Gemini CLI appends what it reads on stdin to
the (empty) `-p` prompt. No approval bypass (`--yolo`, `--approval-mode yolo`) is added: a tool call
that needs approval is refused by the client. The client saves the turn in the session's file;
Reprise reads the reply from the JSON it prints (`{session_id, response, stats}`, or `{error}`).
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

from ...outcome import TurnOutcome
from ...processes import Finished
from .. import agent_json
from ..client_runs import ClientSendBackend, stderr_tail

HOME_VARIABLE = "GEMINI_CLI_HOME"
STORE = ".gemini"


def client_env(store: Path) -> dict[str, str]:
    """The environment of a run for a session of the store `store` (`<home>/.gemini`): GEMINI_CLI_HOME
    names its home only when the client would not use that store anyway (it names a home, not a store)."""
    env = dict(os.environ)
    home = Path(env[HOME_VARIABLE]).expanduser() if env.get(HOME_VARIABLE) else \
        Path(env.get("HOME") or Path.home())
    try:
        same = (home / STORE).resolve() == Path(store).resolve()
    except OSError:
        same = home / STORE == Path(store)
    if not same:
        env[HOME_VARIABLE] = str(Path(store).parent)
    return env


def _printed(stdout: str) -> dict[str, object]:
    """The JSON object `--output-format json` printed (its last one; {} when none)."""
    start = stdout.find("{")
    while start >= 0:
        try:
            value = agent_json.loads(stdout[start:])
        except (ValueError, RecursionError):
            start = stdout.find("\n{", start + 1)
            start = start + 1 if start >= 0 else -1
            continue
        return value if isinstance(value, dict) else {}
    return {}


def read_output(finished: Finished, session_id: str, notes: list[str]) -> TurnOutcome:
    """The outcome of one headless run from the JSON it printed (a run stopped, or over the cap, is
    `client_runs.unread_outcome`'s, and its reply is then read from the session's file)."""
    printed = _printed(finished.stdout.text())
    recorded = printed.get("session_id")
    if isinstance(recorded, str) and recorded != session_id:
        notes.append(f"Gemini CLI recorded this turn in session {recorded}, not {session_id}.")
    error = printed.get("error")
    response = printed.get("response")
    if finished.status == 0 and error is None and isinstance(response, str):
        return TurnOutcome("succeeded", response, notes=notes)
    message = error.get("message") if isinstance(error, dict) else None
    why = message if isinstance(message, str) and message else stderr_tail(finished.stderr) or \
        "Gemini CLI printed no response."
    return TurnOutcome("failed", error=f"Exit status {finished.status}. {why}".strip(), notes=notes)


class GeminiSendBackend(ClientSendBackend):
    """`[sources.gemini] send`: Gemini CLI runs the turn in the session's folder and appends it to the
    session's file."""

    def __init__(self, template: list[str], store: Path):
        super().__init__("gemini", "Gemini CLI", template, partial(client_env, store), read_output)
