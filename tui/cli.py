"""The `reprise` command: parse arguments, call the service, print for people or as JSON.

Without a subcommand it opens the TUI. Exit status: 0 success, 1 failure, 2 usage error,
3 not found or ambiguous.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

from reprise.core import list_document
from reprise.core.errors import AgentError, AmbiguousError, RepriseError, UsageError
from reprise.core.gc_pauses import no_gc_pauses
from reprise.core.paths import SOURCE_NAMES, short_id
from reprise.core.progress import no_progress

from .format import counted, human_size, human_time, local_now, money, session_folder
from .json_writer import write_json
from .lazy import lazy_module
from .progress_line import ProgressLine
from .reports import Line
from .reports.audit import audit_lines, audit_problem_lines
from .reports.conversation import STATUS_WORDS, conversation_lines, full_conversation_lines, turn_time
from .reports.history import history_digest_lines
from .stdio import CLOSED_PIPE_STATUS, closed_outputs, on_terminal, quiet_closed_outputs
from .text import clipped, one_line, safe_line, safe_text

# The contract (pydantic models), the service (sources, config, the tokenizer) and the TUI (Textual)
# are imported when a command first needs them: `reprise --help` starts without them.
if TYPE_CHECKING:
    from reprise.core import contract
    from reprise.core import service as core_service
    from reprise.core.service import Service
else:
    contract = lazy_module("reprise.core.contract")
    core_service = lazy_module("reprise.core.service")


class _SortKeys:
    """The service's sort keys and their aliases for `--sort`, read when an argument is checked or
    `list --help` is printed."""

    def __iter__(self) -> Iterator[str]:
        return iter((*core_service.SORTS, *core_service.SORT_ALIASES))

    def __contains__(self, key: object) -> bool:
        return key in core_service.SORTS or key in core_service.SORT_ALIASES


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own usage errors: one line, exit 2
        if "--json" in sys.argv:
            print(json.dumps(contract.dump(contract.usage_error(message))))
        else:
            print(f"reprise: {safe_line(message)}", file=sys.stderr)  # it quotes the arguments as typed
        raise SystemExit(2)


def _common() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument("--state-dir", default=argparse.SUPPRESS, help="state root (default: Fractal's)")
    common.add_argument("--workspace", default=argparse.SUPPRESS, help="workspace folder (default: current)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON document")
    return common


class _Unbuilt:
    """A subcommand's parser that is not built (not the one named): it takes every call and keeps nothing."""

    def __getattr__(self, name: str) -> Callable[..., _Unbuilt]:
        return self._take

    def _take(self, *args: object, **kwargs: object) -> _Unbuilt:
        return self


