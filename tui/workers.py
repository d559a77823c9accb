"""Workers never fail silently: any exception a worker raises is shown by the app's one error
reporter, and the app keeps running."""

from __future__ import annotations

from textual.worker import Worker, WorkerState


class ReportsWorkerErrors:
    """Mixed into every screen or app that starts workers (their state messages do not bubble)."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.app.report_error(event.worker.error)
