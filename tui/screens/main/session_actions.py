"""The main screen's actions on the current session and their dialogs: resume, new, rename, keep,
pin, trim, trash and undo, copy. Which keys work now (`check_action`) is decided here too; what
undo undoes is the service's policy (`Service.undo_step`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on, work
from textual.widgets import Input, TextArea

from reprise.core.errors import RepriseError
from reprise.core.paths import SessionRef
from reprise.core.problems import Problem
from reprise.core.rows import SessionRow
from reprise.core.service import ResumePlan
from reprise.core.sources.base import KeepReport
from reprise.core.sources.registry import id_argument
from reprise.core.sources.roles import Creator, Forking, Keeping, Sender, SessionWriter, Trashing, TrimmingInPlace
from reprise.core.trimming import TrimResult
from reprise.core.undo import FORKED, TRIMMED, UndoStep

from ...actions import PICK, SCREEN_MODES
from ...format import counted, human_size
from ...lazy import lazy_module
from ...text import safe_line, safe_text
from ...widgets.session_list import SessionList
from .base import Handoff, ScreenBase

if TYPE_CHECKING:
    from reprise.core.continuation import Continuation

    from .. import dialogs, trim
else:   # imported when a dialog first opens, not before the first frame
    dialogs = lazy_module("reprise.tui.screens.dialogs")
    trim = lazy_module("reprise.tui.screens.trim")

KEEP_DUE_DAYS = 7   # the palette's "keep every session due": what `reprise keep --due` keeps by default
# the actions that need a readable session; greyed on a row whose file or detail cannot be read
NEEDS_READABLE = frozenset({"resume", "pick", "trim", "rename", "pin", "keep", "copy_command", "continue_in"})
NEEDS_ROW = NEEDS_READABLE | {"delete", "copy_id"}
# the roles an action on the current row needs (any one of them); greyed on a row whose source has none
NEEDS_ROLE: dict[str, tuple[type, ...]] = {"trim": (Forking, TrimmingInPlace), "delete": (Trashing,),
                                           "keep": (Keeping,), "focus_composer": (Sender,)}


class SessionActionsPart(ScreenBase):
    """What the keys do to the current session."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """False hides a key (not in this mode), None greys it (this row cannot take it)."""
        if action == "wide":   # a footer copy of an action, shown on wide terminals only
            return False if self.narrow else self.check_action(str(parameters[0]), ())
        modes = SCREEN_MODES.get(action)
        if modes is not None and self.interaction_mode not in modes:
            return False
        return self.available(action)

    def available(self, action: str) -> bool | None:
        """Whether the action can run now, whatever the mode (the palette asks this): False where it
        never can, None while the current row cannot take it."""
        modes = SCREEN_MODES.get(action)
        if self.mode == "pick" and modes is not None and PICK not in modes:
            return False   # the picker only picks
        focused = self.focused
        if action == "focus_composer" and (
                isinstance(focused, Input) or (isinstance(focused, TextArea) and not focused.read_only)):
            return False   # a priority key: in a field one types in, Tab is the field's
        if action in ("cycle_agent", "toggle_agent_hidden"):
            return len(self.service.sources) > 1
        if action == "keep_due":
            return bool(self.service.sources_with(Keeping))
        if action == "new":
            return bool(self.service.sources_with(Creator))
        if action == "continue_in" and self.current_row is not None and not self._continue_targets():
            return None   # no other enabled agent takes a session written from this one's
        if action == "restore_draft":
            return bool(self.cleared_draft) or None
        if action in NEEDS_ROW:
            row = self.current_row
            if row is None or (action in NEEDS_READABLE and (row.problem_code or self.detail_failed)):
                return None
        roles = NEEDS_ROLE.get(action)
        if roles is not None:
            row = self.current_row
            if row is not None and not any(self.service.can(row.source, role) for role in roles):
                return None   # the detail says why (`SessionDetail.refused`)
        return True

    def current_ref(self) -> SessionRef | None:
        row = self.query_one(SessionList).current
        return row.ref if row is not None and not row.problem_code else None

    def action_resume(self) -> None:
        if self.focused is not None and not isinstance(self.focused, SessionList):
            return
        ref = self.current_ref()
        if ref is None:
            return
        if self.mode == "pick":
            self.action_pick()
            return
        self.plan_resume(ref)

    async def action_wide(self, action: str) -> None:
        await self.run_action(action)

    @work(thread=True, exclusive=True, group="resume", exit_on_error=False)
    def plan_resume(self, ref: SessionRef) -> None:
        try:
            plan = self.service.resume_plan(ref)
        except RepriseError as exc:
            self.app.call_from_thread(self.reprise_app.report_error, exc)
            return
        self.app.call_from_thread(self._confirm_resume, plan)

    def _confirm_resume(self, plan: ResumePlan) -> None:
        handoff = Handoff(plan.argv, plan.cwd, plan.notes)
        if self.reprise_app.demo:
            self.app.push_screen(dialogs.CommandDialog(
                "What Enter would run", "This is the demo: nothing is run. Outside it, Enter hands the terminal "
                "to the session's agent with this command, in the session's folder:", plan.argv, plan.cwd,
                plan.notes))
            return
        if plan.program_missing is not None:
            missing = plan.program_missing
            self.app.push_screen(dialogs.CommandDialog(
                f"{plan.argv[0]} is not installed", f"{missing.message} To resume the session, {missing.hint}; "
                "or copy the command and run it where the agent is:", plan.argv, plan.cwd, plan.notes))
            return
        if not plan.over_window and plan.writer is None:
            self.app.exit(handoff)
            return
        worries = []
        if plan.writer is not None:
            worries.append(f"This session may be being written by its agent now ({safe_line(plan.writer)}): "
                           "resuming it as well would interleave two conversations in one file.")
        result = plan.meter
        if plan.over_window and result is not None:
            worries.append(f"This session's next turn would send {result.total:,} tokens, over the "
                           f"{result.window:,}-token window of {safe_line(result.model)}. "
                           f"Trimming it first (ctrl+t) keeps everything in the archive.")
        question = "\n\n".join(worries) + "\n\nResume anyway?"

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.exit(handoff)

        self.app.push_screen(dialogs.ConfirmDialog(question, yes="Resume anyway", danger=True), answered)

    @on(SessionList.Selected)
    def on_selected(self, _: SessionList.Selected) -> None:
        self.action_resume()

    def action_new(self) -> None:
        """A new session; which agent's is asked when more than one can start one."""
        able = [source for source in self.service.sources.values() if Creator in source.roles]
        if not able:
            self.app.notify("None of the agents Reprise reads can start a session here.", severity="warning")
            return
        if len(able) == 1:
            self._new_titled(able[0].name)
            return

        def chosen(name: str | None) -> None:
            if name is not None:
                self._new_titled(name)

        self.app.push_screen(dialogs.ChoiceDialog("A new session of which agent?",
                                          [(source.name, source.label) for source in able]), chosen)

    def _new_titled(self, agent: str) -> None:
        def create(title: str | None) -> None:
            if title is not None:
                self.run_service(lambda: self.service.new_session(title or None, source=agent), self._started)

        self.app.push_screen(dialogs.TextDialog("Title of the new session (optional):", placeholder="untitled"),
                             create)

    def _started(self, ref: SessionRef) -> None:
        """Fractal's new session is written: select it. Any other agent writes its own on its first
        turn: hand the terminal to it (the command line runs it, as for a resume)."""
        argv = self.service.new_argv(ref)
        if argv is None:
            self.app.notify("New session created")
            self.load_rows(select=self.service.session_path(ref))
            return
        label = self.service.source(ref).label
        self.app.exit(Handoff(argv, str(self.service.workspace), [], said=[f"new {label} session {ref.session_id}"]))

    def action_rename(self) -> None:
        ref = self.current_ref()
        row = self.query_one(SessionList).current
        if ref is None or row is None:
            return

        def rename(title: str | None) -> None:
            if title is not None:
                self.run_service(lambda: self.service.rename(ref, title), lambda _: self.reload_current(row.path),
                                 "Renamed")   # the preview's title too, not only the row's

        note = self.service.source(ref).rename_note
        self.app.push_screen(dialogs.TextDialog(f"New title:{f' ({note})' if note else ''}", value=row.title or ""),
                             rename)

    def action_keep(self) -> None:
        ref = self.current_ref()
        if ref is None:
            return
        self.run_service(lambda: self.service.keep(ref), lambda _: self.load_rows(),
                         "Kept a copy in Reprise's archive")

    def action_keep_due(self) -> None:
        """Every session its agent deletes within a week, counted and sized in a question first."""
        def ask(due: list[SessionRow]) -> None:
            if not due:
                self.app.notify(f"No session is deleted by its agent within {KEEP_DUE_DAYS} days.")
                return
            agents = " and ".join(sorted({self.service.sources[row.source].label for row in due}))
            question = (f"Keep a copy of {counted(len(due), 'session')} "
                        f"({human_size(sum(row.size for row in due))}) that {agents} deletes within "
                        f"{KEEP_DUE_DAYS} days, in every folder?")

            def answered(yes: bool | None) -> None:
                if yes:
                    self.run_service(lambda: self.service.keep_due(due), kept)

            self.app.push_screen(dialogs.ConfirmDialog(question, yes="Keep them", title="Keep"), answered)

        def kept(result: tuple[list[KeepReport], list[Problem]]) -> None:
            reports, problems = result
            self.load_rows()
            message = f"Kept {counted(len(reports), 'session')} in Reprise's archive"
            if problems:
                message += f"; {len(problems):,} could not be kept: {safe_line(problems[0].message)}"
            self.app.notify(message, severity="warning" if problems else "information", markup=False)

        self.run_service(lambda: self.service.due(KEEP_DUE_DAYS), ask)

    def action_pin(self) -> None:
        ref = self.current_ref()
        row = self.query_one(SessionList).current
        if ref is None or row is None:
            return
        pinned = not row.pinned
        self.run_service(lambda: self.service.set_pinned(ref, pinned), lambda _: self.load_rows(),
                         "Pinned" if pinned else "Unpinned")

    def action_trim(self) -> None:
        ref = self.current_ref()
        row = self.query_one(SessionList).current
        if ref is None or row is None:
            return
        window = self.detail_window

        def chosen(request: trim.TrimRequest | None) -> None:
            if request is None:
                return
            self.run_service(lambda: self.service.trim(ref, request.options, fork=request.fork,
                                                       expected_sha256=request.original_sha256),
                             self._after_trim)

        self.app.push_screen(trim.TrimDialog(self.service, ref, row.display_title, window), chosen)

    def _continue_targets(self) -> list[tuple[str, str]]:
        """(name, label) of each enabled agent the current session can be continued in."""
        row = self.current_row
        return [(source.name, source.label) for source in self.service.sources.values()
                if SessionWriter in source.roles and row is not None and source.name != row.source]

    def action_continue_in(self) -> None:
        """Continue the session in another agent: which one, then a preview of what would be written,
        then the new session, selected."""
        ref = self.current_ref()
        targets = self._continue_targets()
        if ref is None or not targets:
            return

        def chosen(name: str | None) -> None:
            if name is not None:
                ways = [("history", "With its whole history, as a new session of that agent"),
                        ("brief", "With a brief of it (without any model; shown and editable first)")]
                detail = self.detail
                if detail is not None and detail.ref == ref and any(
                        link.direction == "in" and link.how == "continued" and link.source == name
                        for link in detail.links):   # continued there before: the next one goes on top of it
                    ways[0] = ("history", "With the turns since the last continuation there, on top of it")
                    ways.insert(1, ("fresh", "With its whole history again, from its first turn"))
                label = dict(targets)[name]
                self.app.push_screen(dialogs.ChoiceDialog(f"Continue in {label} with what?", ways),
                                     lambda way: how(name, way))

        def how(name: str, way: str | None) -> None:
            if way in ("history", "fresh"):
                fresh = way == "fresh"
                self.run_service(lambda: self.service.continue_in(ref, name, dry_run=True, fresh=fresh),
                                 lambda planned: self._confirm_continue(ref, name, planned, fresh=fresh))
            elif way == "brief":
                self.run_service(lambda: self.service.continue_in(ref, name, dry_run=True, brief=True),
                                 lambda planned: self._edit_brief(ref, name, planned))

        self.app.push_screen(dialogs.ChoiceDialog("Continue this session in which agent?", targets), chosen)

    def _edit_brief(self, ref: SessionRef, name: str, planned: Continuation) -> None:
        made = planned.brief
        if made is None:
            return
        left = f"; left out: {'; '.join(made.left_out)}" if made.left_out else ""
        facts = (f"{made.tokens:,} of {made.budget:,} tokens, {counted(made.turns, 'turn')} covered{left}. "
                 "It becomes the first "
                 f"message of a new {planned.target_label} session; the {planned.source_label} session is not changed.")

        def edited(text: str | None) -> None:
            if text is not None and text.strip():
                self.run_service(lambda: self.service.continue_in(ref, name, brief_text=text), self._continued)

        self.app.push_screen(dialogs.BriefDialog(f"Brief for {planned.target_label}", made.text, facts), edited)

    def _confirm_continue(self, ref: SessionRef, name: str, planned: Continuation, *, fresh: bool = False) -> None:
        written = planned.written
        lines = [f"Write its {counted(written.turns, 'turn')} as a new {planned.target_label} session "
                 f"({human_size(len(written.data))}) in {safe_line(str(written.path.parent))}?",
                 f"The {planned.source_label} session is not changed; ctrl+z on the new one moves it to the trash."]
        lines += [f"• {safe_line(note)}" for note in written.notes]

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_service(lambda: self.service.continue_in(ref, name, fresh=fresh), self._continued)

        self.app.push_screen(dialogs.ConfirmDialog("\n".join(lines), yes="Continue", title="Continue in another agent"),
                             answered)

    def _continued(self, result: Continuation) -> None:
        new = result.written.ref
        fits = ""
        if result.context_tokens is not None:
            window = f" of {result.context_window:,}" if result.context_window is not None else ""
            fits = f"; next turn {result.context_tokens:,} tokens{window}" + (
                " — over the window: trim it (ctrl+t), or undo it (ctrl+z) and continue with a brief"
                if result.over_window else "")
        self.app.notify(f"Continued in {result.target_label} as {new.session_id}{fits}. Enter resumes it.",
                        markup=False, severity="warning" if result.over_window else "information")
        self.load_rows(select=str(result.written.path))

    def _after_trim(self, result: TrimResult) -> None:
        plan = result.plan
        where = " as a new session" if result.forked else ""
        before = f"{plan.meter_before:,}" if plan.meter_before is not None else "?"
        after = f"{plan.meter_after:,}" if plan.meter_after is not None else "?"
        undo = "ctrl+z moves the new session to the trash" if result.forked else "ctrl+z undoes it"
        self.app.notify(f"Trimmed{where}: {before} → {after} tokens. {undo}.", markup=False)
        self.reload_current(self.service.session_path(result.ref))

    def action_undo(self) -> None:
        """Undo the last trim or move to the trash (`Service.undo_step` decides which), after a question."""
        ref, scope_all = self.current_ref(), self.scope_all
        row = self.query_one(SessionList).current
        title = row.display_title if row is not None else None
        self.run_service(lambda: self.service.undo_step(ref, title, all_workspaces=scope_all), self._confirm_undo)

    def _confirm_undo(self, step: UndoStep | None) -> None:
        if step is None:
            self.app.notify("Nothing to undo: this session has no trim and the trash is empty.")
            return
        name, ref = dialogs.session_name(step.title), step.ref
        if step.kind == FORKED:
            question = (f"Undo the trim that made {name} by moving it to Reprise's trash? The session it was "
                        "trimmed from is unchanged, and the trash can bring this one back "
                        f"(`reprise trash restore {safe_line(id_argument(ref.source, ref.session_id))}`)."
                        + ("\n\nIt has grown since Reprise wrote it: its new turns go to the trash with it."
                           if step.grown else ""))
            done, yes = "The trimmed copy is in the trash.", "Move to trash"
        elif step.kind == TRIMMED:
            question = f"Undo the last trim of {name}? What it removed comes back from the archive."
            done, yes = "Trim undone.", "Undo the trim"
        else:
            question = f"Restore {name} from the trash?"
            done, yes = "Restored from the trash.", "Restore"

        def answered(answer: bool | None) -> None:
            if answer:
                path = self.service.session_path(ref)
                self.run_service(lambda: self.service.undo(step), lambda notes: self._after_undo(path, notes), done)

        self.app.push_screen(dialogs.ConfirmDialog(question, yes=yes, title="Undo"), answered)

    def _after_undo(self, path: str, notes: list[str]) -> None:
        for note in notes:  # e.g. history beyond what Fractal keeps, and where it is archived
            self.app.notify(safe_text(note), severity="warning", timeout=15, markup=False)
        self.reload_current(path)

    def action_delete(self) -> None:
        row = self.query_one(SessionList).current
        ref = row.ref if row is not None else None
        if ref is None or row is None:
            return
        question = (f"Move {self.describe(row)} to the trash?\n\nIt can be restored with ctrl+z, or with "
                    f"`reprise trash restore {safe_line(id_argument(ref.source, ref.session_id))}`.")
        note = self.service.source(ref).trash_note   # what the agent does meanwhile (Codex cannot resume it)
        if note:
            question += f"\n\n{note}."

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_service(lambda: self.service.remove(ref, title=row.display_title),
                                 lambda _: self._after_delete(row.display_title, note))

        self.app.push_screen(dialogs.ConfirmDialog(question, yes="Move to trash", danger=True), answered)

    def _after_delete(self, title: str, note: str | None = None) -> None:
        """Say what moved (by title) and, for an agent that does something about it, what it does."""
        self.app.notify(f"Moved {dialogs.session_name(title, 40)} to the trash. ctrl+z undoes it.", markup=False)
        if note:
            self.app.notify(f"{note}.", severity="warning", timeout=12, markup=False)
        self.load_rows()


    # --- copying ---------------------------------------------------------------------------

    def action_copy_id(self) -> None:
        row = self.current_row
        if row is not None:
            self.copy(row.id, "the id")

    def action_copy_command(self) -> None:
        """The command `reprise pick --command` prints: `cd DIR && ARGV`."""
        ref = self.current_ref()
        if ref is not None:
            self.run_service(lambda: self.service.resume_plan(ref, for_exec=False),
                             lambda plan: self.copy(plan.command_line, "the resume command"))

    def copy(self, text: str, what: str) -> None:
        """OSC 52, and the text shown: no terminal answers whether the clipboard took it."""
        self.app.copy_to_clipboard(text)
        self.app.notify(f"Copied {what}: {safe_line(text)}", title="Clipboard", markup=False, timeout=8)


    def action_recover(self) -> None:
        ref = self.current_ref()
        if ref is None:
            return
        self.run_service(lambda: self.service.mark_stale_interrupted(ref),
                         lambda marked: self._after_recover(marked))

    def _after_recover(self, marked: list[str]) -> None:
        self.app.notify(f"Marked {counted(len(marked), 'stale turn')} interrupted." if marked
                        else "No stale pending turn.")
        self.load_rows()
        row = self.query_one(SessionList).current
        if row is not None:
            self.load_detail(row)


    def describe(self, row: SessionRow) -> str:
        return f"{dialogs.session_name(row.display_title, 60)} ({counted(row.turns, 'turn')}, {human_size(row.size)})"
