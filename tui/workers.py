"""Workers never fail silently: any exception a worker raises is shown by the app's one error
reporter, and the app keeps running."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from textual.app import App
from textual.worker import Worker, WorkerState


@runtime_checkable
class ErrorReporter(Protocol):
    """The app's one error reporter (RepriseApp.report_error)."""

    def report_error(self, error: BaseException) -> None: ...


class _InApp(Protocol):
    @property
    def app(self) -> App[object]: ...


class ReportsWorkerErrors:
    """Mixed into every screen or app that starts workers (their state messages do not bubble)."""

    def on_worker_state_changed(self: _InApp, event: Worker.StateChanged) -> None:
        error = event.worker.error
        if event.state == WorkerState.ERROR and error is not None:
            app = self.app
            if not isinstance(app, ErrorReporter):  # an app without the reporter: the error is not lost
                raise error
            app.report_error(error)
