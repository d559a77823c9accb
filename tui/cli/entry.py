"""Running one command: the subcommand named picks its parser, its arguments are read into their
typed object, the service is built, and what fails is said in one line with its exit status."""

from __future__ import annotations

import gc
import importlib
import os
import shutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reprise.core.errors import RepriseError
from reprise.core.progress import no_progress

from ..lazy import lazy_module
from ..progress_line import ProgressLine
from ..stdio import CLOSED_PIPE_STATUS, closed_outputs, quiet_closed_outputs
from ..text import safe_line
from .arguments import Command, TopArguments, read_arguments
from .output import is_terminal, note, print_error
from .parser import build_parser
from .tui_runs import no_collection, open_tui

if TYPE_CHECKING:
    from reprise.core import service as core_service
else:
    core_service = lazy_module("reprise.core.service")

# Each subcommand and the module of its group that runs it (its `COMMANDS`; a test checks they agree).
_MODULES = {
    **dict.fromkeys(("list", "show", "search"), "listing"),
    **dict.fromkeys(("resume", "new", "pick"), "resume"),
    **dict.fromkeys(("rename", "pin", "unpin"), "marks"),
    **dict.fromkeys(("send", "meter", "recover"), "turns"),
    **dict.fromkeys(("trim", "restore", "archive"), "trims"),
    "continue": "continuation",
    **dict.fromkeys(("rm", "trash", "prune", "keep"), "trash"),
    **dict.fromkeys(("workspaces", "relink", "audit", "config", "doctor"), "store"),
}


class _Commands(Mapping[str, Command[Any]]):
    """Every subcommand by name, its group's module imported when the command is first looked up: a
    run imports only the module of the command it runs (the others and what they import cost
    `reprise list` 15 ms)."""

    def __getitem__(self, name: str) -> Command[Any]:
        module = importlib.import_module(f"{__package__}.{_MODULES[name]}")
        command: Command[Any] = module.COMMANDS[name]
        return command

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)

    def __contains__(self, name: object) -> bool:
        return name in _MODULES


COMMANDS: Mapping[str, Command[Any]] = _Commands()


def main(argv: list[str] | None = None) -> int:
    """Run one command: of `argv`, else of this process's arguments, the process then ending (what was
    frozen at start (`no_collection`) stays frozen, out of the collection at exit: 20 ms)."""
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


def command_named(argv: list[str]) -> str | None:
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
    parser = build_parser(command_named(arguments))
    with no_collection():  # `--sort` imports the service for its keys
        namespace = parser.parse_args(arguments)
    top = read_arguments(TopArguments, namespace)
    as_json = top.json
    demo_root: Path | None = None
    try:
        state_dir, workspace = top.state_dir, top.workspace
        if top.demo:
            state_dir, workspace, demo_root = _demo_store()
        if top.command is None:
            return open_tui(top, state_dir, workspace)
        # How far a cold listing or a first search is, on a terminal only: never into a pipe or with --json.
        progress = ProgressLine(sys.stderr) if not as_json and is_terminal(sys.stderr) else None
        with no_collection():
            service = core_service.Service.from_environment(state_dir=state_dir, workspace=workspace,
                                                            parallel_scan=True, progress=progress or no_progress)
        for failure in service.load_failures:   # a source that did not load: one line each, the others work
            note(failure.line)
        try:
            return COMMANDS[top.command](service, namespace, as_json)
        finally:
            if progress is not None:
                progress.clear()
            for each in service.take_notices():  # the catalog was rebuilt or bypassed: one line each
                note(each)
            if argv is not None:   # the caller goes on (a test, a library): its catalog's files are let go now
                service.catalog.close()
    except RepriseError as exc:
        print_error(exc, as_json)
        return exc.exit_status
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # the disk said no (permissions, full, read-only): one line, not a traceback
        if isinstance(exc, BrokenPipeError) and closed_outputs():
            raise  # our own output is gone: main() ends quietly; no error document on a closed stdout
        error = RepriseError(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc),
                             path=exc.filename)
        print_error(error, as_json)
        return 1
    finally:   # the demo store goes with the run (an agent the TUI hands a demo session to replaced this process)
        if demo_root is not None:
            shutil.rmtree(demo_root, ignore_errors=True)


def _demo_store() -> tuple[str, str, Path]:
    """Build the demo store in a temporary folder and point every root at it, never at the user's
    own: its state root, workspace folder and the folder itself (removed when the run ends), for the
    TUI and every command (`reprise --demo list`)."""
    import tempfile

    from ..demo import build_demo_store

    root = Path(tempfile.mkdtemp(prefix="reprise-demo-"))
    folder, environment = build_demo_store(root)
    workspace = str(folder)
    os.environ["REPRISE_CACHE_DIR"] = str(root / "cache")
    # Each source's own store in the demo, its data folder and (absent) config: never the user's.
    os.environ.update(environment)
    os.environ["REPRISE_DATA_DIR"] = str(root / "data")
    os.environ["REPRISE_CONFIG"] = str(root / "config.toml")
    print(f"reprise: demo store in {safe_line(root)} (removed when this run ends)", file=sys.stderr)
    return str(root / "state"), workspace, root
