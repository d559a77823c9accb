"""Reading sessions: `list` (the table for people, its legend), `show` (a session's conversation, or
its raw form) and `search` (full text over every turn)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reprise.core import list_document
from reprise.core.errors import RepriseError, UsageError
from reprise.core.progress import Progress
from reprise.core.sources.registry import short_id

from ..format import counted, human_size, human_time, local_now, money, session_folder
from ..lazy import lazy_module
from ..text import clipped, safe_line, safe_text
from .arguments import Command
from .output import contract, emit, is_terminal, note, print_lines, print_safe

if TYPE_CHECKING:
    from reprise.core import service as core_service
    from reprise.core.search_engine import SearchUpdate
    from reprise.core.search_index import SearchHit
    from reprise.core.service import Listing, Service, SessionDetail

    from ..progress_line import ProgressLine
else:
    core_service = lazy_module("reprise.core.service")


@dataclass(frozen=True, slots=True)
class ListArguments:
    all: bool
    limit: int | None
    sort: str
    reverse: bool
    source: list[str] | None
    interactive: bool


@dataclass(frozen=True, slots=True)
class ShowArguments:
    id: str
    summary: bool
    raw: bool
    turn: int | None = None


@dataclass(frozen=True, slots=True)
class SearchArguments:
    query: list[str]
    all: bool
    limit: int
    no_index: bool


def list_sessions(service: Service, args: ListArguments, as_json: bool) -> int:
    listing = service.list_sessions(all_workspaces=args.all, sort=args.sort, limit=args.limit, sources=args.source,
                                    hide_agent_hidden=args.interactive, reverse=args.reverse,
                                    for_people=not as_json)
    service.load_details(listing.rows)
    if as_json:  # the contract's data for `SessionList`, without validating a model per row
        emit(list_document.list_data(listing), whole=True)
        return 0
    if not listing.total:
        print(f"No sessions in {safe_line(listing.scope)}. State root: {safe_line(service.state_root)}")
        return 0
    for line in list_table_lines(service, listing, _list_width(), time.time()):
        print(line)
    at_risk = [row for row in listing.rows if row.agent_deletion is not None and row.agent_deletion.at_risk]
    for row in at_risk[:10]:
        assert row.agent_deletion is not None
        shown_id = clipped(short_id(row.source, row.id), 9)
        print(f"  {shown_id}: {safe_line(row.agent_deletion.phrase)} (`reprise keep "
              f"{safe_line(row.id[:8])}` keeps a copy)")
    if len(at_risk) > 10:
        print(f"  … and {len(at_risk) - 10} more deleted within the week (`reprise doctor` lists them)")
    return 0


def _list_width() -> int:
    """The table's width: $COLUMNS, else the terminal's; 120 (every column) into a pipe or a file."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    return shutil.get_terminal_size().columns if is_terminal(sys.stdout) else 120