_UNBUILT = _Unbuilt()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `only`, of the subcommands just that one, none for "" (what is
    parsed: the other parsers cost `reprise list` or the TUI's start 8 ms)."""
    common = _common()
    parser = _Parser(prog="reprise", parents=[common],
                     description="Browse, resume, meter and trim the sessions of coding agents.")
    parser.add_argument("--demo", action="store_true",
                        help="use a demo store in a temporary folder (the TUI, or any command: `reprise --demo list`)")
    parser.add_argument("--agent", choices=("fractal", "command", "echo"),
                        help="agent backend for turns sent from the TUI (default: [agent] backend)")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        if only is not None and name != only:
            return cast(argparse.ArgumentParser, _UNBUILT)
        return sub.add_parser(name, parents=[common], help=help_text, description=help_text)

    p = add("list", "list sessions of this workspace (or all)")
    p.add_argument("--all", action="store_true", help="all workspaces")
    p.add_argument("--limit", type=int, help="show at most N")
    p.add_argument("--sort", choices=_SortKeys(), metavar="KEY", default="updated",
                   help="updated, turns, size, context (the last measured), next (the next turn's tokens; "
                        "cost is its old name); largest or newest first")
    p.add_argument("--reverse", action="store_true", help="smallest or oldest first")
    p.add_argument("--source", action="append", choices=SOURCE_NAMES, metavar="NAME",
                   help=f"only this agent's sessions ({', '.join(SOURCE_NAMES)}); repeatable")
    p.add_argument("--interactive", action="store_true",
                   help="leave out the sessions the agent's own picker hides (`claude -p` and SDK runs)")

    p = add("show", "show a session: its conversation, turn by turn, and its usage")
    p.add_argument("id")
    p.add_argument("--summary", action="store_true", help="print exactly Fractal's rendered summary")
    p.add_argument("--raw", action="store_true",
                   help="the agent's own rendered summary (the whole transcript for other agents) and the "
                        "history of the turns kept in the file, with ids and ISO times")

    p = add("new", "start a new session: write an empty one (Fractal), or start the agent on a new id "
                   "(Claude Code, Codex)")
    p.add_argument("--title")
    p.add_argument("--agent", dest="new_agent", choices=SOURCE_NAMES,
                   help="the agent of the new session (default: [sources] new_agent, else the only one enabled)")
    p.add_argument("--print", action="store_true", help="print the command that starts it instead of running it")

    p = add("resume", "resume a session in its agent (without an id or --last: choose it in the picker)")
    p.add_argument("id", nargs="?")
    p.add_argument("--last", action="store_true", help="the most recently active session")
    p.add_argument("--print", action="store_true", help="print the argv instead of running it")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    p = add("rename", "set a session's title")
    p.add_argument("id")
    p.add_argument("title")
    for name, help_text in (("pin", "pin a session to the top"), ("unpin", "unpin a session")):
        add(name, help_text).add_argument("id")

    p = add("meter", "the next turn's context, part by part")
    p.add_argument("id")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--message", help="the message you are about to send")
    group.add_argument("--message-file", help="read the message from a file (- for stdin)")
    p.add_argument("--model", help="count for this model (default: [meter] model, then Fractal's)")
    p.add_argument("--via", choices=("send", "resume"), default="send",
                   help="how the turn will be sent: send (the agent's send command, as `reprise send` and the "
                        "composer do; the default) or resume (typed into the agent's own terminal UI, as after "
                        "`reprise resume`)")

    p = add("send", "run one turn of a session with an agent backend")
    p.add_argument("id")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--message", help="the message to send")
    group.add_argument("--message-file", help="read the message from a file (- for stdin)")
    p.add_argument("--agent", choices=("fractal", "command", "echo"),
                   help="backend of a Fractal session (default: [agent] backend); a Claude Code session always "
                        "runs [sources.claude] send")
    p.add_argument("--yes", action="store_true", help="send even when the context is over the window")

    p = add("recover", "mark pending turns whose agent is gone as interrupted")
    p.add_argument("id")

    p = add("trim", "trim a session without losing anything (the removed text is archived)")
    p.add_argument("id")
    p.add_argument("--keep-history", type=int, metavar="N", help="keep the newest N history entries")
    p.add_argument("--cap-replies", type=int, metavar="C", help="cut agent responses longer than C characters")
    p.add_argument("--spare", type=int, default=3, metavar="K", help="with --cap-replies: leave the newest K turns")
    p.add_argument("--fold", type=int, metavar="N", help="keep the newest N turns, condense the older ones")
    p.add_argument("--drop", metavar="T,...", help="remove turns by number (from 1) or turn id")
    p.add_argument("--fit", type=int, metavar="TOKENS", help="the first plan of a fixed ladder that fits")
    p.add_argument("--dry-run", action="store_true", help="preview only")
    p.add_argument("--fork", action="store_true", help="write the result as a new session")
    p.add_argument("--force", action="store_true", help="trim even a file with warnings or a running agent")
    p.add_argument("--model", help="count for this model")

    p = add("restore", "undo trims: put archived records back (never deletes archive entries)")
    p.add_argument("id")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--archive", metavar="DIGEST", help="this archive entry (a digest prefix)")
    group.add_argument("--all", action="store_true", help="every trim not yet restored")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--force", action="store_true")

    p = add("archive", "list a session's archive entries, or show or export one")
    archive = p.add_subparsers(dest="archive_command", parser_class=_Parser, metavar="ACTION", required=True)
    q = archive.add_parser("list", parents=[common], help="the archive entries of a session, oldest first")
    q.add_argument("id")
    q = archive.add_parser("show", parents=[common],
                           help="an entry's exact bytes (a reply's whole output, trimmed records, a snapshot)")
    q.add_argument("id")
    q.add_argument("digest", help="the entry's digest or a prefix of it (at least 6 hex digits)")
    q.add_argument("--output", metavar="FILE", help="export: write the bytes to FILE (a new file) instead")

    p = add("rm", "move a session to the trash")
    p.add_argument("id")
    p.add_argument("--force", action="store_true", help="even when an agent may be writing it")

    p = add("trash", "list, restore or purge trashed sessions")
    trash = p.add_subparsers(dest="trash_command", parser_class=_Parser, metavar="ACTION", required=True)
    q = trash.add_parser("list", parents=[common], help="trashed sessions")
    q.add_argument("--all", action="store_true", help="all workspaces")
    q = trash.add_parser("restore", parents=[common], help="put a trashed session back")
    q.add_argument("id")
    q = trash.add_parser("purge", parents=[common], help="delete trashed sessions for good (asks)")
    q.add_argument("--older-than", metavar="AGE", help="only those trashed longer ago than AGE (12h, 30d, 2w)")
    q.add_argument("--all", action="store_true", help="all workspaces")
    q.add_argument("--yes", action="store_true", help="do not ask")

    p = add("prune", "move old or empty sessions to the trash (lists only, unless --yes)")
    p.add_argument("--older-than", metavar="AGE", help="newest turn older than AGE (12h, 30d, 2w)")
    p.add_argument("--empty", action="store_true", help="sessions with no turns")
    p.add_argument("--keep-last", type=int, default=0, metavar="K", help="protect the newest K per workspace")
    p.add_argument("--include-undated", action="store_true", help="also sessions with no turn time")
    p.add_argument("--all", action="store_true", help="all workspaces")
    p.add_argument("--force", action="store_true", help="also sessions with a recent pending turn")
    p.add_argument("--yes", action="store_true", help="move them (without it, only list)")

    p = add("relink", "a repository moved: move its sessions to the new folder's workspace")
    p.add_argument("old", help="the old folder path or its workspace key")
    p.add_argument("dir", help="the new folder")
    p.add_argument("--force", action="store_true")

    p = add("audit", "destructive operations, one line each (never message text)")
    p.add_argument("--here", action="store_true", help="only this workspace")

    p = add("pick", "choose a session in the TUI and print its id (exit 1 if cancelled)")
    printed = p.add_mutually_exclusive_group()
    printed.add_argument("--args", action="store_true",
                         help="print the resume arguments after the program name, for the picked session's agent "
                              "(`--workspace DIR --resume ID` for Fractal, `--resume ID` for Claude Code)")
    printed.add_argument("--command", action="store_true", dest="whole_command",
                         help="print the whole shell-quoted resume line (`cd DIR && claude --resume ID`)")

    p = add("keep", "copy a session into Reprise's archive, out of reach of its agent's clean-up (Claude Code "
                    "deletes sessions by age)")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("id", nargs="?", help="the session to keep")
    group.add_argument("--due", type=float, nargs="?", const=7.0, metavar="DAYS",
                       help="keep every session, in every folder, that its agent deletes within DAYS (default 7)")

    p = add("search", "full-text search over every turn")
    p.add_argument("query", nargs="+")
    p.add_argument("--all", action="store_true", help="all workspaces")
    p.add_argument("--limit", type=int, default=50)

    add("workspaces", "all known workspaces")
    add("config", "the effective configuration and where each value came from")
    p = add("doctor", "check the whole store")
    p.add_argument("--clean", action="store_true", help="remove temp files older than 10 minutes")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command: of `argv`, else of this process's arguments, the process then ending (what was
    frozen at start (`_no_collection`) stays frozen, out of the collection at exit: 20 ms)."""
    try:
        try:
            return _run(argv)
        finally:
            if argv is not None:
                gc.unfreeze()  # the caller goes on (a test): its objects are collected again
            sys.stdout.flush()  # a small output is still buffered: a closed pipe shows here, not at exit
    except BrokenPipeError:
        closed = closed_outputs()
        if not closed:
            raise
        quiet_closed_outputs(closed)  # the reader went away: stop quietly, like a Unix tool
        return CLOSED_PIPE_STATUS


# The top-level options, and which of them take a value: what may come before a subcommand's name.
_TOP_FLAGS = frozenset(("--json", "--demo"))
_TOP_VALUED = frozenset(("--state-dir", "--workspace", "--agent"))


def _command_named(argv: list[str]) -> str | None:
    """The subcommand `argv` names when nothing but top-level options spelled out in full comes before
    it, "" when there are only those (the TUI: no subcommand's parser is needed); None otherwise
    (`--help`, an abbreviation, a typo: every parser is built)."""
    tokens = iter(argv)
    for token in tokens:
        if token in _TOP_VALUED:
            next(tokens, None)
        elif token not in _TOP_FLAGS and token.partition("=")[0] not in _TOP_VALUED:
            return token if token in COMMANDS else None
    return ""


def _run(argv: list[str] | None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    parser = build_parser(_command_named(arguments))
    with _no_collection():  # `--sort` imports the service for its keys
        args = parser.parse_args(arguments)
    as_json = getattr(args, "json", False)
    service = None
    demo_root: Path | None = None
    try:
        state_dir, workspace = getattr(args, "state_dir", None), getattr(args, "workspace", None)
        if args.demo:
            state_dir, workspace, demo_root = _demo_store()
        if args.command is None:
            return _open_tui(args, state_dir, workspace)
        # How far a cold listing or a first search is, on a terminal only: never into a pipe or with --json.
        progress = ProgressLine(sys.stderr) if not as_json and _is_terminal(sys.stderr) else None
        with _no_collection():
            service = core_service.Service.from_environment(state_dir=state_dir, workspace=workspace,
                                                            parallel_scan=True, progress=progress or no_progress)
        handler: Callable = COMMANDS[args.command]
        try:
            return handler(service, args, as_json)
        finally:
            if progress is not None:
                progress.clear()
            for note in service.take_notices():  # the catalog was rebuilt or bypassed: one line each
                print(f"reprise: {safe_line(note)}", file=sys.stderr)
            if argv is not None:   # the caller goes on (a test, a library): its catalog's files are let go now
                service.catalog.close()
    except RepriseError as exc:
        _print_error(exc, as_json)
        return exc.exit_status
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # the disk said no (permissions, full, read-only): one line, not a traceback
        if isinstance(exc, BrokenPipeError) and closed_outputs():
            raise  # our own output is gone: main() ends quietly; no error document on a closed stdout
        error = RepriseError(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc),
                             path=exc.filename)
        _print_error(error, as_json)
        return 1
    finally:   # the demo store goes with the run (an agent the TUI hands a demo session to replaced this process)
        if demo_root is not None:
            shutil.rmtree(demo_root, ignore_errors=True)


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """No cyclic garbage collection while the service (or the TUI) is imported and built, and what that
    made frozen out of later collections: it lives until exit, and scanning it for cycles cost a listing
    15 ms. The command itself runs with collection on."""
    with no_gc_pauses():
        try:
            yield
        finally:
            gc.freeze()


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced by something without a descriptor, or closed
        return False


def _print_error(exc: RepriseError, as_json: bool) -> None:
    if as_json:
        print(json.dumps(contract.dump(contract.error(exc))))
        return
    print(f"reprise: {safe_line(str(exc))}", file=sys.stderr)
    if isinstance(exc, AmbiguousError):
        for candidate in exc.candidates:
            print(f"  {safe_line(candidate)}", file=sys.stderr)


def _emit(data: dict) -> None:
    """One JSON document, written as it is encoded (`json_writer`); a non-finite number becomes null."""
    write_json(data, sys.stdout.write)


def _print_lines(lines: list[Line]) -> None:
    for each in lines:
        print(each.plain)


# --- commands ----------------------------------------------------------------------------

def cmd_list(service: Service, args, as_json: bool) -> int:
    listing = service.list_sessions(all_workspaces=args.all, sort=args.sort, limit=args.limit, sources=args.source,
                                    hide_agent_hidden=args.interactive, reverse=args.reverse,
                                    for_people=not as_json)
    service.load_details(listing.rows)
    if as_json:  # the contract's data for `SessionList`, without validating a model per row
        _emit(list_document.list_data(listing))
        return 0
    if not listing.total:
        print(f"No sessions in {safe_line(listing.scope)}. State root: {safe_line(service.state_root)}")
        return 0
    for line in list_table_lines(service, listing, _list_width(), time.time()):
        print(line)
    at_risk = [row for row in listing.rows if row.agent_deletion is not None and row.agent_deletion.at_risk]
    for row in at_risk[:10]:
        assert row.agent_deletion is not None
        shown_id = clipped(short_id(row.source, row.file_id), 9)
        print(f"  {shown_id}: {safe_line(row.agent_deletion.phrase)} (`reprise keep "
              f"{safe_line(row.file_id[:8])}` keeps a copy)")
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
    return shutil.get_terminal_size().columns if _isatty(sys.stdout) else 120


def list_table_lines(service: Service, listing, width: int, now: float) -> list[str]:
    """`reprise list` for people: the id, the agent's letter when several agents are on, the title
    with the width the columns leave it (tui/columns.py), and a line saying what is shown."""
    from .columns import AGENT_MARKS, REVERSED_MARK, SORTED_MARK, agent_mark, cell, layout, title_label

    agents = len(service.sources) > 1
    wanted = ["status", "updated", "turns", "size", "context", "next"] + (["folder"] if listing.all_workspaces else [])
    fixed = 11 + (2 if agents else 0)
    shape = layout(width, sort=core_service.sort_key(listing.sort), reverse=listing.reverse, fixed=fixed, wanted=wanted)
    lines = [" ".join([f"{'ID':11}" + ("A " if agents else "") + "TITLE".ljust(shape.title_width),
                       *shape.header()]).rstrip()]
    for row in listing.rows:
        shown_id = clipped(short_id(row.source, row.file_id), 9)
        cells = [f"{'*' if row.pinned else ' '}{shown_id:9} " + (f"{agent_mark(row)} " if agents else "")
                 + title_label(row.display_title, shape.title_width)]
        for column, narrow in shape.columns:
            size = column.width(narrow)
            text = cell(column.key, row, narrow, now, size, uncounted="-")[0]
            cells.append(text.ljust(size) if column.align == "left" else text.rjust(size))
        lines.append(" ".join(cells).rstrip())
    shown = f"{len(listing.rows)} of {listing.total}" if len(listing.rows) < listing.total else f"{listing.total}"
    left_out = (f" ({listing.hidden_left_out} that the agent's own picker hides left out)"
                if listing.hidden_left_out else "")
    order = f"{REVERSED_MARK} smallest or oldest first" if listing.reverse else f"{SORTED_MARK}"
    lines.append(f"{shown} sessions shown{left_out}, {safe_line(listing.scope)}, sorted by {listing.sort} {order}")
    if "next" in shape.keys and any(row.resume_cost is None and row.limit is not None and not row.problem_code
                                    for row in listing.rows):
        lines.append("NEXT - : not counted yet (`--sort next` counts every next turn)")
    if agents:
        letters = ", ".join(f"{AGENT_MARKS.get(name, name[:1].upper())} {service.sources[name].label}"
                            for name in service.sources)
        lines.append(f"A: {letters} (lower case: a session the agent's own picker hides)")
    return lines


def cmd_show(service: Service, args, as_json: bool) -> int:
    detail = service.show(service.resolve(args.id))
    if args.summary:
        if as_json:
            _emit(contract.dump(contract.summary(detail)))
        else:
            summary = detail.summary_text or ""
            sys.stdout.write(summary if not sys.stdout.isatty() else safe_text(summary))
            sys.stdout.write("\n")
        return 0
    if as_json:
        _emit(contract.dump(contract.session_detail(detail)))
        return 0
    if args.raw:
        _print_raw_show(detail)
        return 0
    now = local_now()
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
    _print_lines(conversation_lines(detail.transcript, now, detail.agent_label))
    _print_usage(detail)
    return 0


def _print_notes(detail) -> None:
    if detail.deletion is not None:
        keep = f"; `reprise keep {detail.ref.session_id[:8]}` copies it out of reach." if detail.keepable else ""
        print(f"Note: {safe_line(detail.deletion)}{keep}")
    for warning in detail.warnings:
        print(f"Warning: {safe_line(warning.message)}")


def _print_usage(detail) -> None:
    t = detail.totals
    print(f"Usage: {t.input_tokens:,} input, {t.output_tokens:,} output tokens, "
          f"{detail.cost_label} {money(t.cost or 0.0)}, "
          f"{t.iterations or 0} iterations, {(t.duration_ms or 0) / 1000:.1f} s; "
          f"last context {t.context_tokens or 0:,} tokens")


def _print_raw_show(detail) -> None:
    """`show --raw`: the agent's own render (or the whole transcript) and the kept history."""
    title = detail.title or "(untitled)"
    print(f"Session {safe_line(detail.ref.session_id)}  {safe_line(title)}"
          f"{'  [pinned]' if detail.meta.pinned else ''}")
    print(f"Workspace {safe_line(session_folder(detail.workspace_path, detail.ref.workspace_key))}")
    print(f"File {safe_line(detail.path)} ({human_size(detail.size)}), {counted(len(detail.transcript.turns), 'turn')}")
    _print_notes(detail)
    print()
    if detail.summary_text is not None:
        _print_safe(detail.summary_text)
    else:
        _print_lines(full_conversation_lines(detail.transcript, detail.agent_label))
    print()
    _print_lines(history_digest_lines(detail.transcript))
    print()
    _print_usage(detail)


def _print_safe(text: str, chunk: int = 1 << 20) -> None:
    """`print(safe_text(text))` a slice at a time (cut after a newline where one is near), so a
    summary of hundreds of MB is never copied whole; safe_text maps characters one by one."""
    start = 0
    while start < len(text):
        end = len(text) if len(text) - start <= chunk else text.rfind("\n", start, start + chunk) + 1
        end = end if end > start else start + chunk
        sys.stdout.write(safe_text(text[start:end]))
        start = end
    sys.stdout.write("\n")


def cmd_new(service: Service, args, as_json: bool) -> int:
    ref = service.new_session(args.title, source=service.new_agent(args.new_agent))
    argv = service.new_argv(ref)
    if argv is not None and not (args.print or as_json):
        if shutil.which(argv[0]) is None:
            raise AgentError(f"The agent program {argv[0]!r} was not found on PATH.",
                             hint=f"install it, or set [sources.{ref.source}] new in the config file")
        print(f"reprise: new session {ref.session_id}", file=sys.stderr)
        exec_handoff(argv, str(service.workspace))
        return 0
    if as_json:
        _emit(contract.dump(contract.session_place(ref, service.workspace, argv)))
    elif argv is not None:
        print(shlex.join(argv))
    else:
        print(ref.session_id)
    return 0


def cmd_resume(service: Service, args, as_json: bool) -> int:
    """Resume the session named by an id or --last; with neither, the one chosen in the picker."""
    if args.last and args.id:
        raise UsageError("Give a session id or --last, not both.")
    if args.last or args.id:
        ref = service.last_ref() if args.last else service.resolve(args.id)
    else:
        if as_json:
            raise UsageError("Which session? Give an id (or a prefix) or --last.")
        picked = _pick(service, "resume")
        if picked is None:
            return 1
        ref = picked.ref
    plan = service.resume_plan(ref, for_exec=not args.print)
    if plan.program_missing is not None:
        raise plan.program_missing
    for note in [*service.take_notices(), *plan.notes]:  # before the agent replaces this process
        print(f"reprise: {safe_line(note)}", file=sys.stderr)
    for worry, refusal, hint in (
            (plan.over_window, f"Session {ref.session_id} is over the model's context window.",
             "pass --yes to resume anyway, or trim it first"),
            (plan.writer is not None, f"Session {ref.session_id} may be being written by its agent now "
                                      f"({plan.writer}).", "pass --yes to resume it anyway")):
        if worry and not args.yes and not args.print:
            if not sys.stdin.isatty():
                raise RepriseError(refusal, hint=hint)
            print(f"reprise: {safe_line(refusal)}", file=sys.stderr)
            answer = input("Resume anyway? [y/N] ").strip().lower()
            if answer not in ("y", "yes"):
                print("Not resumed.", file=sys.stderr)
                return 1
    if args.print:
        if as_json:
            _emit(contract.dump(contract.resume_plan(plan)))
        else:
            print(shlex.join(plan.argv))
        return 0
    exec_handoff(plan.argv, plan.cwd)
    return 0


def exec_handoff(argv: list[str], cwd: str) -> None:
    """Replace this process with the agent, in the session's workspace."""
    os.chdir(cwd)
    os.execvp(argv[0], argv)


def _message(args) -> str:
    if args.message_file == "-":
        return sys.stdin.read()
    if args.message_file:
        try:
            return Path(args.message_file).read_text(encoding="utf-8", errors="surrogateescape")
        except OSError as exc:
            raise UsageError(f"{args.message_file}: cannot read the message file: {exc.strerror or exc}.",
                             path=args.message_file) from None
    return args.message or ""


def cmd_send(service: Service, args, as_json: bool) -> int:
    """The turn runs in a thread; this thread only waits on a queue, so SIGINT, SIGTERM and
    SIGHUP reach their handlers at once (an interrupted `Thread.join` would return early)."""
    import queue
    import threading

    from reprise.core.processes import TurnSignals

    message = _message(args)
    ref = service.resolve(args.id)
    cancel = threading.Event()
    done: queue.Queue = queue.Queue()

    def run() -> None:
        try:
            done.put((service.send_turn(ref, message, agent=args.agent, confirm_over=args.yes, cancel=cancel), None))
        except BaseException as exc:  # handed to this thread, which raises it
            done.put((None, exc))

    with TurnSignals(cancel) as signals:
        threading.Thread(target=run, name="reprise-turn", daemon=True).start()
        while True:
            try:
                result, error = done.get(timeout=0.5)
                break
            except queue.Empty:
                continue
    if signals.received is not None:
        return _after_signal(service, ref, signals, result, error, as_json)
    if error is not None:
        raise error
    if as_json:
        _emit(contract.dump(contract.sent(result)))
    else:
        o = result.outcome
        print(f"[{o.status}] turn {result.turn_id or '?'} via {result.backend}")
        if o.response:
            print(safe_text(o.response))
        if o.error:
            print(f"Error: {safe_text(o.error)}", file=sys.stderr)
        for note in o.notes:
            if note not in o.response:  # Fractal writes its own reply: Reprise's notes are not in it
                print(f"reprise: {safe_text(note)}", file=sys.stderr)
    return 0 if result.outcome.status == "succeeded" else 1


def _after_signal(service: Service, ref, signals, result, error, as_json: bool) -> int:
    """One line for a turn ended by a signal: on stderr, and in the audit log (the only place
    it can go when the terminal is gone)."""
    name = signals.name
    status = result.outcome.status if result is not None else None
    service.record_signal(ref, name, result.turn_id if result is not None else None, status)
    if error is not None:
        line = f"reprise: {name}: {error}"
    elif result.turn_id is None:
        line = f"reprise: {name}: the turn did not start."
    else:
        line = f"reprise: {name}: turn {result.turn_id} was stopped and recorded {status}."
    if not (signals.received == signal.SIGHUP and _isatty(sys.stderr)):
        with contextlib.suppress(OSError, ValueError):
            if as_json and result is not None:
                _emit(contract.dump(contract.sent(result)))
            print(safe_text(line), file=sys.stderr)
    return signals.exit_status


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError):
        return False


