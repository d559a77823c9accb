"""The trim dialog: pick what to do in the user's words, see the before/after preview (a dry run
through the service, in a worker, once per pause in typing), then apply as a new session or, after
a confirmation, in place. It dismisses with the chosen options; the main screen applies them.

The operations keep core's names (`TrimOptions`: fit, cap, fold, keep, drop); only the labels are
the dialog's. "Remove turns" offers the turns to tick, and a field taking ranges (`5-23, 30`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textual import on, work
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Button, Input, RadioButton, RadioSet, SelectionList, Static

from reprise.core.errors import RepriseError
from reprise.core.paths import SessionRef
from reprise.core.service import Service
from reprise.core.sources.roles import TrimmingInPlace
from reprise.core.trimming import TrimOptions, TrimResult, TurnSize, parse_turn_ranges, turn_ranges

from ..debounce import Debouncer
from ..format import human_size
from ..text import one_line, safe_line, safe_text
from ..workers import ReportsWorkerErrors
from .dialogs import Choice, ConfirmDialog, Dialog, session_name

PREVIEW_PAUSE = 0.25   # seconds without a keystroke before the preview runs


@dataclass(frozen=True, slots=True)
class Operation:
    name: str    # core's name of the option (TrimOptions)
    label: str   # what the user reads
    help: str    # one line under the choices: what it does, and to what N is
    default: str


def operations(window: int | None, *, fork_only: bool) -> tuple[Operation, ...]:
    """The operations a session offers: a Claude Code fork has no digest (its compaction is Claude
    Code's own), and its "keep" keeps turns."""
    fit = str((window or 200_000) // 4)
    if fork_only:
        return (
            Operation("fit", "Make the next turn fit in N tokens",
                      "Shortens tool results and replies, then removes the oldest turns, until it fits.", fit),
            Operation("cap", "Shorten long replies and tool results",
                      "Cuts each to N characters; the newest 3 turns are spared.", "2000"),
            Operation("keep", "Keep only the newest N turns", "The older turns are left out of the new session.",
                      "5"),
            Operation("drop", "Remove turns", "Tick the turns to leave out, or type them: 5-23, 30.", ""),
        )
    return (
        Operation("fit", "Make the next turn fit in N tokens",
                  "Shortens long replies, then condenses old turns into a digest, until it fits.", fit),
        Operation("cap", "Shorten long replies", "Cuts each reply to N characters; the newest 3 turns are spared.",
                  "2000"),
        Operation("fold", "Condense old turns into a digest",
                  "Keeps the newest N turns; each older one becomes a line of one digest turn (its prompt and "
                  "the start of its reply, cut as written: no AI summary).", "10"),
        Operation("keep", "Keep only the newest N history entries",
                  "Makes the file smaller; the turns the agent is sent stay as they are.", "5"),
        Operation("drop", "Remove turns", "Tick the turns to remove, or type them: 5-23, 30.", ""),
    )


@dataclass(frozen=True, slots=True)
class TrimRequest:
    options: TrimOptions
    fork: bool
    original_sha256: str


def options_for(operation: str, value: str, turns: int | None = None) -> TrimOptions:
    """The trim options for a dialog choice; raises ValueError or UsageError on a bad figure. For
    "drop", `value` is turn numbers and ranges (checked against `turns` when known) or turn ids."""
    if operation == "drop":
        if turns is not None and not any(char.isalpha() for char in value):
            return TrimOptions(drop=tuple(str(number) for number in parse_turn_ranges(value, turns)))
        return TrimOptions(drop=TrimOptions.parse_drop(value))
    number = int(value.strip().replace(",", ""))
    return {"fit": TrimOptions(fit=number), "cap": TrimOptions(cap_replies=number), "fold": TrimOptions(fold=number),
            "keep": TrimOptions(keep_history=number)}[operation]


def preview_text(result: TrimResult) -> Content:
    """The preview of a dry run; when nothing would change, that is said once, with the reason."""
    plan = result.plan
    fit = plan.fit
    parts: list[str | tuple[str, str]] = []
    said = set()
    if not plan.changed:
        if fit is not None and not fit.fits:
            reason = f"nothing on the ladder fits {fit.target:,} tokens"
        elif fit is not None and fit.chosen and fit.chosen.startswith("already fits"):
            before = f"{plan.meter_before:,} tokens" if plan.meter_before is not None else "small enough"
            reason = (f"the next turn is {before}, already within the {fit.target:,} asked for; a smaller N, "
                      "or another choice above, would change something")
            said = {fit.chosen}
        elif fit is not None and fit.chosen:
            reason, said = fit.chosen.removesuffix("; nothing changed"), {fit.chosen}
        else:
            reason = "with these settings nothing in this session would change"
        parts.append((f"Nothing to trim: {safe_line(reason)}.", "$warning"))
    else:
        counts = plan.counts()
        if fit is not None:
            parts.append((f"Plan: {safe_line(fit.chosen)}\n", "bold"))
        if plan.meter_before is not None and plan.meter_after is not None:
            parts += [("Context  ", "bold"), f"{plan.meter_before:,} → {plan.meter_after:,} tokens\n"]
        parts += [("File     ", "bold"), f"{human_size(plan.size_before)} → {human_size(plan.size_after)}\n",
                  ("Turns    ", "bold"), f"{counts['capped']} shortened, {counts['folded']} condensed, "
                                         f"{counts['dropped']} removed; {counts['history_removed']} history "
                                         "entries removed\n",
                  ("Everything removed goes to the archive first; ctrl+z undoes it.", "$text-muted")]
    for note in plan.notes:
        if note not in said:
            parts.append((f"\nNote: {safe_text(note)}", "$warning"))
    return Content.assemble(*parts)


def what_goes(result: TrimResult) -> str:
    counts = result.plan.counts()
    said = [f"{counts[key]} {word}" for key, word in (("capped", "replies shortened"), ("folded", "turns condensed"),
                                                      ("dropped", "turns removed"),
                                                      ("history_removed", "history entries removed")) if counts[key]]
    return ", ".join(said) or "the changes"


def turn_label(turn: TurnSize) -> Content:
    return Content.assemble(f"{turn.number:>4}  ", one_line(turn.prompt, 34).ljust(34),
                            (f"  {human_size(turn.size):>8}  {turn.tokens:>7,} tok", "$text-muted"))


class TrimDialog(ReportsWorkerErrors, Dialog[TrimRequest | None]):
    DEFAULT_CSS = """
    TrimDialog > #dialog-frame { width: 84; }
    TrimDialog RadioSet, TrimDialog RadioSet:focus { width: 100%; border: none; padding: 0; }
    TrimDialog RadioSet:focus { background: $boost; }
    TrimDialog #trim-help { color: $text-muted; }
    TrimDialog #trim-turns { height: auto; max-height: 8; }
    TrimDialog #trim-preview { height: auto; min-height: 3; padding: 0 1; background: $panel; }
    """

    def __init__(self, service: Service, ref: SessionRef, title: str, window: int | None):
        self.title_text = title
        super().__init__(f"Trim {session_name(title)}")
        self.service = service
        self.ref = ref
        self.result: TrimResult | None = None
        # a source that forks and does not trim in place (Claude Code's files are never rewritten)
        self.fork_only = not service.can(ref.source, TrimmingInPlace)
        self.operations = {op.name: op for op in operations(window, fork_only=self.fork_only)}
        self.operation = "fit"
        self.turns: list[TurnSize] | None = None
        self.nothing_said = 0   # how many times the preview said "nothing to trim"
        self.asked: TrimOptions | None = None   # the options of the newest preview asked for
        self.defaulted = False   # the default ("fit") already fitted, so the dialog opened on "keep" instead
        self.preview = Debouncer[TrimOptions](self, PREVIEW_PAUSE, self._start_preview)

    @property
    def debouncing(self) -> bool:
        """A preview is waiting for a pause in typing (the tests wait for it)."""
        return self.preview.pending

    def body(self) -> Iterable[Widget]:
        with RadioSet(id="trim-operation"):
            for index, op in enumerate(self.operations.values()):
                yield RadioButton(op.label, value=index == 0, id=f"op-{op.name}")
        yield Static(self.operations["fit"].help, id="trim-help", markup=False)
        yield Input(self.operations["fit"].default, id="trim-value")
        turns = SelectionList[int](id="trim-turns")
        turns.display = False
        yield turns
        yield Static(Content("Computing the preview…"), id="trim-preview")

    def buttons(self) -> list[Choice]:
        if self.fork_only:
            return [Choice("cancel", "Cancel", "escape"), Choice("fork", "Apply as a new session", "enter", "primary")]
        return [Choice("cancel", "Cancel", "escape"), Choice("fork", "Apply as a new session"),
                Choice("apply", "Apply", "enter", "primary")]

    def on_mount(self) -> None:
        self.query_one("#trim-value", Input).focus()
        self._disable_apply()
        self.refresh_preview(at_once=True)
        self.load_turns()

    # --- the turns to tick -----------------------------------------------------------------

    @work(thread=True, exclusive=True, group="trim-turns", exit_on_error=False)
    def load_turns(self) -> None:
        try:
            turns = self.service.turn_sizes(self.ref)
        except RepriseError:
            return   # the preview reports what is wrong with the session
        self.app.call_from_thread(self._show_turns, turns)

    def _show_turns(self, turns: list[TurnSize]) -> None:
        self.turns = turns
        listed = self.query_one("#trim-turns", SelectionList)
        listed.clear_options()
        listed.add_options([(turn_label(turn), turn.number) for turn in turns])
        if self.operation == "drop":   # ranges typed before the turns were known are read now
            self._tick_from_field()
            self.refresh_preview()
        first = self.result   # the first preview came before the turns: the switch to keep is made now
        if first is not None and not first.plan.changed and self.nothing_said == 1:
            self.nothing_said = 0
            if not self._open_on_keep(first):
                self.nothing_said = 1

    def _ticked(self) -> list[int]:
        return sorted(self.query_one("#trim-turns", SelectionList).selected)

    def _tick_from_field(self) -> None:
        if self.turns is None:
            return
        try:
            wanted = parse_turn_ranges(self.query_one("#trim-value", Input).value, len(self.turns))
        except RepriseError:
            return
        if wanted == self._ticked():
            return
        listed = self.query_one("#trim-turns", SelectionList)
        with listed.prevent(SelectionList.SelectedChanged):
            listed.deselect_all()
            for number in wanted:
                listed.select(number)

    @on(SelectionList.SelectedChanged, "#trim-turns")
    def on_turns_ticked(self, _: SelectionList.SelectedChanged[int]) -> None:
        field = self.query_one("#trim-value", Input)
        ticked = self._ticked()
        try:
            typed = parse_turn_ranges(field.value, len(self.turns or ()))
        except RepriseError:
            typed = None
        if typed != ticked:
            field.value = turn_ranges(ticked)   # its Changed message runs the preview

    # --- the operation and its figure ------------------------------------------------------

    @on(RadioSet.Changed)
    def on_operation_changed(self, event: RadioSet.Changed) -> None:
        self.operation = (event.pressed.id or "").removeprefix("op-")
        op = self.operations[self.operation]
        self.query_one("#trim-help", Static).update(op.help)
        self.query_one("#trim-turns").display = self.operation == "drop"
        field = self.query_one("#trim-value", Input)
        field.placeholder = "turns to remove, e.g. 5-23, 30" if self.operation == "drop" else ""
        field.value = op.default
        field.focus()
        self.refresh_preview(at_once=True)

    @on(Input.Changed, "#trim-value")
    def on_value_changed(self, _: Input.Changed) -> None:
        if self.operation == "drop":   # ranges typed before the turns were known are read now
            self._tick_from_field()
            self.refresh_preview()
        first = self.result   # the first preview came before the turns: the switch to keep is made now
        if first is not None and not first.plan.changed and self.nothing_said == 1:
            self.nothing_said = 0
            if not self._open_on_keep(first):
                self.nothing_said = 1
        self.refresh_preview()

    @on(Input.Submitted, "#trim-value")
    def on_value_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_confirm()

    def current_options(self) -> TrimOptions | None:
        try:
            return options_for(self.operation, self.query_one("#trim-value", Input).value,
                               len(self.turns) if self.turns is not None else None)
        except (ValueError, RepriseError):
            return None

    def _why_no_options(self) -> str:
        value = self.query_one("#trim-value", Input).value
        if self.operation != "drop":
            return "Enter a whole number."
        try:
            options_for("drop", value, len(self.turns) if self.turns is not None else None)
        except RepriseError as exc:
            if value.strip():
                return safe_line(exc.message)
        return "Tick the turns to remove, or type their numbers (5-23, 30)."

    def _disable_apply(self) -> None:
        for button in self.query("#apply, #fork").results(Button):
            button.disabled = True

    def refresh_preview(self, *, at_once: bool = False) -> None:
        options = self.current_options()
        if options is not None and options == self.asked and not at_once:
            return   # the same figure, written another way ("5,6" for "5-6"): its preview stands
        self.asked = options
        self.result = None
        self._disable_apply()
        if options is None:
            self.preview.cancel()
            self.query_one("#trim-preview", Static).update(Content.styled(self._why_no_options(), "$warning"))
            return
        self.query_one("#trim-preview", Static).update(Content.styled("Computing the preview…", "$text-muted"))
        if at_once:
            self.preview.now(options)
        else:
            self.preview.poke(options)

    def _start_preview(self, options: TrimOptions, generation: int) -> None:
        self.compute_preview(options, generation)

    @work(thread=True, exclusive=True, group="trim-preview", exit_on_error=False)
    def compute_preview(self, options: TrimOptions, generation: int) -> None:
        try:
            result = self.service.trim(self.ref, options, dry_run=True, fork=self.fork_only)
        except RepriseError as exc:
            self.app.call_from_thread(self._show_error, str(exc), generation)
            return
        self.app.call_from_thread(self._show_preview, result, generation)

    def _show_error(self, message: str, generation: int) -> None:
        if self.preview.is_current(generation):
            self.query_one("#trim-preview", Static).update(Content.styled(safe_line(message), "$error"))

    def _show_preview(self, result: TrimResult, generation: int) -> None:
        if not self.preview.is_current(generation):
            return  # a newer figure was typed
        self.result = result
        changed = result.plan.changed
        if not changed and self._open_on_keep(result):
            return
        if not changed:
            self.nothing_said += 1
        self.query_one("#trim-preview", Static).update(preview_text(result))
        for button in self.query("#apply").results(Button):
            button.disabled = not changed
        self.query_one("#fork", Button).disabled = not changed

    def _open_on_keep(self, result: TrimResult) -> bool:
        """When the dialog's first preview (fit, at its default) says the session already fits, a fork's
        dialog switches to keeping the newest half of its turns, which does something visible, and says
        why; True when it switched."""
        fit = result.plan.fit
        if (self.defaulted or not self.fork_only or self.operation != "fit" or self.turns is None
                or len(self.turns) < 2 or fit is None or not fit.fits or self.nothing_said
                or self.query_one("#trim-value", Input).value != self.operations["fit"].default):
            return False
        self.defaulted = True
        keep = self.operations["keep"]
        why = f"The next turn already fits in {fit.target:,} tokens, so this offers to keep the newest turns. "
        self.operations["keep"] = Operation(keep.name, keep.label, why + keep.help, str(len(self.turns) // 2))
        self.query_one("#op-keep", RadioButton).value = True   # RadioSet.Changed runs the preview
        return True

    # --- applying ------------------------------------------------------------------------

    def chosen(self, choice_id: str) -> None:
        if choice_id == "cancel":
            self.dismiss(None)
            return
        result = self.result
        if result is None or not result.plan.changed:
            return
        request = TrimRequest(result.plan.options, choice_id == "fork", result.plan.original_digest)
        if request.fork:
            self.dismiss(request)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.dismiss(request)

        question = (f"Rewrite {session_name(self.title_text)} in place ({what_goes(result)})?\n\n"
                    "The file as it is now, and every part the trim removes, go to Reprise's archive before "
                    "anything is written; ctrl+z undoes the trim.")
        self.app.push_screen(ConfirmDialog(question, yes="Trim in place", title="Trim in place?"), answered)