def list_table_lines(service: Service, listing: Listing, width: int, now: float) -> list[str]:
    """`reprise list` for people: the id, the agent's letter when several agents are on, the title
    with the width the columns leave it (tui/columns.py), and a line saying what is shown."""
    from ..columns import REVERSED_MARK, SORTED_MARK, agent_mark, cell, layout, title_label
    from ..legend import PIN_MARK, agent_entries, plain_lines, status_entries

    agents = len(service.sources) > 1
    branches = any(row.details is not None and row.details.branch for row in listing.rows)
    wanted = ["status", "updated", "turns", "size", "context", "next"]
    wanted += (["folder"] if listing.all_workspaces else []) + (["branch"] if branches else [])
    fixed = 11 + (2 if agents else 0)
    shape = layout(width, sort=core_service.sort_key(listing.sort), reverse=listing.reverse, fixed=fixed, wanted=wanted)
    lines = [" ".join([f"{'ID':11}" + ("A " if agents else "") + shape.title_cell("TITLE".ljust(shape.title_width)),
                       *shape.header()]).rstrip()]
    for row in listing.rows:
        shown_id = clipped(short_id(row.source, row.id), 9)
        cells = [f"{PIN_MARK if row.pinned else ' '}{shown_id:9} " + (f"{agent_mark(row)} " if agents else "")
                 + shape.title_cell(title_label(row.display_title, shape.title_width))]
        for column, narrow in shape.columns:
            size = column.width(narrow)
            text = cell(column.key, row, narrow, now, size, uncounted="-")[0]
            cells.append(text.ljust(size) if column.align == "left" else text.rjust(size))
        lines.append(" ".join(cells).rstrip())
    shown = f"{len(listing.rows)} of {listing.total}" if len(listing.rows) < listing.total else f"{listing.total}"
    left_out = (f" ({listing.hidden_left_out} that the agent's own picker hides left out)"
                if listing.hidden_left_out else "")
    order = f"{REVERSED_MARK} smallest or oldest first" if listing.reverse else f"{SORTED_MARK}"
    noun = "session" if listing.total == 1 else "sessions"
    lines.append(f"{shown} {noun} shown{left_out}, {safe_line(listing.scope)}, sorted by {listing.sort} {order}")
    if "next" in shape.keys and any(row.resume_cost is None and row.limit is not None and not row.problem_code
                                    for row in listing.rows):
        lines.append("NEXT - : not counted yet (`--sort next` counts every next turn)")
    lines += plain_lines(status_entries(), width)
    if agents:
        lines += plain_lines(agent_entries(agent_labels(service)), width, "A:     ")
    return lines


def agent_labels(service: Service) -> dict[str, str]:
    """Each source that is on, by name, as it names itself to people."""
    return {name: source.label for name, source in service.sources.items()}


def show(service: Service, args: ShowArguments, as_json: bool) -> int:
    """`show`: the conversation for people (its reports imported here: a listing or a search needs none)."""
    from ..reports.conversation import STATUS_WORDS, conversation_blocks, conversation_lines, turn_time

    detail = service.show(service.resolve(args.id))
    if args.summary:
        if as_json:
            emit(contract.dump(contract.summary(detail)))
        else:
            summary = detail.summary_text or ""
            sys.stdout.write(summary if not sys.stdout.isatty() else safe_text(summary))
            sys.stdout.write("\n")
        return 0
    if as_json:
        emit(contract.dump(contract.session_detail(detail)))
        return 0
    if args.raw:
        _print_raw_show(detail)
        return 0
    now = local_now()
    if args.turn is not None:
        total = len(detail.transcript.turns)
        if not 1 <= args.turn <= total:
            raise UsageError(f"Session {detail.ref.session_id} has {counted(total, 'turn')}; there is no turn "
                             f"{args.turn}.")
        [block] = conversation_blocks(detail.transcript, now, detail.agent_label, whole_turn=args.turn,
                                      first=args.turn - 1)[:1]
        print_lines(block.lines)
        return 0
    turns = detail.transcript.turns
    facts = [detail.agent_label, session_folder(detail.workspace_path, detail.ref.workspace_key)]
    newest = [at for at in (turn_time(turn) for turn in turns[-3:]) if at is not None]
    if newest:
        facts.append(human_time(max(newest), now))
    if turns:
        facts.append(STATUS_WORDS.get(turns[-1].status, turns[-1].status))
    facts.append(counted(len(turns), "turn"))
    print(safe_line(detail.title or "(untitled)") + ("  [pinned]" if detail.meta.pinned else ""))
    print(safe_line(" · ".join(facts)))
    print(f"Session {safe_line(detail.ref.session_id)}, file {safe_line(detail.path)} ({human_size(detail.size)})")
    _print_notes(detail)
    print()
    print_lines(conversation_lines(detail.transcript, now, detail.agent_label))
    _print_usage(detail)
    return 0