def cmd_recover(service: Service, args, as_json: bool) -> int:
    ref = service.resolve(args.id)
    marked = service.mark_stale_interrupted(ref)
    if as_json:
        _emit(contract.dump(contract.Recovered(session_id=ref.session_id, interrupted=marked)))
    else:
        print(f"Marked {counted(len(marked), 'stale pending turn')} interrupted." if marked
              else "No stale pending turns.")
    return 0


def cmd_meter(service: Service, args, as_json: bool) -> int:
    message = _message(args)
    ref = service.resolve(args.id)
    result = service.measure(ref, message, model=args.model, via=args.via)
    if as_json:
        _emit(contract.dump(contract.meter(ref, result)))
        return 0
    from .reports.meter import meter_lines

    _print_lines(meter_lines(ref.session_id, result, with_draft=bool(message)))
    return 0


def cmd_search(service: Service, args, as_json: bool) -> int:
    if args.limit < 1:
        raise UsageError("--limit must be at least 1.")
    hits = service.search(" ".join(args.query), all_workspaces=args.all, limit=args.limit)
    if as_json:
        _emit(contract.dump(contract.search(hits)))
        return 0 if hits else 1
    from .reports.search import search_lines  # it needs the search index's types: not for every command

    service.load_details([hit.row for hit in hits])   # each session is named by its title
    _print_lines(search_lines(hits, limit=args.limit))
    return 0 if hits else 1


