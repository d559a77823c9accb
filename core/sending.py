"""Sending one turn: the checks, the backend that runs the agent, and the session's source
recording it. A backend that saves the session itself (Fractal's own program) is given the
session and Reprise reads back the turn it saved; for any other backend the source records
the message as a pending turn first and fills in the outcome after, whatever happened.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .agents import TurnRequest, choose_backend, recorded_reply
from .errors import AgentError, RepriseError
from .outcome import TurnOutcome
from .paths import SessionRef

if TYPE_CHECKING:
    from .service import Service


def send_turn(service: Service, ref: SessionRef, message: str, *, agent: str | None, confirm_over: bool,
              cancel: threading.Event | None, on_begin: Callable[[str], object]) -> SendResult:
    settings = service.settings.agent
    backend = choose_backend(agent, settings)
    if backend is None:
        raise AgentError("No agent backend is configured and the fractal program is not installed.",
                         hint="install fractal-rlm, or set [agent] backend = \"command\" with [agent] turn, "
                              "or pass --agent echo to try Reprise offline")
    cancel = cancel or threading.Event()
    workspace_path = service.workspace_path_of(ref.workspace_key)[0]
    if workspace_path is None or not Path(workspace_path).is_dir():
        raise AgentError(f"The folder of workspace {ref.workspace_key} is unknown or gone.",
                         hint="relink the workspace first")
    estimate = service.check_sendable(ref, message, confirm_over=confirm_over).total
    source = service.source(ref)
    workspace = Path(workspace_path)
    turn_id: str | None
    if backend.writes_session:
        before, summary = source.before_agent_writes(ref)
        request = TurnRequest(ref.session_id, workspace, message, summary, settings.timeout, estimate,
                              settings.max_reply_bytes)
        outcome = backend.run(request, cancel)
        turn_id = source.after_agent_wrote(ref, before, outcome)
    else:
        turn_id = source.begin_turn(ref, message)
        outcome = TurnOutcome("failed", error="Reprise stopped before the agent finished.")
        try:
            on_begin(turn_id)
            request = TurnRequest(ref.session_id, workspace, message, source.turn_summary(ref), settings.timeout,
                                  estimate, settings.max_reply_bytes, source.archive.directory(ref),
                                  source.archive.root)
            outcome = recorded_reply(source.archive, ref, turn_id, backend.run(request, cancel))
        except Exception as exc:  # the turn is on disk as pending: it must end, whatever happened
            outcome = TurnOutcome("failed", error=f"{type(exc).__name__}: {exc}")
            if not isinstance(exc, RepriseError):
                raise
        finally:
            source.finish_turn(ref, turn_id, outcome)
    if turn_id is not None:
        source.remember_estimate(ref, turn_id, estimate)
    return SendResult(ref, backend.name, turn_id, outcome, estimate)


@dataclass(slots=True)
class SendResult:
    ref: SessionRef
    backend: str
    turn_id: str | None
    outcome: TurnOutcome
    estimate: int | None

    def as_dict(self) -> dict[str, object]:
        o = self.outcome
        return {"session_id": self.ref.session_id, "backend": self.backend, "turn_id": self.turn_id,
                "status": o.status, "response": o.response, "files_read": o.files_read,
                "files_modified": o.files_modified, "commands_run": o.commands_run, "error": o.error,
                "usage": o.usage, "estimate_before_turn": self.estimate,
                "notes": o.notes}
