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
from typing import TYPE_CHECKING, cast

from .agents import TurnRequest, choose_backend, recorded_reply
from .errors import AgentError, RepriseError
from .outcome import TurnOutcome
from .paths import SessionRef
from .run_folder import exact_folder_gone, folder_is_gone, runs_anywhere, runs_only_there
from .sources.roles import MeterCalibration, Sender, TurnRecorder

if TYPE_CHECKING:
    from .service import Service


def send_turn(service: Service, ref: SessionRef, message: str, *, agent: str | None, confirm_over: bool,
              cancel: threading.Event | None, on_begin: Callable[[str], object]) -> SendResult:
    settings = service.settings.agent
    source = service.source(ref)
    sender = service.role(ref, Sender)   # before any backend is chosen: it would name the wrong program
    backend = sender.turn_backend(ref) or choose_backend(agent, settings)
    if backend is None:
        raise AgentError("No agent backend is configured and the fractal program is not installed.",
                         hint="install fractal-rlm, or set [agent] backend = \"command\" with [agent] turn, "
                              "or pass --agent echo to try Reprise offline")
    cancel = cancel or threading.Event()
    workspace_path = service.workspace_path_of(ref.workspace_key)[0]
    if runs_only_there(source) and folder_is_gone(workspace_path):
        raise exact_folder_gone(source, ref.session_id, workspace_path, AgentError)
    if runs_anywhere(source) and folder_is_gone(workspace_path):
        workspace_path = str(service.existing_folder())   # the agent finds the session by id from here
    if workspace_path is None or not Path(workspace_path).is_dir():
        gone = f"is gone: {workspace_path}" if workspace_path else "is unknown"
        raise AgentError(f"The folder of session {ref.session_id}'s workspace {gone}.",
                         hint="relink the workspace first")
    checked = service.check_sendable(ref, message, confirm_over=confirm_over)
    estimate = checked.total if checked is not None else None
    workspace = Path(workspace_path)
    turn_id: str | None
    if backend.writes_session:
        before, summary = sender.before_agent_writes(ref)
        request = TurnRequest(ref.session_id, workspace, message, summary, settings.timeout, estimate,
                              settings.max_reply_bytes)
        outcome = backend.run(request, cancel)
        turn_id = sender.after_agent_wrote(ref, before, outcome)
    else:
        recorder = service.role(ref, TurnRecorder)   # the backend does not save the session: Reprise records it
        turn_id = recorder.begin_turn(ref, message)
        outcome = TurnOutcome("failed", error="Reprise stopped before the agent finished.")
        try:
            on_begin(turn_id)
            request = TurnRequest(ref.session_id, workspace, message, recorder.turn_summary(ref), settings.timeout,
                                  estimate, settings.max_reply_bytes, source.archive.directory(ref),
                                  source.archive.root)
            outcome = recorded_reply(source.archive, ref, turn_id, backend.run(request, cancel))
        except Exception as exc:  # the turn is on disk as pending: it must end, whatever happened
            outcome = TurnOutcome("failed", error=f"{type(exc).__name__}: {exc}")
            if not isinstance(exc, RepriseError):
                raise
        finally:
            recorder.finish_turn(ref, turn_id, outcome)
    if turn_id is not None and estimate is not None and MeterCalibration in source.roles:
        cast(MeterCalibration, source).remember_estimate(ref, turn_id, estimate)
    return SendResult(ref, backend.name, turn_id, outcome, estimate)


@dataclass(slots=True)
class SendResult:
    ref: SessionRef
    backend: str
    turn_id: str | None
    outcome: TurnOutcome
    estimate: int | None