def cmd_trim(service: Service, args, as_json: bool) -> int:
    from reprise.core.trimming import TrimOptions

    options = TrimOptions(keep_history=args.keep_history, cap_replies=args.cap_replies, spare=args.spare,
                          fold=args.fold, drop=TrimOptions.parse_drop(args.drop) if args.drop else (), fit=args.fit)
    ref = service.resolve(args.id)
    result = service.trim(ref, options, dry_run=args.dry_run, fork=args.fork, force=args.force, model=args.model)
    plan = result.plan
    if as_json:
        _emit(contract.dump(contract.trim(result)))
        return 1 if plan.fit is not None and not plan.fit.fits else 0
    if plan.fit is not None:
        if plan.fit.fits:
            print(f"Plan for --fit {plan.fit.target:,}: {plan.fit.chosen}")
        else:
            print(f"No plan on the ladder brings the total to {plan.fit.target:,} tokens; nothing was changed.")
    if not plan.changed:
        for note in plan.notes:
            print(f"note: {safe_line(note)}")
        print("Nothing to trim.")
        return 1 if plan.fit is not None and not plan.fit.fits else 0
    counts = plan.counts()
    print(f"Session {safe_line(ref.session_id)}:")
    print(f"  context {plan.meter_before:,} -> {plan.meter_after:,} tokens" if plan.meter_before is not None else "")
    print(f"  file    {human_size(plan.size_before)} -> {human_size(plan.size_after)}")
    print(f"  turns   {counts['capped']} capped, {counts['folded']} folded, {counts['dropped']} dropped; "
          f"{counts['history_removed']} history entries removed")
    for note in plan.notes:
        print(f"  note: {safe_line(note)}")
    if result.dry_run:
        print("Dry run: nothing was written.")
    elif result.forked:
        print(f"Written as a new session {safe_line(result.ref.session_id)}; the original is untouched.")
    else:
        print(f"Trimmed; the removed text is in the archive ({(plan.records_digest or '')[:12]}). "
              f"Undo: reprise restore {safe_line(ref.session_id[:8])}")
    return 0


