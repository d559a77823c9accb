"""The trim dialog: pick an operation and its figure, see the before/after preview (a dry run
through the service, in a worker), then apply in place or as a fork. It dismisses with the
chosen options; the main screen applies them."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Static
from textual.worker import get_current_worker

from reprise.core.errors import RepriseError
from reprise.core.paths import SessionRef
from reprise.core.trimming import TrimOptions, TrimResult

from ..format import human_size
from ..text import safe_line, safe_text
from ..workers import ReportsWorkerErrors
from .dialogs import DIALOG_CSS

OPERATIONS = (
    ("fit", "Fit the context to N tokens (cap replies, then fold)"),
    ("cap", "Cap agent replies at N characters (the newest 3 turns are spared)"),
    ("fold", "Fold: keep the newest N turns, condense the older ones into one"),
    ("keep", "Keep only the newest N history entries (file size)"),
    ("drop", "Drop turns by number or turn id (e.g. 3,5,turn-…)"),
)
# A fork of a Claude Code session: no fold (its compaction is Claude Code's own), and "keep" keeps turns.
FORK_OPERATIONS = (
    ("fit", "Fit the context to N tokens (cap tool results and replies, then drop the oldest turns)"),
    ("cap", "Cap tool results and replies at N characters (the newest 3 turns are spared)"),
    ("keep", "Keep only the newest N turns"),
    ("drop", "Drop turns by number (e.g. 3,5)"),
)


@dataclass(frozen=True, slots=True)
class TrimRequest:
    options: TrimOptions
    fork: bool
    original_sha256: str


def options_for(operation: str, value: str) -> TrimOptions:
    """The trim options for a dialog choice; raises ValueError or UsageError on a bad figure."""
    value = value.strip().replace(",", "") if operation != "drop" else value.strip()
    if operation == "drop":
        return TrimOptions(drop=TrimOptions.parse_drop(value))
    number = int(value)
    return {"fit": TrimOptions(fit=number), "cap": TrimOptions(cap_replies=number), "fold": TrimOptions(fold=number),
            "keep": TrimOptions(keep_history=number)}[operation]


def preview_text(result: TrimResult) -> Text:
    plan = result.plan
    text = Text()
    if plan.fit is not None:
        text.append(f"Plan: {plan.fit.chosen}\n" if plan.fit.fits else
                    f"No plan on the ladder fits {plan.fit.target:,} tokens: nothing would change.\n",
                    style="bold" if plan.fit.fits else "bold red")
    if not plan.changed:
        text.append("Nothing would change.", style="yellow")
    else:
        counts = plan.counts()
        if plan.meter_before is not None and plan.meter_after is not None:
            text.append("Context  ", style="bold")
            text.append(f"{plan.meter_before:,} → {plan.meter_after:,} tokens\n")
        text.append("File     ", style="bold")
        text.append(f"{human_size(plan.size_before)} → {human_size(plan.size_after)}\n")
        text.append("Turns    ", style="bold")
        text.append(f"{counts['capped']} capped, {counts['folded']} folded, {counts['dropped']} dropped; "
                    f"{counts['history_removed']} history entries removed\n")
        text.append("Everything removed goes to the archive first; u undoes it.", style="dim")
    for note in plan.notes:
        text.append(f"\nNote: {safe_text(note)}", style="yellow")
    return text


class TrimDialog(ReportsWorkerErrors, ModalScreen[TrimRequest | None]):
    DEFAULT_CSS = DIALOG_CSS.format(name="TrimDialog") + """
    TrimDialog > Vertical { width: 84; padding: 0 1; }
    TrimDialog RadioSet { width: 100%; }
    TrimDialog #trim-preview { height: auto; min-height: 3; padding: 0 1; background: $panel; }
    TrimDialog .dialog-buttons { margin-top: 0; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, service, ref: SessionRef, title: str, window: int | None):
        super().__init__()
        self.service = service
        self.ref = ref
        self.title_text = title
        self.window = window
        self.operation = "fit"
        self.result: TrimResult | None = None
        able = service.sources[ref.source].capabilities
        self.fork_only = able.trim_fork and not able.trim_in_place   # Claude Code's files are never rewritten
        self.defaults = {"fit": str((window or 200_000) // 4), "cap": "2000", "fold": "10", "keep": "5", "drop": ""}

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(f"Trim {safe_line(self.title_text)}", style="bold"))
            with RadioSet(id="trim-operation"):
                for index, (key, label) in enumerate(FORK_OPERATIONS if self.fork_only else OPERATIONS):
                    yield RadioButton(label, value=index == 0, id=f"op-{key}")
            yield Input(self.defaults["fit"], id="trim-value")
            yield Static(Text("Computing the preview…", style="dim"), id="trim-preview")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Apply as a new session", id="fork")
                yield Button("Apply", id="apply", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#trim-value", Input).focus()
        self.refresh_preview()

    @on(RadioSet.Changed)
    def on_operation_changed(self, event: RadioSet.Changed) -> None:
        self.operation = (event.pressed.id or "").removeprefix("op-")
        field = self.query_one("#trim-value", Input)
        field.value = self.defaults[self.operation]
        field.focus()
        self.refresh_preview()

    @on(Input.Changed, "#trim-value")
    def on_value_changed(self, _: Input.Changed) -> None:
        self.refresh_preview()

    @on(Input.Submitted, "#trim-value")
    def on_value_submitted(self, _: Input.Submitted) -> None:
        self._finish(fork=self.fork_only)

    def current_options(self) -> TrimOptions | None:
        try:
            return options_for(self.operation, self.query_one("#trim-value", Input).value)
        except (ValueError, RepriseError):
            return None

    def refresh_preview(self) -> None:
        self.result = None
        self.query_one("#apply", Button).disabled = True
        self.query_one("#fork", Button).disabled = True
        options = self.current_options()
        if options is None:
            self.query_one("#trim-preview", Static).update(Text("Enter a whole number (or turns for drop).",
                                                                style="yellow"))
            return
        self.query_one("#trim-preview", Static).update(Text("Computing the preview…", style="dim"))
        self.compute_preview(options)

    @work(thread=True, exclusive=True, group="trim-preview", exit_on_error=False)
    def compute_preview(self, options: TrimOptions) -> None:
        try:
            result = self.service.trim(self.ref, options, dry_run=True, fork=self.fork_only)
        except RepriseError as exc:
            self.app.call_from_thread(self._show_error, str(exc))
            return
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._show_preview, options, result)

    def _show_error(self, message: str) -> None:
        self.query_one("#trim-preview", Static).update(Text(safe_line(message), style="red"))

    def _show_preview(self, options: TrimOptions, result: TrimResult) -> None:
        if options != self.current_options():
            return  # a newer figure was typed
        self.result = result
        self.query_one("#trim-preview", Static).update(preview_text(result))
        self.query_one("#apply", Button).disabled = not result.plan.changed or self.fork_only
        self.query_one("#fork", Button).disabled = not result.plan.changed

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "cancel":
            self.dismiss(None)
        else:
            self._finish(fork=event.button.id == "fork")

    def _finish(self, *, fork: bool) -> None:
        if self.result is None or not self.result.plan.changed:
            return
        self.dismiss(TrimRequest(self.result.plan.options, fork, self.result.plan.original_digest))

    def action_cancel(self) -> None:
        self.dismiss(None)
