"""The main screen's composer and turns: Tab writes a message, Enter sends it through the
session's agent in a worker, ctrl+c interrupts the turn or clears the draft (ctrl+z brings it
back), and a turn that fails gives its message back."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from textual import on, work

from reprise.core.errors import OverWindowError
from reprise.core.paths import SessionRef
from reprise.core.sources.roles import Sender

from ...lazy import lazy_module
from ...messages import TurnFinished
from ...text import safe_line, safe_text
from ...widgets.composer import Composer
from ...widgets.detail import DetailPane
from ...widgets.running_turn import RunningTurnLine
from ...widgets.session_list import SessionList
from .base import RunningTurn
from .preview import PreviewPart

if TYPE_CHECKING:
    from .. import dialogs
else:   # imported when a dialog first opens, not before the first frame
    dialogs = lazy_module("reprise.tui.screens.dialogs")


class ComposingPart(PreviewPart):
    """Writing a message and running its turn."""

    def action_focus_composer(self) -> None:
        composer = self.query_one(Composer)
        composer.display = True
        self.set_focus(composer)

    def on_descendant_focus(self) -> None:
        self.refresh_bindings()   # the footer shows the keys of the mode (list, composer)
        self.fold_composer()

    def fold_composer(self) -> None:
        """The composer takes a line only while it is written in or holds a draft: otherwise the
        list has the line, and the footer's Tab says how to write."""
        for composer in self.query(Composer):   # none in pick mode
            composer.display = composer.has_focus or bool(composer.text.strip())
        self.call_after_refresh(self.place_toasts)

    @on(Composer.Left)
    def on_composer_left(self, _: Composer.Left) -> None:
        self.set_focus(self.query_one(SessionList))

    def clear_draft(self) -> bool:
        """ctrl+c with a draft: it is cleared, kept for ctrl+z. False when there is none."""
        composers = self.query(Composer)
        if not composers or not composers.first().text.strip():
            return False
        composer = composers.first()
        self.cleared_draft = composer.text
        composer.clear()
        self.refresh_bindings()
        self.fold_composer()
        back = "ctrl+z" if isinstance(self.focused, Composer) else "Tab, then ctrl+z,"
        self.app.notify(f"ctrl+c cleared the draft · {back} brings it back", timeout=6)
        return True

    def action_restore_draft(self) -> None:
        composer = self.query_one(Composer)
        if self.cleared_draft:
            composer.load_text(self.cleared_draft + composer.text)
            self.cleared_draft = ""
            composer.display = True
            self.set_focus(composer)
            composer.move_cursor(composer.document.end)

    def put_back_draft(self, text: str) -> None:
        """A turn that did not succeed gives its message back to the composer, before anything typed since."""
        composer = self.query_one(Composer)
        if text and text not in composer.text:
            composer.load_text(text + ("\n\n" + composer.text if composer.text.strip() else ""))
        composer.display = True

    @on(Composer.SendRequested)
    def on_send_requested(self, message: Composer.SendRequested) -> None:
        row = self.query_one(SessionList).current
        if row is None or row.ref is None or row.problem_code:
            self.app.notify("Select a readable session first.", severity="warning")
            return
        if self.running is not None:
            self.app.notify("A turn is already running; wait for it or press ctrl+c.", severity="warning")
            return
        if not message.text.strip():
            self.app.notify("The message is empty.", severity="warning")
            return
        if not self.service.can(row.source, Sender):   # a draft written for another session stays
            self.app.notify(safe_line(self.service.refusal(row.source, Sender)), severity="warning", markup=False)
            return
        self.start_turn(row.path, row.ref, message.text, confirm_over=False)

    def start_turn(self, path: str, ref: SessionRef, text: str, *, confirm_over: bool) -> None:
        """The message leaves the composer while its turn runs; it comes back if the turn fails."""
        self.sent_text = text
        composer = self.query_one(Composer)
        if composer.text == text:
            composer.clear()
        self.running = RunningTurn(path, ref, time.monotonic(), threading.Event())
        self.send_turn(self.running, text, confirm_over)

    def watch_running(self, running: RunningTurn | None) -> None:
        self.query_one(RunningTurnLine).started = running.started if running is not None else None
        self.call_after_refresh(self.place_toasts)

    @work(thread=True, group="turn", exit_on_error=False)
    def send_turn(self, running: RunningTurn, text: str, confirm_over: bool) -> None:
        try:
            result = self.service.send_turn(running.ref, text, agent=self.agent, confirm_over=confirm_over,
                                            cancel=running.cancel)
        except Exception as exc:  # whatever happens, the running state must end
            self.post_message(TurnFinished(running.path, None, exc))
            return
        finally:
            running.done.set()
        self.post_message(TurnFinished(running.path, result, None))

    def on_turn_finished(self, message: TurnFinished) -> None:
        ref = self.running.ref if self.running else None
        self.running = None
        text = self.sent_text
        if message.error is not None:
            error = message.error
            self.put_back_draft(text)
            if isinstance(error, OverWindowError) and ref is not None:
                def answered(yes: bool | None) -> None:
                    if yes:
                        self.start_turn(message.path, ref, text, confirm_over=True)
                self.app.push_screen(dialogs.ConfirmDialog(f"{safe_line(error.message)}\n\nSend anyway?",
                                                           yes="Send anyway", danger=True), answered)
            else:
                self.reprise_app.report_error(error)
            self.show_meter()
            return
        sent = message.result
        assert sent is not None  # a turn ends with a result or an error
        outcome = sent.outcome
        if outcome.status == "succeeded":
            self.app.notify(f"Turn finished ({safe_line(sent.backend)}).", markup=False)
        else:
            self.put_back_draft(text)
            self.app.notify(safe_text(f"Turn {outcome.status}: {outcome.error or 'no error text'} · "
                                      "the message is back in the composer"),
                            severity="error", timeout=10, markup=False)
        self.query_one(DetailPane).show_tab("tab-history")
        self.history_to_end = message.path   # the new turn and its reply are on screen once the detail reloads
        self.reload_current(message.path)

    def interrupt_turn(self) -> bool:
        """ctrl+c while a turn runs interrupts it instead of quitting; pressed again, it quits."""
        if self.running is None or self.running.cancel.is_set():
            return False
        self.running.cancel.set()
        self.query_one(RunningTurnLine).stopping = True
        self.app.notify("Interrupting the turn…")
        return True

