"""The meter against the next request the real Gemini CLI sends (issue 29), case by case.

Every case is a session the real client makes (sessions.py) against the fake server, whose
`promptTokenCount` is its own o200k_base count of each request (fake_gemini.py `request_tokens`; the
client records it as `tokens.input`), each in its own folder: one turn; a shell tool call (`--yolo`:
a headless run offers no shell tool without it); three turns (`--resume latest`), one of them with a
thought in its reply; a fork Reprise wrote of that session (`reprise trim ID --fork --drop 2`) that
no call has measured; and one turn typed into the interactive TUI (`gemini --resume ID` under tmux,
tui_drive.py). Then Reprise's meter is read
(`reprise meter ID --json --via VIA --message-file F`) and the client sends that draft: `via=send`
as Reprise's `[sources.gemini] send` runs it (`gemini --resume ID --output-format json -p ""`, the
draft on stdin), `via=resume` typed into the TUI. The error is the meter's total
against the fake's count of the request the client then sent.

    python -m tests.compat.gemini.meter_cases      # prints the table rows for docs/benchmarks.md
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprise.core.meter import RESUME, SEND
from reprise.core.sources.gemini.settings import SEND as SEND_ARGV
from reprise.tui import cli

from . import fake_gemini
from .sessions import BASH_COMMAND, DEV_BIN, LiveGemini, Step, StepResult, find_gemini_bin, make_root, node, remove_root

TUI_DRIVER = Path(__file__).resolve().with_name("tui_drive.py")
TOLERANCE = 0.01
SHORT, LONG = 40, 14_000
YOLO = ("--yolo",)
RUN = f"Please RUN: {BASH_COMMAND}"


def draft(length: int, mark: str) -> str:
    """A draft of exactly `length` characters on one line, starting with its MARK word."""
    text = (f"MARK{mark} " + "and please keep every word of this draft in mind " * (length // 40 + 1))[:length]
    return text[:-1] + "." if text.endswith(" ") else text


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    turns: list[tuple[str, tuple[str, ...]]]   # (prompt, options) of each headless turn, in order
    via: str
    draft: str
    fork_of: int | None = None    # meter and send a fork Reprise wrote of that case's session (its 2nd turn dropped)

    @property
    def folder(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.name.lower()).strip("-")


THREE = [("Start MARKt1", ()), ("THINK on MARKt2", ()), ("Finish MARKt3", ())]
CASES = [
    Case("one turn", [("Hello MARKone", ())], SEND, draft(SHORT, "one")),
    Case("after a shell tool call", [(RUN, YOLO)], SEND, draft(SHORT, "shell")),
    Case("three turns, a thought", THREE, SEND, draft(LONG, "three")),
    Case("a fork, no call since", [], SEND, draft(SHORT, "fork"), fork_of=2),
    Case("one turn", [("Hello MARKtuione", ())], RESUME, draft(SHORT, "typed")),
]


@dataclass(slots=True)
class Outcome:
    case: Case
    session_id: str         # the session metered and sent to (the fork's, for a fork)
    meter: dict[str, Any]   # `reprise meter ID --json --via VIA --message-file F`, read before the turn
    request: dict           # the request the client sent with the draft
    setup: list[dict] = field(default_factory=list)   # the turn requests the case's own turns sent

    def part(self, name: str) -> dict[str, Any]:
        return next(part for part in self.meter["parts"] if part["name"] == name)

    @property
    def sent(self) -> int:
        return fake_gemini.request_tokens(self.request)

    @property
    def error(self) -> float:
        return (self.meter["total"] - self.sent) / self.sent

    def row(self) -> str:
        parts = ", ".join(f"{part['name']} {part['tokens']:,}" for part in self.meter["parts"] if part["tokens"])
        return (f"| {self.case.name} | {len(self.case.draft):,} | {self.case.via} | {self.meter['total']:,} "
                f"({parts}) | {self.sent:,} | {100 * self.error:+.2f}% |")


@contextmanager
def gemini_home(live: LiveGemini) -> Iterator[None]:
    saved = os.environ.get("GEMINI_CLI_HOME")
    os.environ["GEMINI_CLI_HOME"] = str(live.home)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("GEMINI_CLI_HOME", None)
        else:
            os.environ["GEMINI_CLI_HOME"] = saved


def reprise(live: LiveGemini, *argv: str) -> dict[str, Any]:
    """`reprise ARGV --json` in process, on the live store; its JSON."""
    out = io.StringIO()
    with gemini_home(live), redirect_stdout(out):
        status = cli.main([*argv, "--json", "--state-dir", str(live.root / "reprise-state")])
    if status != 0:
        raise AssertionError(f"reprise {' '.join(argv)} exited {status}: {out.getvalue()}")
    return dict(json.loads(out.getvalue()))


def read_meter(live: LiveGemini, folder: Path, session_id: str, message: str, via: str) -> dict[str, Any]:
    draft_file = live.root / f"draft-{session_id}.txt"
    draft_file.write_text(message)
    return reprise(live, "meter", session_id, "--via", via, "--message-file", str(draft_file), "--workspace",
                   str(folder))


class TuiStep(Step):
    """`gemini --resume ID` typed into under tmux by tui_drive.py (in the batch's namespace)."""

    def __init__(self, live: LiveGemini, session_id: str, message: str, cwd: Path):
        record = live.root / "batches" / f"{live.batches + 1:02d}" / "requests"
        super().__init__([str(TUI_DRIVER), "--record", str(record), "--socket",
                          str(live.root / f"tmux-{session_id[:8]}.sock"), "--message", message, "--"], cwd,
                         label=f"tui {session_id}")
        self.session_id = session_id

    def argv(self, binary: Path) -> list[str]:
        return [sys.executable, *self.args, node(), str(binary), "--resume", self.session_id]


def send_step(session_id: str, message: str, cwd: Path) -> Step:
    """Reprise's `[sources.gemini] send` (its default), the draft on stdin."""
    args = [arg.replace("{session_id}", session_id) for arg in SEND_ARGV[1:]]
    return Step(args, cwd, stdin=message, label=f"send {session_id}")


def ok(result: StepResult) -> StepResult:
    if result.returncode != 0:
        raise AssertionError(f"a client run failed: {result.describe()}")
    return result


def the_request(result: StepResult, message: str) -> dict:
    found = [body for body in result.turns if fake_gemini.last_prompt(body) == message]
    if not found:
        raise AssertionError(f"no request sent the draft: {result.describe()}")
    return found[-1]


def run_cases(binary: Path, root: Path, cases: list[Case] = CASES) -> list[Outcome]:
    """Make every case's session, read the meter, send the draft; the outcomes in case order."""
    live = LiveGemini(binary, root)
    own = {index: live.folder(f"{index:02d}-{case.folder}") for index, case in enumerate(cases) if case.fork_of is None}
    folders = [own[index if case.fork_of is None else case.fork_of] for index, case in enumerate(cases)]
    setup = [(index, Step(["--output-format", "json", *options, *(["--resume", "latest"] if number else []),
                           "-p", prompt], folders[index], label=f"{case.name}: {number + 1}"))
             for index, case in enumerate(cases) for number, (prompt, options) in enumerate(case.turns)]
    ids: dict[int, str] = {}
    made: dict[int, list[dict]] = {}
    for (index, _), result in zip(setup, live.run([step for _, step in setup], timeout=180), strict=True):
        session_id = ok(result).session_id
        if session_id is None or ids.setdefault(index, session_id) != session_id:
            raise AssertionError(f"`--resume latest` continued another session: {result.describe()}")
        made.setdefault(index, []).extend(result.turns)
    for index, case in enumerate(cases):
        if case.fork_of is not None:    # beside its original, in the same folder
            ids[index] = reprise(live, "trim", ids[case.fork_of], "--fork", "--drop", "2")["session_id"]
    meters = [read_meter(live, folders[index], ids[index], case.draft, case.via) for index, case in enumerate(cases)]
    sends = [send_step(ids[index], case.draft, folders[index]) if case.via == SEND else
             TuiStep(live, ids[index], case.draft, folders[index]) for index, case in enumerate(cases)]
    results = live.run(sends, env={"TERM": "xterm-256color"}, timeout=240)   # the TUI wants a terminal
    return [Outcome(case, ids[index], meter, the_request(ok(result), case.draft), made.get(index, []))
            for index, (case, meter, result) in enumerate(zip(cases, meters, results, strict=True))]


HEADER = ("| case | draft | via | meter | client's request | error |\n"
          "|---|---:|---|---|---:|---:|")


if __name__ == "__main__":
    where = make_root()
    try:
        found = run_cases(find_gemini_bin() or DEV_BIN, where)
        print(HEADER)
        for outcome in found:
            print(outcome.row())
    finally:
        if "--keep" in sys.argv:
            print(where)
        else:
            remove_root(where)