def cmd_restore(service: Service, args, as_json: bool) -> int:
    ref = service.resolve(args.id)
    result = service.restore(ref, archive_digest=args.archive, all_trims=args.all, dry_run=args.dry_run,
                             force=args.force)
    if as_json:
        _emit(contract.dump(contract.restore(result)))
        return 0
    for step in result.steps:
        print(f"{step.mode:10} {clipped(step.op, 14):14} {clipped(step.digest, 12)}")
    for note in result.notes:
        print(f"note: {safe_line(note)}")
    verb = "Would restore" if result.dry_run else "Restored"
    print(f"{verb} {len(result.steps)} archive entr{'y' if len(result.steps) == 1 else 'ies'}: "
          f"{human_size(result.size_before)} -> {human_size(result.size_after)}")
    return 0


def cmd_archive(service: Service, args, as_json: bool) -> int:
    ref = service.resolve(args.id)
    if args.archive_command == "list":
        entries = service.archive_entries(ref)
        if as_json:
            _emit(contract.dump(contract.archive_list(ref, entries)))
            return 0
        for entry in entries:
            print(f"{entry.digest[:12]}  {one_line(entry.time, 32):32}  {entry.op}")
        print(f"{len(entries)} archive entries of {ref.session_id}")
        return 0
    entry, data = service.archive_bytes(ref, args.digest)
    if args.output:
        try:
            with open(args.output, "xb") as out:
                out.write(data)
        except OSError as exc:
            raise RepriseError(f"{args.output}: cannot export the archive entry: {exc.strerror or exc}.",
                               path=args.output) from None
        if as_json:
            _emit(contract.dump(contract.ArchiveExport(session_id=ref.session_id, digest=entry.digest,
                                                       op=entry.op, bytes=len(data), output=args.output)))
        else:
            print(f"Wrote {human_size(len(data))} ({entry.op} {entry.digest[:12]}) to {args.output}", file=sys.stderr)
        return 0
    if as_json:
        _emit(contract.dump(contract.ArchiveText(session_id=ref.session_id, digest=entry.digest, op=entry.op,
                                                 text=data.decode("utf-8", "replace"))))
    elif sys.stdout.isatty():
        sys.stdout.write(safe_text(data.decode("utf-8", "replace")) + "\n")
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
    return 0


