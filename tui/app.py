"""The Reprise Textual app: built by `make_app` (the command line and the tests use the same
factory), it shows the main screen, reports core errors in one place and exits with what
the user chose (a handoff to the agent, or a picked session)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

from reprise.core.errors import RepriseError
from reprise.core.paths import SessionRef
from reprise.core.processes import SIGNAL_EXIT_STATUS
from reprise.core.service import Service
from reprise.core.trash_results import TrashEntry

from .actions import PALETTE_KEY, bindings, key_text, palette_commands
from .driver import TerminalDriver
from .ending import TURN_STOP_BUDGET, Ending
from .first_rows import FirstRows
from .indexing import IndexesInBackground
from .messages import TurnFinished
from .screens.main import MainScreen
from .text import safe_line, safe_text
from .workers import ReportsWorkerErrors

AUDIT_SHOWN = 200   # the newest operations in the Audit log view
QUIT_PRESS_SECONDS = 2.0   # a second ctrl+c within this quits


class RepriseCommands(Provider):
    """The palette: Reprise's views and actions first, in the order of `tui/actions.py` (an action
    the selected row cannot take is left out), then Textual's own commands (theme, keys, quit)."""

    def _commands(self) -> Iterator[tuple[str, str, Callable[[], object]]]:
        app = cast("RepriseApp", self.app)
        main = app.main_screen
        for command in palette_commands():
            keys = f"key {key_text(command.keys)}" if command.keys else ""
            if command.where == "app":
                yield command.description, keys, partial(app.run_action, command.action)
            elif main is not None and main.available(command.action.split("(")[0]):
                yield command.description, keys, partial(main.run_action, command.action)
        for system in app.get_system_commands(self.screen):
            if system.discover:
                yield system.title, system.help, system.callback

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)


