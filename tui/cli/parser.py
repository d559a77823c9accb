"""The command line's grammar: every subcommand, its options and their help, built lazily (only the
parser of the subcommand named is built) with argparse's usage errors as one line and exit 2."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, cast

from ..lazy import lazy_module
from ..text import safe_line

# The contract (pydantic models) and the service (sources, config, the tokenizer) are imported when an
# argument first needs them: `reprise --help` starts without them.
if TYPE_CHECKING:
    from reprise.core import contract
    from reprise.core import service as core_service
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


class _Backends:
    """The agent backends `--agent` takes (Reprise's own and the ones the sources offer), read from
    the registry when an argument is checked: `reprise --help` reads no source's spec."""

    def __iter__(self) -> Iterator[str]:
        from reprise.core.backend_names import backend_names

        return iter(backend_names())

    def __contains__(self, key: object) -> bool:
        return key in list(self)


class _Sources:
    """The names of the registered sources, read from the registry when an argument is checked."""

    def __iter__(self) -> Iterator[str]:
        from reprise.core.sources.registry import registry

        return iter(registry().names)

    def __contains__(self, key: object) -> bool:
        return key in list(self)


class _Formatter(argparse.HelpFormatter):
    """argparse's help, but a help text without a %-placeholder is printed as it is: argparse would
    first read every choice of the option (the registry's sources and backends) to fill placeholders
    the text does not have."""

    def _expand_help(self, action: argparse.Action) -> str:
        text = self._get_help_string(action)
        return text if text is not None and "%" not in text else super()._expand_help(action)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # argparse's own usage errors: one line, exit 2
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
    parser.add_argument("--agent", choices=_Backends(), metavar="BACKEND",
                        help="agent backend for turns sent from the TUI: command, echo or one a source offers "
                             "(default: [agent] backend)")
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
    p.add_argument("--source", action="append", choices=_Sources(), metavar="NAME",
                   help="only this agent's sessions (a source's name, as `reprise config` lists them); repeatable")
    p.add_argument("--interactive", action="store_true",
                   help="leave out the sessions the agent's own picker hides (`claude -p` and SDK runs)")

    p = add("show", "show a session: its conversation, turn by turn, and its usage")
    p.add_argument("id")
    p.add_argument("--summary", action="store_true", help="print exactly Fractal's rendered summary")
    p.add_argument("--raw", action="store_true",
                   help="the agent's own rendered summary (the whole transcript for other agents) and the "
                        "history of the turns kept in the file, with ids and ISO times")
    p.add_argument("--turn", type=int, metavar="N", help="only turn N (from 1), whole")

    p = add("new", "start a new session: write an empty one (Fractal), or start the agent on a new id "
                   "(every other agent that can)")
    p.add_argument("--title")
    p.add_argument("--agent", dest="new_agent", choices=_Sources(), metavar="NAME",
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
    p.add_argument("--agent", choices=_Backends(), metavar="BACKEND",
                   help="backend of a Fractal session (default: [agent] backend); another agent's session always "
                        "runs its [sources.<name>] send")
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

    p = add("trash", "list (without an ACTION: this workspace's), restore or purge trashed sessions")
    trash = p.add_subparsers(dest="trash_command", parser_class=_Parser, metavar="ACTION")
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

    p = add("continue", "continue a session in another agent: its history written as a new session of that agent "
                        "(the source is never changed)")
    p.add_argument("id")
    p.add_argument("--to", required=True, dest="target", choices=_Sources(), metavar="AGENT",
                   help="the agent to continue in")
    p.add_argument("--dry-run", action="store_true", help="say what would be written; write nothing")
    p.add_argument("--brief", action="store_true",
                   help="instead of the whole history, a new session whose first message is a brief of it (built "
                        "without any model: prompts, last turns, decisions quoted, files with whether they changed "
                        "since), for the agent to verify")
    p.add_argument("--budget", type=int, metavar="N",
                   help="the brief's bound in the target's tokens (default: the smaller of a tenth of its window "
                        "and 8,000)")
    p.add_argument("--brief-file", metavar="F", help="start from this brief (an edited --print; - for stdin)")
    p.add_argument("--print", action="store_true", help="print the brief and write nothing")
    p.add_argument("--fresh", action="store_true",
                   help="write the whole history again, not on top of the last continuation in that agent")

    p = add("pick", "choose a session in the TUI and print its id (exit 1 if cancelled)")
    printed = p.add_mutually_exclusive_group()
    printed.add_argument("--args", action="store_true",
                         help="print the resume arguments after the program name, for the picked session's agent "
                              "(`--workspace DIR --resume ID` for Fractal, `--resume ID` for Claude Code)")
    printed.add_argument("--command", action="store_true", dest="whole_command",
                         help="print the whole shell-quoted resume line (`cd DIR && claude --resume ID`)")

    p = add("keep", "copy a session into Reprise's archive, out of reach of its agent's clean-up (an agent "
                    "that deletes sessions by age: `reprise doctor` says which)")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("id", nargs="?", help="the session to keep")
    group.add_argument("--due", type=float, nargs="?", const=7.0, metavar="DAYS",
                       help="keep every session, in every folder, that its agent deletes within DAYS (default 7)")

    p = add("search", "full-text search over every turn")
    p.add_argument("query", nargs="+")
    p.add_argument("--all", action="store_true", help="all workspaces")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--no-index", action="store_true", dest="no_index",
                   help="scan the files without the search index, and build none (as `[search] index = false`)")

    add("workspaces", "all known workspaces")
    add("config", "the effective configuration and where each value came from")
    p = add("doctor", "check the whole store")
    p.add_argument("--clean", action="store_true", help="remove temp files older than 10 minutes")
    return parser