def cmd_rm(service: Service, args, as_json: bool) -> int:
    ref = service.resolve(args.id)
    entry = service.remove(ref, force=args.force)
    if as_json:
        _emit(contract.dump(contract.trash_entry(entry)))
    else:
        print(f"Moved {safe_line(ref.session_id)} to the trash "
              f"(reprise trash restore {safe_line(short_id(ref.source, ref.session_id).strip('…'))} puts it back).")
        note = service.source(ref).trash_note
        if note:
            print(f"reprise: {note}.", file=sys.stderr)
    return 0


def cmd_trash(service: Service, args, as_json: bool) -> int:
    from reprise.core.retention import format_age, parse_age

    if args.trash_command == "list":
        entries = service.trash_entries(all_workspaces=args.all)
        now = time.time()
        if as_json:
            _emit(contract.dump(contract.trash_list(entries, now)))
            return 0
        for entry in entries:
            print(f"{clipped(entry.ref.session_id, 9):9}  {format_age(entry.age(now)):>8} ago  "
                  f"{human_size(entry.size):>8}  {clipped(entry.title or '(untitled)', 50)}")
        print(f"{len(entries)} in the trash")
        return 0
    if args.trash_command == "restore":
        entry = service.trash_restore(service.resolve_trashed(args.id))
        if as_json:
            _emit(contract.dump(contract.trash_entry(entry)))
        else:
            print(f"Restored {safe_line(entry.ref.session_id)} from the trash.")
        return 0
    older = parse_age(args.older_than) if args.older_than else None
    confirmed = args.yes
    if not confirmed:
        entries = [e for e in service.trash_entries(all_workspaces=args.all)
                   if older is None or e.age(time.time()) > older]
        if not entries:
            print("Nothing to purge.")
            return 0
        if not sys.stdin.isatty():
            raise UsageError(f"Purging deletes {len(entries)} trashed sessions for good.", hint="confirm with --yes")
        answer = input(f"Delete {len(entries)} trashed sessions and their archives for good? [y/N] ")
        confirmed = answer.strip().lower() in ("y", "yes")
        if not confirmed:
            print("Nothing was deleted.")
            return 1
    result = service.purge(all_workspaces=args.all, older_than=older, confirmed=confirmed)
    if as_json:
        _emit(contract.dump(contract.purge(result)))
    else:
        print(f"Purged {len(result.purged)} trashed sessions; kept {len(result.kept)}.")
        for note in result.notes:
            print(f"reprise: {safe_line(note)}.", file=sys.stderr)
    return 0


