"""The Textual app run from the command line: the browse screen (`reprise` without a subcommand),
whose resume hands the terminal to the agent, and the picker (`pick`, `resume` without an id)."""

from __future__ import annotations

import contextlib
import gc
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reprise.core import faults, scan_pool
from reprise.core.gc_pauses import no_gc_pauses

from ..first_rows import FirstRows
from ..lazy import lazy_module
from ..stdio import on_terminal, settle_outputs
from ..text import safe_line
from . import agent_handoff
from .arguments import TopArguments
from .output import is_terminal, note

if TYPE_CHECKING:
    from reprise.core import service as core_service
    from reprise.core.service import Service

    from ..first_frame import Shown
    from ..screens.main import Picked
else:
    core_service = lazy_module("reprise.core.service")


FIRST_FRAME_WAIT_S = 0.3   # how long the stored rows are waited for before Textual is imported without them


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """No cyclic garbage collection while the service (or the TUI) is imported and built, and what that
    made frozen out of later collections: it lives until exit, and scanning it for cycles cost a listing
    15 ms. The command itself runs with collection on."""
    with no_gc_pauses():
        try:
            yield
        finally:
            gc.freeze()


def open_tui(top: TopArguments, state_dir: str | None, workspace: str | None) -> int:
    """The browse screen; a resume chosen there replaces this process with the agent, its notes shown first."""
    scan_pool.lower_priority()   # the UI keeps a core while a cold listing reads in worker processes
    with _first_frame_held() as held:
        with no_collection():
            service = core_service.Service.from_environment(state_dir=state_dir, workspace=workspace,
                                                            parallel_scan=True)
            first_rows = FirstRows(service)   # the workspace's stored rows, read in a thread
            held.shown = _first_frame(service, first_rows)
            from ..app import make_app
            from ..ending import Ending
            from ..screens.main import Handoff

            agent = top.agent or ("echo" if top.demo else None)
            ending = Ending(last_resort=True)
            app = make_app(service, agent=agent, demo=top.demo, ending=ending, first_rows=first_rows)
        with on_terminal("reprise"):
            held.app_starts()
            ending.save_terminal()
            result = app.run()
    if app.exit_signal is not None:  # after a closed terminal's SIGHUP, the audit log has the line
        if app.signal_line and not (app.exit_signal == signal.SIGHUP and is_terminal(sys.stderr)):
            with contextlib.suppress(OSError, ValueError):
                print(safe_line(app.signal_line), file=sys.stderr, flush=True)
        settle_outputs()
        ending.said.set()
        return app.return_code or 1
    if isinstance(result, Handoff):
        for each in result.said:
            note(each)
        if not agent_handoff.read_before_start(result.notes, result.argv[0]):
            return 1
        agent_handoff.exec_handoff(result.argv, result.cwd)
    return 0


@dataclass(slots=True)
class _Held:
    shown: Shown | None = None   # the first frame, once written

    def app_starts(self) -> None:
        if self.shown is not None:
            self.shown.app_starts()


@contextlib.contextmanager
def _first_frame_held() -> Iterator[_Held]:
    """The first frame held until the app has ended: an error, or a signal before the app takes the
    signals, gives the terminal back (`Shown.withdraw`); then the frame's guard is given back."""
    held = _Held()
    try:
        yield held
    except BaseException:
        if held.shown is not None:   # the app did not start, or did not end as it should
            held.shown.withdraw()
        raise
    finally:
        if held.shown is not None:   # the app took the signals once mounted, and gave the frame's guard back
            held.shown.hand_over()


def _first_frame(service: Service, first_rows: FirstRows, *, picking: bool = False) -> Shown | None:
    """The main screen's first frame (`picking`: a picker's) drawn from the stored rows before
    Textual is imported (`first_frame.py`), when it was."""
    from .. import first_frame  # Rich's colours: not for the commands that print

    if not first_rows.wait(FIRST_FRAME_WAIT_S):
        return None   # a catalog held by another process: Textual is imported meanwhile instead
    try:
        rows = first_rows.rows()
    except Exception:   # noqa: BLE001 - the app reads them again and reports why they could not be read
        return None
    shown = first_frame.paint(service, rows, picking=picking)
    if shown is not None:
        faults.point("tui_first_frame")
    return shown


def pick(service: Service, command: str) -> Picked | None:
    """The session chosen in the TUI's picker, or None when it was cancelled; its first frame drawn
    before Textual is imported, as the browse screen's is."""
    scan_pool.lower_priority()
    with on_terminal(command), _first_frame_held() as held:   # what is printed after goes to the original stdout
        with no_collection():
            first_rows = FirstRows(service)
            held.shown = _first_frame(service, first_rows, picking=True)
            from ..app import make_app
            from ..ending import Ending
            from ..screens.main import Picked

            ending = Ending(last_resort=True)
            app = make_app(service, mode="pick", ending=ending, first_rows=first_rows)
        held.app_starts()
        ending.save_terminal()
        result = app.run()
    if app.exit_signal is not None:
        settle_outputs()
        ending.said.set()   # the picker says nothing on a signal: it ends with the signal's status
        raise SystemExit(app.return_code or 1)
    return result if isinstance(result, Picked) else None