class RepriseApp(ReportsWorkerErrors, IndexesInBackground):
    CSS_PATH = "app.tcss"
    TITLE = "Reprise"
    COMMANDS = {RepriseCommands}   # it lists Textual's own commands after Reprise's
    BINDINGS = bindings("app")
    COMMAND_PALETTE_BINDING = PALETTE_KEY   # ctrl+p moves the list up, as in fzf
    COMMAND_PALETTE_DISPLAY = key_text(PALETTE_KEY)

    def __init__(self, service: Service, *, mode: str = "browse", clock: Callable[[], float] = time.time,
                 follow_disk: bool = True, agent: str | None = None, demo: bool = False,
                 ending: Ending | None = None, monotonic: Callable[[], float] = time.monotonic,
                 first_rows: FirstRows | None = None):
        super().__init__()
        self.first_rows = first_rows   # the workspace's stored rows, read since the process started
        self.monotonic = monotonic   # what the dialogs' guard against typed-ahead keys reads
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
        self._quit_pressed: float | None = None   # when ctrl+c last asked "again to quit"
        self.ending = ending or Ending()   # the command line's own ends the process if the app cannot

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for a terminal, made safe for one that hangs up (tui/driver.py)."""
        driver = super().get_driver_class()
        return TerminalDriver if driver is LinuxDriver else driver

    def on_mount(self) -> None:
        self.push_screen(MainScreen(self.service, mode=self.mode, agent=self.agent))
        for failure in self.service.load_failures:   # a source that did not load: said once, the others work
            self.notify(safe_line(failure.line), title="Reprise", severity="warning", timeout=12, markup=False)
        loop = asyncio.get_running_loop()

        def deliver(sig: int) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the app has ended
                loop.call_soon_threadsafe(self.on_signal, sig)

        self.ending.install(deliver, self._turn_running, self._stop_turn)

    def on_unmount(self) -> None:
        self.ending.uninstall()

    def _turn_running(self) -> bool:
        main = self.main_screen
        return main is not None and main.running is not None

    def _stop_turn(self, signum: int) -> str | None:
        """The last resort's, from another thread, the loop never having taken the signal: a running
        turn is stopped (its processes ended by its own worker) and the signal recorded."""
        main = self.main_screen
        running = main.running if main is not None else None
        if running is None:
            return None
        running.cancel.set()
        running.done.wait(TURN_STOP_BUDGET)
        name = signal.Signals(signum).name
        self.service.record_signal(running.ref, name, None, None)
        return f"reprise: {name}: the running turn was stopped."

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
        self.ending.recorded.set()
        self.exit(None, return_code=SIGNAL_EXIT_STATUS.get(sig, 128 + signum))

    def _handle_exception(self, error: Exception) -> None:
        """Once the app is leaving on a signal, an error of a screen taken down as it mounts (F1's
        help, the instant the terminal closed) is not a crash: the exit keeps the signal's status."""
        if self.ending.recorded.is_set():
            return
        super()._handle_exception(error)

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

    def _interrupt_or_close(self) -> bool:
        """What ctrl+q and ctrl+c do first: interrupt a running turn, else close a dialog; False: neither."""
        main = self.main_screen
        if main is not None and main.interrupt_turn():
            return True
        if self.screen.is_modal:
            self.screen.dismiss(None)
            return True
        return False

    def action_quit_app(self) -> None:
        """ctrl+q: a dialog closes, else the app quits (a running turn is interrupted first)."""
        if not self._interrupt_or_close():
            self.exit(None)

    def action_ctrl_c(self) -> None:
        """ctrl+c, in this order: a running turn is interrupted; a dialog closes; a draft is cleared
        (ctrl+z in the composer brings it back); else a second press within two seconds quits. The picker cancels at
        once, as fzf does."""
        if self._interrupt_or_close():
            return
        main = self.main_screen
        if main is not None and main.clear_draft():
            return
        now = time.monotonic()
        if self.mode == "pick" or (self._quit_pressed is not None and now - self._quit_pressed < QUIT_PRESS_SECONDS):
            self.exit(None)
            return
        self._quit_pressed = now
        self.notify("Press ctrl+c again to quit.", timeout=QUIT_PRESS_SECONDS)

    def action_show_trash(self) -> None:
        def run() -> None:
            from .screens.dialogs import trash_dialog  # the views' modules: not before the first frame

            entries = self.service.trash_entries(all_workspaces=True)
            dialog = trash_dialog(entries, self.clock())
            self.call_from_thread(self.push_screen, dialog, partial(self._restore_trashed, entries))

        self.run_worker(run, thread=True, group="trash", exit_on_error=False)

    def _restore_trashed(self, entries: list[TrashEntry], choice: str | None) -> None:
        """Restore the chosen entry (its index in `entries`), of whichever agent."""
        if choice is None:
            return
        ref = entries[int(choice)].ref
        main = self.main_screen
        if main is not None:
            main.run_service(lambda: self.service.trash_restore(ref), lambda _: main.load_rows(),
                             "Restored from the trash.")

    def action_show_audit(self) -> None:
        def run() -> None:
            from .reports import line
            from .reports.audit import audit_lines, audit_problem_lines
            from .reports.styled import styled_text
            from .screens.dialogs import ReportScreen

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
            from .reports.doctor import doctor_lines
            from .reports.styled import styled_text
            from .screens.dialogs import ReportScreen

            try:
                report = self.service.doctor()
            except RepriseError as exc:
                self.call_from_thread(self.report_error, exc)
                return
            body = styled_text(doctor_lines(report, self.service.state_root))
            self.call_from_thread(self.push_screen, ReportScreen("Doctor", body))

        self.run_worker(run, thread=True, group="doctor", exit_on_error=False)


def make_app(service: Service, *, mode: str = "browse", clock: Callable[[], float] = time.time,
             follow_disk: bool = True, agent: str | None = None, demo: bool = False,
             ending: Ending | None = None, monotonic: Callable[[], float] = time.monotonic,
             first_rows: FirstRows | None = None) -> RepriseApp:
    return RepriseApp(service, mode=mode, clock=clock, follow_disk=follow_disk, agent=agent, demo=demo,
                      ending=ending, monotonic=monotonic, first_rows=first_rows)