def cmd_prune(service: Service, args, as_json: bool) -> int:
    from reprise.core.retention import PruneOptions, parse_age

    options = PruneOptions(older_than=parse_age(args.older_than) if args.older_than else None, empty=args.empty,
                           keep_last=args.keep_last, include_undated=args.include_undated, force=args.force)
    result = service.prune(options, all_workspaces=args.all, confirmed=args.yes)
    if as_json:
        _emit(contract.dump(contract.prune(result)))
        return 0
    selection = result.selection
    for candidate in selection.selected:
        moved = "moved " if candidate.ref in result.moved else "select"
        print(f"{moved} {clipped(candidate.ref.session_id, 9):9}  {safe_line(candidate.reason)}")
    for candidate in selection.protected:
        print(f"keep   {clipped(candidate.ref.session_id, 9):9}  {safe_line(candidate.reason)}")
    for candidate in selection.skipped:
        print(f"skip   {clipped(candidate.ref.session_id, 9):9}  {safe_line(candidate.reason)}")
    for ref, error in result.failed:
        print(f"failed {clipped(ref.session_id, 9):9}  {safe_line(error)}")
    for candidate in selection.keep_instead:
        print(f"save?  {clipped(candidate.ref.session_id, 9):9}  {safe_line(candidate.reason)}; "
              "reprise keep ID copies it out of its agent's reach")
    if result.applied:
        print(f"Moved {len(result.moved)} sessions to the trash.")
    else:
        print(f"{len(selection.selected)} sessions would move to the trash; run again with --yes to do it.")
    return 0


def cmd_relink(service: Service, args, as_json: bool) -> int:
    result = service.relink(args.old, args.dir, force=args.force)
    if as_json:
        _emit(contract.dump(contract.relink(result)))
    else:
        print(f"Moved {len(result.sessions)} sessions from {safe_line(result.old_key)} to {safe_line(result.new_key)} "
              f"({safe_line(result.new_path)}).")
    return 0


def cmd_audit(service: Service, args, as_json: bool) -> int:
    records = service.audit_records(all_workspaces=not args.here)
    problems = service.audit_problems()
    if as_json:
        _emit(contract.dump(contract.audit(records, problems)))
        return 0
    for problem in audit_problem_lines(problems):
        print(f"reprise: {problem.plain}", file=sys.stderr)
    _print_lines(audit_lines(records))
    return 0


def cmd_rename(service: Service, args, as_json: bool) -> int:
    ref = service.resolve(args.id)
    meta = service.rename(ref, args.title)
    if as_json:
        _emit(contract.dump(contract.Renamed(session_id=ref.session_id, title=meta.title)))
    else:
        print(f"Renamed {safe_line(ref.session_id)} to {safe_line(meta.title or '(untitled)')}")
        note = service.source(ref).rename_note
        if note:
            print(note)
    return 0


def _pin(pinned: bool):
    def command(service: Service, args, as_json: bool) -> int:
        ref = service.resolve(args.id)
        service.set_pinned(ref, pinned)
        if as_json:
            _emit(contract.dump(contract.Pinned(session_id=ref.session_id, pinned=pinned)))
        else:
            print(f"{'Pinned' if pinned else 'Unpinned'} {safe_line(ref.session_id)}")
        return 0
    return command


def cmd_workspaces(service: Service, args, as_json: bool) -> int:
    infos = service.workspaces()
    if as_json:
        _emit(contract.dump(contract.workspaces(infos)))
        return 0
    if not infos:
        print(f"No workspaces under {safe_line(service.state_root)}")
    for info in infos:
        where = safe_line(info.path) if info.path else f"(folder unknown: {safe_line(info.key)})"
        print(f"{info.sessions:6} sessions  {clipped(info.last_activity or '-', 32):20}  {where}")
    return 0


def cmd_config(service: Service, args, as_json: bool) -> int:
    rows = service.config_report()
    if as_json:
        _emit(contract.dump(contract.config(service.loaded.config_path, rows, service.source_choices())))
        return 0
    print(f"Config file: {safe_line(service.loaded.config_path)}")
    for key, value, source in rows:
        print(f"{key} = {json.dumps(value)}    # {source}")
    print("Sources:")
    for choice in service.source_choices():
        roots = ", ".join(safe_line(root) for root in choice.roots)
        print(f"  {choice.name}: {'on' if choice.enabled else 'off'} ({safe_line(choice.why)}); roots: {roots}")
    return 0


def cmd_keep(service: Service, args, as_json: bool) -> int:
    if args.due is not None:
        return _keep_due(service, args.due, as_json)
    report = service.keep(service.resolve(args.id))
    if as_json:
        _emit(contract.dump(contract.keep(report)))
        return 0
    added = ", ".join(report.added) or "nothing new"
    print(f"Kept {safe_line(report.ref.session_id)}: {human_size(report.size)}, copy {report.digest[:12]} "
          f"in Reprise's archive (added: {safe_line(added)}); Claude Code's clean-up cannot reach it.")
    for problem in report.problems:
        print(f"Warning: {safe_line(problem.path)}: {safe_line(problem.message)}")
    return 0


