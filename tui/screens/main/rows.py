"""The main screen's list: the rows in scope (listed in a worker, redrawn only when they change),
the filter typed on the list, the sort, the agent, the folder or all folders, and the resume
costs filled in the background."""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events, on, work
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from reprise.core import faults
from reprise.core.errors import RepriseError
from reprise.core.rows import SessionRow
from reprise.core.search_index import SearchHit
from reprise.core.service import SORTS, WorkspaceInfo, sort_key, sort_rows
from reprise.core.sources.registry import spec_of

from ...columns import unmapped_folder_name
from ...messages import CostsFilled, FilesRead, RowsLoaded, RowsRead
from ...text import safe_line, safe_text
from ...widgets.detail import DetailPane, Landing
from ...widgets.filter_prompt import FilterPrompt
from ...widgets.session_list import SessionList
from .base import ScreenBase

if TYPE_CHECKING:
    from reprise.core.progress import Progress

REFRESH_SECONDS = 1.0
ROWS_READ_SECONDS = 0.2   # rows read while a listing goes on are shown at most this often


def matches(row: SessionRow, needle: str) -> bool:
    """The list's filter: title, first and last message, the folder's name (its last part: the path
    above it, `/home/ada`, would match every row; for a folder the agent's map does not name, the
    name the FOLDER column shows), git branch, or id prefix."""
    needle = needle.lower()
    folder = row.folder.rsplit("/", 1)[-1] if row.folder is not None else unmapped_folder_name(row) or ""
    return (row.id.startswith(needle) or needle in (row.title or row.fields.agent_title or "").lower()
            or needle in row.fields.first_message.lower() or needle in row.fields.last_message.lower()
            or needle in (row.fields.branch or "").lower() or needle in folder.lower()
            or (row.problem_message is not None and needle in row.problem_message.lower()))


WORD_START = re.compile(r"\w+")


def match_rank(row: SessionRow, needle: str) -> int:
    """How well a row that passes the filter matches it, best first: its title starts with the text
    (0), a word of its title does (1), the title holds it (2), its id starts with it (3), its git
    branch holds it (4), else its messages or its folder hold it (5). The best-ranked row is
    selected; a tie goes to the higher row."""
    needle = needle.lower()
    title = row.display_title.lower()
    if title.startswith(needle):
        return 0
    if any(title.startswith(needle, word.start()) for word in WORD_START.finditer(title)):
        return 1
    if needle in title:
        return 2
    if row.id.startswith(needle):
        return 3
    return 4 if needle in (row.fields.branch or "").lower() else 5