def _print_notes(detail: SessionDetail) -> None:
    from reprise.core.session_links import described

    for link in detail.links:
        print(safe_line(described(link)))
    if detail.deletion is not None:
        keep = f"; `reprise keep {detail.ref.session_id[:8]}` copies it out of reach." if detail.keepable else ""
        print(f"Note: {safe_line(detail.deletion)}{keep}")
    for warning in detail.warnings:
        print(f"Warning: {safe_line(warning.message)}")


def _print_usage(detail: SessionDetail) -> None:
    t = detail.totals
    print(f"Usage: {t.input_tokens:,} input, {t.output_tokens:,} output tokens, "
          f"{detail.cost_label} {money(t.cost or 0.0)}, "
          f"{counted(t.iterations or 0, 'iteration')}, {(t.duration_ms or 0) / 1000:.1f} s; "
          f"last context {t.context_tokens or 0:,} tokens")


def _print_raw_show(detail: SessionDetail) -> None:
    """`show --raw`: the agent's own render (or the whole transcript) and the kept history."""
    from ..reports.conversation import full_conversation_lines
    from ..reports.history import history_digest_lines

    title = detail.title or "(untitled)"
    print(f"Session {safe_line(detail.ref.session_id)}  {safe_line(title)}"
          f"{'  [pinned]' if detail.meta.pinned else ''}")
    print(f"Workspace {safe_line(session_folder(detail.workspace_path, detail.ref.workspace_key))}")
    print(f"File {safe_line(detail.path)} ({human_size(detail.size)}), {counted(len(detail.transcript.turns), 'turn')}")
    _print_notes(detail)
    print()
    if detail.summary_text is not None:
        print_safe(detail.summary_text)
    else:
        print_lines(full_conversation_lines(detail.transcript, detail.agent_label))
    print()
    print_lines(history_digest_lines(detail.transcript))
    print()
    _print_usage(detail)


def search(service: Service, args: SearchArguments, as_json: bool) -> int:
    """The hits, printed as they are found (a session once the search is past it), then the count and
    what a reader should know (outputs cut for the index, files that could not be read); `--json`
    prints one document at the end. Then the sessions in scope the index does not hold are indexed,
    with how far on stderr; ctrl+c stops that and keeps what was indexed. The answer's end is the
    end of stdout (`_stdout_apart`): a pipe's reader is not held while the index is built."""
    if args.limit < 1:
        raise UsageError("--limit must be at least 1.")
    with _stdout_apart() as answered:
        hits, update = _answer(service, args, as_json)
        answered()
        if not args.no_index and service.catalog.index_enabled and update is not None and update.unindexed:
            _index_after(service, args.all, quiet=as_json)
    return 0 if hits else 1


def _answer(service: Service, args: SearchArguments, as_json: bool) -> tuple[list[SearchHit], SearchUpdate | None]:
    """Search and print the hits as they come (or the `--json` document at the end)."""
    printer = None
    if not as_json:   # the printer needs the search index's types and Rich's cells: not for --json
        from ..reports.search import HitPrinter

        printer = HitPrinter(service, limit=args.limit, width=_list_width(), now=service.clock())
    line = _progress_line() if printer is not None else None
    final: list[SearchUpdate] = []

    def heard(update: SearchUpdate) -> None:
        final[:] = [update]
        if printer is not None:
            lines = printer.ready(update.hits, update.complete)
            if lines and line is not None:
                line.clear()
            for each in lines:
                print(each.plain, flush=True)
            if line is not None and not update.complete:
                line(Progress("searching", update.searched, update.total))

    hits = service.search(" ".join(args.query), all_workspaces=args.all, limit=args.limit, on_update=heard,
                          index=not args.no_index)
    update = final[-1] if final else None
    if as_json:
        emit(list_document.search_data(hits, update), whole=True)   # the contract's data, unvalidated
    else:
        assert printer is not None
        if line is not None:
            line.clear()
        for each in [*printer.ready(hits, True), *printer.closing_lines(hits, update)]:
            print(each.plain)
    return hits, update


