"""The meter against the next request the real Codex CLI sends (issue 25), case by case.

Every case is a session the real client makes against the fake server's counting mode
(fake_openai.py: a request's usage is one o200k count of what it sends, so the client's own
`last_token_usage` is that count too), each in its own folder (`codex exec resume --last` there
finds it): 1, 5 and 20 turns with commands, a 10,000-character command output, a 4,000-character
last reply, reasoning in the replies, an auto-compaction (`-c model_auto_compact_token_limit=5000`)
and a `/compact` typed in the TUI (under tmux, tui_drive.py). Then Reprise's meter is read
(`reprise meter ID --json --via VIA --message-file F`), and the client sends that draft: `via=send`
as Reprise's `[sources.codex] send` does (`codex exec --json --skip-git-repo-check resume ID -`,
the draft on stdin), `via=resume` typed (a long one pasted) into `codex resume ID`'s TUI. The error
is the meter's total against the fake's count of the request the client then sent.

    python -m tests.compat.codex.meter_cases      # prints the table rows for docs/benchmarks.md
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprise.core.meter import RESUME, SEND
from reprise.tui import cli

from . import fake_openai
from .sessions import COUNTING_CONFIG, EXEC, HERE, LiveCodex, Step, StepResult, find_codex_bin, make_root, remove_root

TUI_DRIVER = HERE / "tui_drive.py"
TOLERANCE = 0.01
BIG_OUTPUT = "python3 -c \"print('y' * 10000)\""
COMPACT_LIMIT = ["-c", "model_auto_compact_token_limit=5000"]


def draft(length: int, mark: str) -> str:
    """A draft of exactly `length` characters on one line, starting with its MARK word."""
    text = (f"MARK{mark} " + "and please keep every word of this draft in mind " * (length // 40 + 1))[:length]
    return text[:-1] + "." if text.endswith(" ") else text


def prompts(count: int, *, every: int = 0) -> list[str]:
    """`count` prompts; every `every`-th one runs a command (a tool call and its output)."""
    return [f"Step {n} MARKstep{n}" + (f" RUN: echo line{n} && echo more{n}" if every and n % every == 0 else "")
            for n in range(1, count + 1)]


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    turns: list[str]                   # the prompts made by `codex exec` (each after the first: resume --last)
    via: str
    draft: str
    compact_in_tui: bool = False       # then `/compact` typed in `codex resume ID`'s TUI
    compact_last: bool = False         # the last turn with a 5,000-token auto-compaction limit

    @property
    def folder(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.name.lower()).strip("-")


SHORT, LONG = 40, 14_000
CASES = [
    Case("1 turn, with a command", prompts(1, every=1), SEND, draft(SHORT, "one")),
    Case("5 turns, with commands", prompts(5, every=2), SEND, draft(SHORT, "five")),
    Case("20 turns, with commands", prompts(20, every=3), SEND, draft(LONG, "twenty")),
    Case("10,000-character command output", [f"Show it MARKbig RUN: {BIG_OUTPUT}"], SEND, draft(SHORT, "big")),
    Case("4,000-character last reply", ["Hello MARKhello", "Tell me at length MARKlong LONGREPLY"], SEND,
         draft(SHORT, "afterlong")),
    Case("reasoning in the replies", ["THINK first MARKthink1", "THINK then MARKthink2 RUN: echo thought"], SEND,
         draft(SHORT, "afterthink")),
    Case("after an auto-compaction", ["Remember MARKteal", "And MARKhexagon", "Go on MARKcompacted"], SEND,
         draft(SHORT, "aftercompact"), compact_last=True),
    Case("after /compact in the TUI", ["Remember MARKred", "And MARKsquare"], SEND, draft(SHORT, "aftertui"),
         compact_in_tui=True),
    Case("after /compact in the TUI", ["Remember MARKblue", "And MARKcircle"], RESUME, draft(SHORT, "tuiagain"),
         compact_in_tui=True),
    Case("5 turns, with commands", prompts(5, every=2), RESUME, draft(SHORT, "typed")),
    Case("4,000-character last reply", ["Hello MARKhi", "At length MARKlength LONGREPLY THINK"], RESUME,
         draft(LONG, "pasted")),
]


@dataclass(frozen=True, slots=True)
class Outcome:
    case: Case
    session_id: str
    meter: dict[str, Any]   # `reprise meter ID --json --via VIA --message-file F`, read before the turn
    request: dict           # the request the client sent with the draft

    def part(self, name: str) -> dict[str, Any]:
        return next(part for part in self.meter["parts"] if part["name"] == name)

    @property
    def sent(self) -> int:
        return fake_openai.request_tokens(self.request)

    @property
    def error(self) -> float:
        return (self.meter["total"] - self.sent) / self.sent

    def row(self) -> str:
        parts = ", ".join(f"{part['name']} {part['tokens']:,}" for part in self.meter["parts"] if part["tokens"])
        return (f"| {self.case.name} | {len(self.case.draft):,} | {self.case.via} | {self.meter['total']:,} "
                f"({parts}) | {self.sent:,} | {100 * self.error:+.2f}% |")


@contextmanager
def codex_home(live: LiveCodex) -> Iterator[None]:
    saved = os.environ.get("CODEX_HOME")
    os.environ["CODEX_HOME"] = str(live.codex_home)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("CODEX_HOME", None)
        else:
            os.environ["CODEX_HOME"] = saved


def read_meter(live: LiveCodex, folder: Path, session_id: str, message: str, via: str) -> dict[str, Any]:
    """`reprise meter ID --json --via VIA --message-file F` of the session (in process), from its folder."""
    draft_file = live.root / f"draft-{session_id}.txt"
    draft_file.write_text(message)
    out = io.StringIO()
    with codex_home(live), redirect_stdout(out):
        status = cli.main(["meter", session_id, "--json", "--via", via, "--message-file", str(draft_file),
                           "--workspace", str(folder), "--state-dir", str(live.root / "reprise-state")])
    if status != 0:
        raise AssertionError(f"reprise meter exited {status}: {out.getvalue()}")
    return dict(json.loads(out.getvalue()))


def tui_step(live: LiveCodex, folder: Path, session_id: str, steps: list[str]) -> Step:
    """A run of tui_drive.py (in the batch's namespace) typing `steps` into `codex resume ID`."""
    record = live.root / "batches" / f"{live.batches + 1:02d}" / "requests"
    return Step([str(TUI_DRIVER), "--record", str(record), "--binary", str(live.binary),
                 "--socket", str(live.root / f"tmux-{session_id[:8]}.sock"), *[f"--step={s}" for s in steps],
                 "--", "resume", session_id], folder, label=f"tui {session_id}")


def run_python(live: LiveCodex, steps: list[Step]) -> list[StepResult]:
    """Run steps whose argv is a Python script (the TUI driver) instead of the client."""
    binary = live.binary
    live.binary = Path(sys.executable)
    try:
        return live.run(steps, env={"TERM": "xterm-256color"}, timeout=300)
    finally:
        live.binary = binary


def ok(result: StepResult) -> StepResult:
    if result.returncode != 0:
        raise AssertionError(f"a client run failed: {result.describe()}")
    return result


def the_request(result: StepResult, message: str) -> dict:
    """The request of the run that sent `message` as its newest prompt (not the TUI's title request)."""
    found = [body for body in result.responses if fake_openai.last_prompt(body) == message]
    if not found:
        raise AssertionError(f"no request sent the draft: {result.describe()}")
    return found[0]


def run_cases(binary: Path, root: Path, cases: list[Case] = CASES) -> list[Outcome]:
    """Make every case's session, read the meter, send the draft; the outcomes in case order."""
    live = LiveCodex(binary, root, config=COUNTING_CONFIG)
    folders = [root / "work" / f"{index:02d}-{case.folder}" for index, case in enumerate(cases)]
    for folder in folders:
        folder.mkdir(parents=True)
    setup = []
    for case, folder in zip(cases, folders, strict=True):
        for number, prompt in enumerate(case.turns):
            options = COMPACT_LIMIT if case.compact_last and number == len(case.turns) - 1 else []
            resume = ["resume", "--last"] if number else []
            setup.append(Step([*EXEC, *options, *resume, prompt], folder, label=f"{case.name}: {number + 1}"))
    ids = {}
    for step, result in zip(setup, live.run(setup, timeout=180), strict=True):
        ids.setdefault(step.cwd, ok(result).thread_id)
        if result.thread_id != ids[step.cwd]:
            raise AssertionError(f"`resume --last` continued another session: {result.describe()}")
    compacting = [tui_step(live, folder, ids[folder], ["compact"])
                  for case, folder in zip(cases, folders, strict=True) if case.compact_in_tui]
    for result in run_python(live, compacting) if compacting else []:
        driven = json.loads(ok(result).stdout.strip().splitlines()[-1])
        if driven["requests"] < 1:
            raise AssertionError(f"/compact sent no request: {driven}")
    meters = [read_meter(live, folder, ids[folder], case.draft, case.via)
              for case, folder in zip(cases, folders, strict=True)]
    sends = [Step([*EXEC, "resume", ids[folder], "-"], folder, stdin=case.draft, label=case.name)
             for case, folder in zip(cases, folders, strict=True) if case.via == SEND]
    sent = iter(live.run(sends, timeout=180))
    typed = [tui_step(live, folder, ids[folder], [("paste:" if len(case.draft) > 1_000 else "send:") + case.draft])
             for case, folder in zip(cases, folders, strict=True) if case.via == RESUME]
    typed_results = iter(run_python(live, typed) if typed else [])
    outcomes = []
    for case, folder, meter in zip(cases, folders, meters, strict=True):
        result = ok(next(sent) if case.via == SEND else next(typed_results))
        outcomes.append(Outcome(case, ids[folder], meter, the_request(result, case.draft)))
    return outcomes


HEADER = ("| case | draft | via | meter | client's request | error |\n"
          "|---|---:|---|---|---:|---:|")


if __name__ == "__main__":
    where = make_root()
    try:
        found = run_cases(find_codex_bin() or Path("codex"), where)
        print(HEADER)
        for outcome in found:
            print(outcome.row())
    finally:
        if "--keep" in sys.argv:
            print(where)
        else:
            remove_root(where)
