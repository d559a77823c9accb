"""The Reprise Textual app: built by `make_app` (the command line and the tests use the same
factory), it shows the main screen, reports core errors in one place and exits with what
the user chose (a handoff to the agent, or a picked session)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from functools import partial

from textual.app import App
from textual.binding import Binding
from textual.command import Hit, Hits, Provider

from reprise.core.errors import RepriseError
from reprise.core.paths import SessionRef
from reprise.core.processes import SIGNAL_EXIT_STATUS, TurnSignals
from reprise.core.retention import format_age
from reprise.core.service import Service

from .reports import line
from .reports.audit import audit_lines, audit_problem_lines
from .reports.doctor import doctor_lines
from .reports.styled import styled_text
from .screens.dialogs import ChoiceDialog, ReportScreen
from .screens.main import MainScreen, TurnFinished
from .text import safe_line, safe_text
from .workers import ReportsWorkerErrors

AUDIT_SHOWN = 200   # the newest operations in the Audit log view


class RepriseCommands(Provider):
    """Every action of the main screen, plus the store-wide views, in the command palette."""

    ACTIONS = (
        ("Resume the selected session", "resume"),
        ("New session", "new"),
        ("Trim the selected session", "trim"),
        ("Undo the last trim or delete", "undo"),
        ("Move the selected session to the trash", "delete"),
        ("Rename the selected session", "rename"),
        ("Pin or unpin the selected session", "pin"),
        ("Filter the list", "filter"),
        ("Search all text", "search"),
        ("Toggle this workspace / all workspaces", "toggle_scope"),
        ("Choose a workspace", "choose_workspace"),
        ("Cycle the sort order", "cycle_sort"),
        ("Write a message", "focus_composer"),
        ("Show the Summary tab", "show_tab('tab-summary')"),
        ("Show the History tab", "show_tab('tab-history')"),
        ("Show the Context tab", "show_tab('tab-context')"),
    )
    VIEWS = (
        ("Doctor: problems in the store", "show_doctor"),
        ("Trash: restore a removed session", "show_trash"),
        ("Audit log: destructive operations", "show_audit"),
    )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        screen = next((s for s in self.app.screen_stack if isinstance(s, MainScreen)), None)
        for label, action in self.ACTIONS:
            score = matcher.match(label)
            if score > 0 and isinstance(screen, MainScreen) and screen.check_action(action.split("(")[0], ()):
                yield Hit(score, matcher.highlight(label), partial(screen.run_action, action), help=f"action {action}")
        for label, action in self.VIEWS:
            score = matcher.match(label)
            if score > 0:
                yield Hit(score, matcher.highlight(label), partial(self.app.run_action, action))


class RepriseApp(ReportsWorkerErrors, App):
    CSS_PATH = "app.tcss"
    TITLE = "Reprise"
    COMMANDS = App.COMMANDS | {RepriseCommands}
    BINDINGS = [
        Binding("q", "quit_app", "Quit"),
        Binding("ctrl+c", "quit_app", "Quit", show=False, priority=True),
    ]

    def __init__(self, service: Service, *, mode: str = "browse", clock: Callable[[], float] = time.time,
                 follow_disk: bool = True, agent: str | None = None, demo: bool = False):
        super().__init__()
        self.service = service
        self.mode = mode
        self.agent = agent
        self.demo = demo   # `reprise --demo`: resuming shows what would run instead of running it
        self.clock = clock
        service.clock = clock
        self.follow_disk = follow_disk
        self.exit_signal: int | None = None
        self.signal_line: str | None = None
        self._signal_ref: SessionRef | None = None

    def on_mount(self) -> None:
        self.push_screen(MainScreen(self.service, mode=self.mode, agent=self.agent))
        loop = asyncio.get_running_loop()
        for sig in TurnSignals.SIGNALS:  # the loop removes them when it closes
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self.on_signal, sig)

    def on_signal(self, sig: int) -> None:
        """SIGINT, SIGTERM or SIGHUP (a closed terminal): a running turn is interrupted, and the
        app exits (128 + the signal) only once the turn is recorded and its processes are gone."""
        if self.exit_signal is not None:
            return
        self.exit_signal = sig
        main = self.main_screen
        if main is not None and main.running is not None:
            self._signal_ref = main.running.ref
            main.running.cancel.set()
            return  # the turn's TurnFinished, bubbling up from the main screen, ends the app
        self._exit_on_signal(sig, None)

    def on_turn_finished(self, message: TurnFinished) -> None:
        if self.exit_signal is not None:
            self._exit_on_signal(self.exit_signal, message)

    def _exit_on_signal(self, signum: int, finished: TurnFinished | None) -> None:
        sig = signal.Signals(signum)
        name = sig.name
        self.signal_line = f"reprise: {name}: Reprise was closed."
        if self._signal_ref is not None:
            result = finished.result if finished is not None else None
            status = result.outcome.status if result is not None else None
            turn_id = result.turn_id if result is not None else None
            self.service.record_signal(self._signal_ref, name, turn_id, status)
            self.signal_line = (f"reprise: {name}: turn {turn_id} was stopped and recorded {status}."
                                if turn_id else f"reprise: {name}: the running turn was stopped.")
        self.exit(None, return_code=SIGNAL_EXIT_STATUS.get(sig, 128 + signum))

    @property
    def main_screen(self) -> MainScreen | None:
        return next((screen for screen in self.screen_stack if isinstance(screen, MainScreen)), None)

    def report_error(self, error: BaseException) -> None:
        """Core errors end up here: a notification naming the file and the problem; the app runs on."""
        if isinstance(error, RepriseError):  # one sentence, naming files: on one line, whatever the names hold
            text = safe_line(str(error))
        else:
            text = safe_text(f"{type(error).__name__}: {error}")
        self.notify(text, title="Reprise", severity="error", timeout=8, markup=False)

    def action_quit_app(self) -> None:
        main = self.main_screen
        if main is not None and main.interrupt_turn():
            return
        if self.screen.is_modal:
            self.screen.dismiss(None)
            return
        self.exit(None)

    def action_show_trash(self) -> None:
        def run() -> None:
            entries = self.service.trash_entries(all_workspaces=True)
            now = time.time()
            choices = [(f"{e.ref.workspace_key}/{e.ref.session_id}",
                        f"{format_age(e.age(now)):>6} ago  {e.title or '(untitled)'}  {e.ref.session_id[:8]}")
                       for e in entries]
            self.call_from_thread(self.push_screen, ChoiceDialog("Trash: choose a session to restore", choices,
                                                                 "The trash is empty."), self._restore_trashed)

        self.run_worker(run, thread=True, group="trash", exit_on_error=False)

    def _restore_trashed(self, choice: str | None) -> None:
        if not choice:
            return
        key, session_id = choice.split("/", 1)
        ref = SessionRef(key, session_id)
        main = self.main_screen
        if main is not None:
            main.run_service(lambda: self.service.trash_restore(ref), lambda _: main.load_rows(),
                             "Restored from the trash.")

    def action_show_audit(self) -> None:
        def run() -> None:
            records = self.service.audit_records(all_workspaces=True)
            lines = audit_problem_lines(self.service.audit_problems())
            if len(records) > AUDIT_SHOWN:
                lines.append(line(f"The newest {AUDIT_SHOWN} of {len(records):,} operations "
                                  "(reprise audit prints them all):", style="dim"))
            lines += audit_lines(records[-AUDIT_SHOWN:])
            self.call_from_thread(self.push_screen, ReportScreen("Audit log", styled_text(lines)))

        self.run_worker(run, thread=True, group="audit", exit_on_error=False)

    def action_show_doctor(self) -> None:
        self._doctor()

    def _doctor(self) -> None:
        def run() -> None:
            try:
                report = self.service.doctor()
            except RepriseError as exc:
                self.call_from_thread(self.report_error, exc)
                return
            body = styled_text(doctor_lines(report, self.service.state_root))
            self.call_from_thread(self.push_screen, ReportScreen("Doctor", body))

        self.run_worker(run, thread=True, group="doctor", exit_on_error=False)


def make_app(service: Service, *, mode: str = "browse", clock: Callable[[], float] = time.time,
             follow_disk: bool = True, agent: str | None = None, demo: bool = False) -> RepriseApp:
    return RepriseApp(service, mode=mode, clock=clock, follow_disk=follow_disk, agent=agent, demo=demo)