@contextlib.contextmanager
def _stdout_apart() -> Iterator[Callable[[], None]]:
    """While the block runs, sys.stdout writes to a copy of the real stdout that no process started
    from here inherits (descriptor 1 is /dev/null meanwhile: the search's worker processes, their
    forkserver and its resource tracker get that); calling what it gives closes that copy, the end of
    the answer: a reader of the pipe (`reprise search x | head`) is not held while the index is built.
    A stdout that is not descriptor 1 (a test's capture) is left as it is. Should the block fail
    before the answer's end, descriptor 1 is the real stdout again (a closed pipe ends quietly)."""
    try:
        apart = sys.stdout.fileno() == 1
    except (AttributeError, OSError, ValueError):
        apart = False
    if not apart:
        yield lambda: None
        return
    original = sys.stdout
    original.flush()
    private = os.dup(1)   # not inheritable (PEP 446)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    sys.stdout = open(private, "w", buffering=1 if original.line_buffering else -1,  # noqa: SIM115
                      encoding=original.encoding, errors=original.errors, closefd=False)
    open_copy = True

    def close_copy(answer_out: bool) -> None:
        """Flush and close the copy; descriptor 1 stays /dev/null once the answer is out, else (or
        when the flush fails: the reader has gone) it is the real stdout again, so a closed pipe
        ends quietly and an error is printed where the answer would have been."""
        nonlocal open_copy
        if not open_copy:
            return
        open_copy = False
        try:
            sys.stdout.flush()
        except BaseException:
            answer_out = False
            raise
        finally:
            sys.stdout = original
            if not answer_out:
                os.dup2(private, 1)
            os.close(private)

    try:
        yield lambda: close_copy(True)
    except BaseException:
        with contextlib.suppress(OSError, ValueError):
            close_copy(False)
        raise
    close_copy(True)


def _progress_line() -> ProgressLine | None:
    """How far a search or its indexing is, on a terminal's stderr only."""
    from ..progress_line import ProgressLine

    return ProgressLine(sys.stderr) if is_terminal(sys.stderr) else None


def _index_after(service: Service, all_workspaces: bool, *, quiet: bool) -> None:
    """Index the rest of the scope once the hits are out (stdout flushed: its last line, the count or
    a note, is the end of the search), saying how far on stderr (a line on a terminal; else its
    start and end, for a build of more than one batch; nothing with `--json`)."""
    from reprise.core.search_build import BATCH_FILES

    sys.stdout.flush()
    line = None if quiet else _progress_line()
    said = False

    def heard(progress: Progress) -> None:
        nonlocal said
        if not said and not quiet and progress.total >= BATCH_FILES:
            said = True
            note(f"indexing {progress.total:,} sessions for the next searches (ctrl+c stops; what is indexed is kept)")
        if line is not None:
            line(progress)

    try:
        built = service.build_index(all_workspaces=all_workspaces, progress=heard)
    except KeyboardInterrupt:
        if line is not None:
            line.clear()
        if not quiet:
            note("indexing stopped; the sessions indexed so far are kept")
        return
    except (RepriseError, OSError) as exc:   # the answer is out (stdout is its end): said on stderr
        if line is not None:
            line.clear()
        note(f"indexing failed, the search's answer stands: {safe_line(str(exc))}")
        return
    if line is not None:
        line.clear()
    capped = " (the index reached its [search] max_mb: the rest are scanned by each search)" if built.capped else ""
    if said or (capped and not quiet):
        note(f"indexed {built.added:,} of {built.total:,} sessions{capped}")


COMMANDS: dict[str, Command[Any]] = {
    "list": Command(ListArguments, list_sessions),
    "show": Command(ShowArguments, show),
    "search": Command(SearchArguments, search),
}