class RowsPart(ScreenBase):
    """The list's rows and what chooses them."""

    def _refresh_tick(self) -> None:
        if not any(w.group == "rows" and w.is_running for w in self.workers):
            self.load_rows()

    def load_rows(self, select: str | None = None) -> None:
        """List in a worker; read every row's details there too, so filtering and drawing on the UI
        thread never touch the catalog. `select` is the path to select once listed."""
        self._load_rows(select)

    @work(thread=True, exclusive=True, group="rows", exit_on_error=False)
    def _load_rows(self, select: str | None) -> None:
        scope_all, scope_key = self.scope_all, self.scope_key
        faults.point("tui_load_rows")
        first_frame: list[SessionRow] = []
        try:
            if not self.loaded_once:   # the rows as stored, shown while the disk is looked at
                first_frame = self._stored_rows(scope_all, scope_key)
            listing = self.service.list_sessions(all_workspaces=scope_all, key=scope_key,
                                                 rows_read=self._rows_reader((scope_all, scope_key)))
            key = scope_key or self.service.workspace_key
            where = "all workspaces" if scope_all else f"workspace {self.service.workspace_path_of(key)[0] or key}"
        except RepriseError as exc:
            self.app.call_from_thread(self.reprise_app.report_error, exc)
            return
        for note in self.service.take_notices():  # the catalog was rebuilt or bypassed
            self.app.call_from_thread(self.app.notify, safe_text(note), severity="warning", timeout=10, markup=False)
        # Resume costs are not part of what changed: while the fill stores them, every refresh would
        # otherwise read all the rows' details again, redraw the list and restart the fill.
        signature = (scope_all, scope_key, tuple((row.path, row.size, row.mtime_ns, row.title, row.pinned)
                                                 for row in listing.rows))
        if signature != self.rows_signature or select is not None:
            if first_frame:   # the details of the files as they were stored are known already
                known = {(row.path, row.size, row.mtime_ns): row.details for row in first_frame}
                for row in listing.rows:
                    row.details = known.get((row.path, row.size, row.mtime_ns), row.details)
            self.service.load_details(listing.rows)
        else:  # the same rows: take the figures another process (`reprise list --sort cost`) stored
            stored = {row.path: row for row in listing.rows if row.resume_cost is not None}
            for row in self.all_rows:
                found = stored.get(row.path)
                if row.resume_cost is None and found is not None:
                    row.resume_cost, row.resume_cost_key = found.resume_cost, found.resume_cost_key
        swept = listing.kept_before_sweep
        self.post_message(RowsLoaded(listing.rows, where, signature, select, len(swept.kept) if swept else 0))

    def show_first_rows(self) -> bool:
        """At mount: the rows read since the process started (`FirstRows`), when the read has ended
        already, go into the screen's first frame (True); else the listing's worker waits for them."""
        first = self.reprise_app.first_rows
        if first is None or not first.ready() or self.loaded_once or self.scope_all or self.scope_key is not None:
            return False
        try:
            rows = first.rows()
        except Exception:   # noqa: BLE001 - the listing's worker takes them again and reports it
            return False
        self.reprise_app.first_rows = None
        self.first_shown = rows
        self._add_read_rows(rows, None)
        return True

    def _stored_rows(self, scope_all: bool, scope_key: str | None) -> list[SessionRow]:
        """In the listing's worker: the first frame's rows, posted unless drawn at mount already (the
        rows read since the process started, of the workspace, else the catalog's stored rows now)."""
        shown, self.first_shown = self.first_shown, None
        if shown is not None:
            return shown
        ahead, self.reprise_app.first_rows = self.reprise_app.first_rows, None
        if ahead is not None and not scope_all and scope_key is None:
            rows = ahead.rows()
        else:
            rows = self.service.stored_rows(all_workspaces=scope_all, key=scope_key)
        if rows:
            self.post_message(RowsRead(rows, (scope_all, scope_key)))
        return rows

    def _rows_reader(self, scope: tuple[bool, str | None]) -> Callable[[list[SessionRow]], None]:
        """What hears the rows a listing reads, in the worker that lists: their folders and windows
        marked there, posted at once the first time, then at most every ROWS_READ_SECONDS (what is
        left when the listing ends comes with it)."""
        worker = get_current_worker()
        pending: list[SessionRow] = []
        posted = [0.0]

        def heard(rows: list[SessionRow]) -> None:
            pending.extend(rows)
            now = time.monotonic()
            if worker.is_cancelled or (posted[0] and now - posted[0] < ROWS_READ_SECONDS):
                return
            posted[0] = now
            self.service.mark_folders_and_limits(pending)
            self.post_message(RowsRead(list(pending), scope, self._read_so_far))
            pending.clear()

        return heard

    def on_rows_read(self, message: RowsRead) -> None:
        """Rows read while the listing goes on: added to those shown (the same session's row replaced),
        the filter and sort kept, and the cursor: on the first row it stays on the first row (newer
        sessions come in above), elsewhere it stays on its session."""
        if not self.rows_loading or message.scope != (self.scope_all, self.scope_key):
            return   # the listing has ended, or the scope changed since
        self._add_read_rows(message.rows, message.progress)

    def _add_read_rows(self, rows: list[SessionRow], progress: Progress | None) -> None:
        """Rows read (or stored) added to the list as `on_rows_read` says."""
        session_list = self.query_one(SessionList)
        at_top = session_list.cursor == 0
        by_path = {row.path: row for row in self.all_rows}
        by_path.update((row.path, row) for row in rows)
        self.all_rows = list(by_path.values())
        self.hidden_count = sum(1 for row in self.all_rows if row.hidden_by_agent)
        self.problem_count = sum(1 for row in self.all_rows if row.problem_code)
        self.rows_streamed = True
        if progress is not None:   # how far the read is, as of these rows
            self.read_progress = FilesRead(progress).label
        self.apply_view()
        if at_top:
            session_list.move_to(0)
        if self.all_rows:
            self.hide_empty_state()

    def _files_read(self, progress: Progress) -> None:
        """The catalog's progress, heard in the worker that reads: posted at most ten times a second
        (the rows read come with the newest)."""
        self._read_so_far = progress
        now = time.monotonic()
        if progress.finished or now - self._progress_posted >= 0.1:
            self._progress_posted = now
            self.post_message(FilesRead(progress))

    def on_files_read(self, message: FilesRead) -> None:
        self.read_progress = message.label
        self.update_header()

    def on_rows_loaded(self, message: RowsLoaded) -> None:
        self.rows_loading = False
        self.read_progress = None
        self.kept_before_sweep += message.kept
        self.scope_where = message.where
        streamed, self.rows_streamed = self.rows_streamed, False
        if message.signature == self.rows_signature and message.select is None and not streamed:
            self.update_header()
            return  # nothing changed on disk: keep the rows already drawn
        self.rows_signature = message.signature
        self.hidden_count = sum(1 for row in message.rows if row.hidden_by_agent)
        self.problem_count = sum(1 for row in message.rows if row.problem_code)
        session_list = self.query_one(SessionList)
        previous = {row.path: row for row in self.all_rows}
        self.all_rows = message.rows
        changed_current = False
        current = session_list.current
        if current is not None:
            fresh = next((row for row in message.rows if row.path == current.path), None)
            changed_current = fresh is not None and (fresh.size, fresh.mtime_ns) != (current.size, current.mtime_ns)
        for row in self.all_rows:  # keep costs computed since the last refresh
            old = previous.get(row.path)
            if (old is not None and row.resume_cost is None and old.resume_cost is not None
                    and (old.size, old.mtime_ns) == (row.size, row.mtime_ns)):
                row.resume_cost, row.resume_cost_key = old.resume_cost, old.resume_cost_key
        at_top = streamed and message.select is None and session_list.cursor == 0
        self.apply_view(select=message.select)
        if at_top:   # as while the rows were read: the first row stays selected
            session_list.move_to(0)
        if changed_current and session_list.current is not None:
            self.load_detail(session_list.current)
        if not self.all_rows:
            self.show_empty_state()
        else:
            self.hide_empty_state()
        self.loaded_once = True
        if any(row.resume_cost is None and not row.problem_code for row in self.all_rows):
            self.fill_costs(list(self.all_rows), self.query_one(SessionList).current_path)
        if not self.frozen_once:
            # One decision: freeze once, after the first listing is drawn. What exists then (modules,
            # Textual's widgets, the first rows) mostly lives until exit, and full collections stop
            # walking it while typing (2,000 rows with the app imported: 71k tracked objects, a full
            # collection 47 ms, 0 ms frozen). Frozen rows a later listing drops are still freed by
            # their reference counts. It used to run on every row change and was never undone, so
            # every listing's cycles were kept for good; later listings are now collected as usual.
            self.frozen_once = True
            self.call_after_refresh(gc.freeze)

    def apply_view(self, *, select: str | None = None, best_match: bool = False) -> None:
        """Filter and sort the rows in scope into the list; with `best_match`, select the row that
        matches the filter best (`match_rank`)."""
        wanted = self.filter_text
        rows = [row for row in self.all_rows if matches(row, wanted)] if wanted else list(self.all_rows)
        if self.agent_filter:
            rows = [row for row in rows if row.source == self.agent_filter]
        if self.hide_agent_hidden:
            rows = [row for row in rows if not row.hidden_by_agent]
        sort_rows(rows, self.sort, reverse=self.sort_reverse)
        if best_match and wanted and rows and select is None:
            select = min(rows, key=lambda row: match_rank(row, wanted)).path   # min keeps the first of a tie
        session_list = self.query_one(SessionList)
        session_list.show_agent = len(self.service.sources) > 1
        session_list.set_rows(rows, keep=select)
        self.update_header()

    def watch_filter_text(self) -> None:
        if self.is_mounted:
            self.apply_view(best_match=True)

    def watch_sort(self) -> None:
        self._sorted_anew()

    def watch_sort_reverse(self) -> None:
        self._sorted_anew()

    def _sorted_anew(self) -> None:
        """A new sort shows its top: the first row is selected, as in the agents' pickers."""
        if self.is_mounted:
            self.apply_view()
            self.query_one(SessionList).move_to(0)

    def watch_agent_filter(self) -> None:
        if self.is_mounted:
            self.apply_view()

    def watch_hide_agent_hidden(self) -> None:
        if self.is_mounted:
            self.apply_view()

    def watch_rows_loading(self, loading: bool) -> None:
        if loading:
            self.read_progress = None   # none left over from a search's indexing that was stopped
        if self.is_mounted:
            self.update_header()

    def show_empty_state(self) -> None:
        """No session in scope at all: the list's place says what to do, naming every agent read
        (and no preview tabs of nothing)."""
        labels = [source.label for source in self.service.sources.values()]
        agents = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + f" and {labels[-1]}"
        can_start = any(source.capabilities.new for source in self.service.sources.values())
        text = ("No sessions here yet.\n\n"
                + (f"ctrl+o starts a new session in {safe_line(self.service.workspace)}. " if can_start else "")
                + f"ctrl+a looks in all folders. Reprise lists the sessions of {agents}: run one of them in a "
                "project folder and its sessions appear here.\n\n"
                + "".join(f"{line} " for line in self._where_sessions_live())
                + "`reprise --demo` gives a tour on a store of examples.")
        empty = self.query_one("#empty-state", Static)
        empty.update(Text(text))
        for widget in (self.query_one("#columns"), self.query_one(SessionList), self.query_one(DetailPane)):
            widget.display = False
        empty.display = True

    def _where_sessions_live(self) -> list[str]:
        """Each source's sentence of where its sessions are (its spec's `where_sessions_live`, `{root}`
        standing for its store's first root), for the sources that say it."""
        lines = []
        for name in self.service.sources:
            spec, choice = spec_of(name), self.service.loaded.choices.get(name)
            if spec is not None and spec.where_sessions_live and choice is not None and choice.roots:
                lines.append(spec.where_sessions_live.replace("{root}", safe_line(str(choice.roots[0]))))
        return lines

    def hide_empty_state(self) -> None:
        empty = self.query_one("#empty-state", Static)
        if empty.display:
            empty.display = False
            session_list = self.query_one(SessionList)
            self.query_one("#columns").display = session_list.display = True
            self.query_one(DetailPane).display = self.preview_shown
            if self.focused is None:
                self.set_focus(session_list)

    def fill_costs(self, rows: list[SessionRow], current: str | None) -> None:
        """Fill the missing resume costs in a worker started once the rows are painted: the rows on
        screen first (the current one ahead), then the rest of the list, then the rows a filter hides."""
        session_list = self.query_one(SessionList)
        top = int(session_list.scroll_offset.y)
        shown = session_list.rows
        on_screen = shown[top:top + max(session_list.size.height, 1)]
        first = [row for row in on_screen if row.path == current] + on_screen + shown

        def fill() -> None:
            worker = get_current_worker()
            self.service.fill_resume_costs(rows, first=first, should_stop=lambda: worker.is_cancelled,
                                           progress=lambda progress: self.post_message(CostsFilled(progress)))
            self.post_message(CostsFilled(None))

        # After the next paint: the fill's first step loads the tokenizer, which holds the GIL for a
        # while; the rows it was started for are drawn first.
        self.call_after_refresh(self.run_worker, fill, thread=True, exclusive=True, group="costs",
                                exit_on_error=False)

    def on_costs_filled(self, message: CostsFilled) -> None:
        self.costs_progress = message.label
        self.update_header()
        self.query_one(SessionList).refresh()


    # --- the filter: what is typed on the list --------------------------------------------

    def on_key(self, event: events.Key) -> None:
        """On the list, a printable character goes to the filter (shown once it holds one) and
        Backspace edits it: fzf's and the agents' pickers' habit. The list keeps the focus, so the
        keys of the table work while a filter is typed. The picker's prompt has the focus instead."""
        if self.mode == "pick" or not isinstance(self.focused, SessionList):
            return
        field = self.query_one("#filter", Input)
        if event.is_printable and event.character:
            self.type_into_filter(field.value + event.character)
        elif event.key == "backspace" and field.value:
            self.type_into_filter(field.value[:-1])
        else:
            return
        event.stop()
        event.prevent_default()

    def on_paste(self, event: events.Paste) -> None:
        """Pasted on the list, the first line goes to the filter."""
        if self.mode != "pick" and isinstance(self.focused, SessionList) and event.text.strip():
            event.stop()
            field = self.query_one("#filter", Input)
            self.type_into_filter(field.value + event.text.strip().splitlines()[0])

    def type_into_filter(self, value: str) -> None:
        field = self.query_one("#filter", Input)
        field.display = bool(value)
        field.value = value
        field.cursor_position = len(value)
        self.filter_text = value.strip()   # at once: the next key's action (Enter) sees the filtered list

    @on(Input.Changed, "#filter")
    def on_filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()

    @on(Input.Submitted, "#filter")
    def on_filter_submitted(self, _: Input.Submitted) -> None:
        if self.mode == "pick":
            self.action_pick()

    @on(FilterPrompt.Move)
    def on_filter_move(self, message: FilterPrompt.Move) -> None:
        session_list = self.query_one(SessionList)
        if message.ends:
            session_list.move_to(0 if message.ends < 0 else len(session_list.rows) - 1)
            return
        page = max(session_list.size.height - 1, 1)
        session_list.move_to(session_list.cursor + message.rows + message.pages * page)

    def action_back(self) -> None:
        """Esc on the list: the filter is cleared; on an empty one, nothing happens."""
        if self.query_one("#filter", Input).value:
            self.type_into_filter("")

    def action_cancel(self) -> None:
        """Esc in the picker: a filter is cleared first, then the picker is left with nothing picked."""
        field = self.query_one("#filter", Input)
        if field.value:
            field.value = ""
            self.set_focus(field)
            return
        self.app.exit(None)


    def action_toggle_scope(self) -> None:
        self.workers.cancel_group(self, "costs")
        self.scope_all = not self.scope_all
        self.scope_key = None
        self.scope_where = "all workspaces" if self.scope_all else f"workspace {self.service.workspace}"
        self.rows_loading = True
        self.load_rows()
        self.update_header()

    def action_cycle_sort(self, flip: bool = False) -> None:
        """The next sort, largest or newest first; after the last, each again reversed. With
        `flip`, the same sort the other way round. The watchers apply the view."""
        if flip:
            self.sort_reverse = not self.sort_reverse
            return
        position = SORTS.index(sort_key(self.sort)) + 1
        if position == len(SORTS):
            position = 0
            self.set_reactive(ScreenBase.sort_reverse, not self.sort_reverse)
        self.sort = SORTS[position]

    def action_cycle_agent(self) -> None:
        """Every agent's sessions, then each agent's in turn: those with a session in view (all of them
        before any row is read), so no press lands on an empty list."""
        present = {row.source for row in self.all_rows}
        names = [None, *(name for name in self.service.sources
                         if not present or name in present or name == self.agent_filter)]
        self.agent_filter = names[(names.index(self.agent_filter) + 1) % len(names)]

    def action_toggle_agent_hidden(self) -> None:
        """Show or hide what the agents' own pickers hide; remembered for the next run."""
        self.hide_agent_hidden = not self.hide_agent_hidden
        self.remember(show_agent_hidden=not self.hide_agent_hidden)

    def action_choose_workspace(self) -> None:
        self.run_service(self.service.workspaces, self._show_workspaces)

    def _show_workspaces(self, infos: list[WorkspaceInfo]) -> None:
        from ..dialogs import workspace_dialog  # not before the first frame

        def chosen(key: str | None) -> None:
            if key:
                self.workers.cancel_group(self, "costs")
                self.scope_all = False
                self.scope_key = key
                self.scope_where = f"workspace {key}"
                self.rows_loading = True
                self.load_rows()
                self.update_header()

        self.app.push_screen(workspace_dialog(infos, self.reprise_app.clock()), chosen)

    def action_search(self) -> None:
        from ..search import SearchScreen  # not before the first frame

        label = "all workspaces" if self.scope_all else "this workspace"

        def chosen(hit: SearchHit | None) -> None:
            if hit is not None:
                self.open_at_turn(hit)

        self.app.push_screen(SearchScreen(self.service, all_workspaces=self.scope_all, key=self.scope_key,
                                          scope_label=label), chosen)

    def open_at_turn(self, hit: SearchHit) -> None:
        """Select the hit's session and open its conversation with the match's line at the top."""
        self.set_reactive(ScreenBase.filter_text, "")   # the view is applied below, with the hit selected
        self.query_one("#filter", Input).value = ""
        if hit.row.hidden_by_agent and self.hide_agent_hidden:   # shown for this hit; the remembered choice stays
            self.set_reactive(ScreenBase.hide_agent_hidden, False)
        if self.agent_filter not in (None, hit.row.source):
            self.set_reactive(ScreenBase.agent_filter, None)
        self.preview_shown = True   # the hit is in the preview, also where it waits for ctrl+e
        landing = Landing(hit.turn, hit.excerpt.words(), hit.field)
        self.query_one(DetailPane).land_when_shown(hit.row.path, landing)
        self.apply_view(select=hit.row.path)