def _keep_due(service: Service, days: float, as_json: bool) -> int:
    """Every session due for its agent's clean-up within `days`, counted and sized first, then kept;
    exit 1 when one could not be kept."""
    due = service.due(days)
    within = f"{days:g} day{'' if days == 1 else 's'}"
    if not as_json:
        agents = " and ".join(sorted({service.sources[row.source].label for row in due})) or "their agent"
        print(f"{len(due):,} session{'' if len(due) == 1 else 's'} ({human_size(sum(row.size for row in due))}) "
              f"deleted by {agents} within {within}" + (": keeping them." if due else "."))
    reports, problems = service.keep_due(due)
    if as_json:
        _emit(contract.dump(contract.keep_due(days, reports, problems)))
        return 1 if problems else 0
    for report in reports:
        added = ", ".join(report.added) or "nothing new"
        print(f"  kept {safe_line(report.ref.session_id)}: {human_size(report.size)} (added: {safe_line(added)})")
        for problem in report.problems:
            print(f"  warning: {safe_line(problem.path)}: {safe_line(problem.message)}")
    for problem in problems:
        print(f"  not kept: {safe_line(problem.path)}: {safe_line(problem.message)}")
    if due:
        print(f"Kept {len(reports):,} of {len(due):,}; their agent's clean-up cannot reach the copies.")
    return 1 if problems else 0


def cmd_doctor(service: Service, args, as_json: bool) -> int:
    report = service.doctor(clean=args.clean)
    if as_json:
        _emit(contract.dump(contract.doctor(report)))
        return 0 if report.ok else 1
    from .reports.doctor import doctor_lines

    _print_lines(doctor_lines(report, service.state_root))
    return 0 if report.ok else 1




def _demo_store() -> tuple[str, str, Path]:
    """Build the demo store in a temporary folder and point every root at it, never at the user's
    own: its state root, workspace folder and the folder itself (removed when the run ends), for the
    TUI and every command (`reprise --demo list`)."""
    import tempfile

    from .demo import build_demo, claude_root
    from .demo_codex import codex_root

    root = Path(tempfile.mkdtemp(prefix="reprise-demo-"))
    workspace = str(build_demo(root))
    os.environ["REPRISE_CACHE_DIR"] = str(root / "cache")
    # The demo's own Claude Code root, data folder and (absent) config: never the user's ~/.claude.
    os.environ["CLAUDE_CONFIG_DIR"] = str(claude_root(root))
    os.environ["CODEX_HOME"] = str(codex_root(root))   # the demo's own Codex home, never the user's
    os.environ["REPRISE_DATA_DIR"] = str(root / "data")
    os.environ["REPRISE_CONFIG"] = str(root / "config.toml")
    print(f"reprise: demo store in {safe_line(root)} (removed when this run ends)", file=sys.stderr)
    return str(root / "state"), workspace, root


def _open_tui(args, state_dir: str | None, workspace: str | None) -> int:
    with _no_collection():
        from .app import make_app
        from .ending import Ending
        from .screens.main import Handoff

        agent = args.agent or ("echo" if args.demo else None)
        service = core_service.Service.from_environment(state_dir=state_dir, workspace=workspace,
                                                        parallel_scan=True)
        ending = Ending(last_resort=True)
        app = make_app(service, agent=agent, demo=args.demo, ending=ending)
    with on_terminal("reprise"):
        ending.save_terminal()
        result = app.run()
    if app.exit_signal is not None:  # after a closed terminal's SIGHUP, the audit log has the line
        if app.signal_line and not (app.exit_signal == signal.SIGHUP and _isatty(sys.stderr)):
            with contextlib.suppress(OSError, ValueError):
                print(safe_line(app.signal_line), file=sys.stderr, flush=True)
        ending.said.set()
        return app.return_code or 1
    if isinstance(result, Handoff):
        for note in result.notes:
            print(f"reprise: {safe_line(note)}", file=sys.stderr)
        exec_handoff(result.argv, result.cwd)
    return 0


def _pick(service: Service, command: str):
    """The session chosen in the TUI's picker (a `Picked`), or None when it was cancelled."""
    with _no_collection():
        from .app import make_app
        from .ending import Ending
        from .screens.main import Picked

    ending = Ending(last_resort=True)
    with on_terminal(command):  # what is printed after goes to the original stdout: `$(reprise pick)`
        ending.save_terminal()
        app = make_app(service, mode="pick", ending=ending)
        result = app.run()
    if app.exit_signal is not None:
        ending.said.set()   # the picker says nothing on a signal: it ends with the signal's status
        raise SystemExit(app.return_code or 1)
    return result if isinstance(result, Picked) else None


def cmd_pick(service: Service, args, as_json: bool) -> int:
    result = _pick(service, "pick")
    if result is None:
        return 1
    if args.args or args.whole_command:
        plan = service.resume_plan(result.ref, for_exec=False)
        if args.args:
            print(shlex.join(plan.argv[1:]))
        else:
            print(plan.command_line)
    elif as_json:
        _emit(contract.dump(contract.session_place(result.ref, result.workspace)))
    else:
        print(result.ref.session_id)
    return 0


COMMANDS: dict[str, Callable] = {
    "list": cmd_list, "show": cmd_show, "new": cmd_new, "resume": cmd_resume, "rename": cmd_rename,
    "pin": _pin(True), "unpin": _pin(False), "workspaces": cmd_workspaces, "meter": cmd_meter,
    "pick": cmd_pick, "search": cmd_search, "send": cmd_send, "recover": cmd_recover,
    "trim": cmd_trim, "restore": cmd_restore, "rm": cmd_rm, "trash": cmd_trash, "prune": cmd_prune,
    "relink": cmd_relink, "audit": cmd_audit, "config": cmd_config,
    "doctor": cmd_doctor, "archive": cmd_archive, "keep": cmd_keep,
}


if __name__ == "__main__":
    raise SystemExit(main())
