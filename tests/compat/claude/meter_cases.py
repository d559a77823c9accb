"""The Claude Code meter against the next request the real client sends (issue 25).

The real Claude Code (offline, in the launcher's namespace) makes one session per case against the
fake server in counting mode (fake_anthropic.py: reported usage is one count of what the model
sees, o200k x 1.15 plus a framing per message, so Reprise's own o200k count is off by 15% until it
calibrates). Each session is copied once per (draft, via) under a new id; Reprise meters the copy
with the draft (`reprise meter ID --json --via VIA --message-file F`); then the client sends that draft on the
copy, by `[sources.claude] send`'s command (`claude --resume ID -p --output-format json`, the draft
on stdin: what `reprise send` runs) or typed into its own UI after `claude --resume ID` on a pty.
The first model request of that turn, counted by the fake's own count, is the truth.

    python -m tests.compat.claude.meter_cases      # prints the table of docs/benchmarks.md
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from reprise.core.meter import RESUME, SEND
from reprise.tui import cli

from ..live.meter_compare import long_message
from . import fake_anthropic
from .sessions import JSON_OUT, LiveClaude, Step, StepResult, find_claude_bin

TOOLS = ["--allowedTools", "Bash"]
BIG_OUTPUT = "RUN: python3 -c 'print(\"x\" * 10000)'"
SHORT = "Please go on with the next step MARKnext"     # 40 characters
LONG = long_message(14_000)
DRAFTS = {"40": SHORT, "14,000": LONG}


def _turns(count: int) -> list[str]:
    """`count` prompts, every third one a tool call."""
    return [f"RUN: echo step {n}" if n % 3 == 2 else f"Turn {n} of the plan MARKt{n}" for n in range(1, count + 1)]


# case -> the prompts that make its session (each its own `-p` run, resumed)
CASES: dict[str, list[str]] = {
    "1 turn": _turns(1),
    "5 turns, tool calls": _turns(5),
    "20 turns, tool calls": _turns(20),
    "10,000-character tool output": ["Look at the folder MARKlook", BIG_OUTPUT],
    "4,000-character last reply": ["Explain the folder MARKexplain", "LONGREPLY please"],
    "after /compact (-p)": ["Remember the colour MARKteal", "RUN: echo tool", "And the shape MARKhexagon", "/compact"],
    "thinking in the replies": ["THINK about the folder MARKthink", "THINK again about it"],
}
VIAS = (SEND, RESUME)


@dataclass(frozen=True, slots=True)
class Row:
    case: str
    draft: str
    via: str
    meter: int
    real: int
    calibration: float | None

    @property
    def error(self) -> float:
        return (self.meter - self.real) / self.real

    def line(self) -> str:
        return (f"| {self.case} | {self.draft} | {self.via} | {self.meter:,} | {self.real:,} | "
                f"{100 * self.error:+.2f}% |")


def _id(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "reprise-meter/" + "/".join(parts)))


def first_call(result: StepResult) -> dict:
    """The first model request the step sent (not a token count)."""
    for body, path in zip(result.requests, result.request_paths, strict=True):
        if path.split("?", 1)[0].endswith("/v1/messages") and body.get("messages") and body.get("tools"):
            return body
    raise AssertionError(f"no model request: {result.describe()}")


def _copy(session_file: Path, old: str, new: str) -> Path:
    target = session_file.with_name(f"{new}.jsonl")
    target.write_bytes(session_file.read_bytes().replace(old.encode(), new.encode()))
    return target


def measure(root: Path, binary: Path, cases: dict[str, list[str]] = CASES, drafts: dict[str, str] = DRAFTS,
            vias: tuple[str, ...] = VIAS) -> list[Row]:
    """Make each case's session, meter each copy, send its turn; the rows."""
    live = LiveClaude(binary, root)
    folder = root / "work"
    folder.mkdir(parents=True, exist_ok=True)
    live.trust(folder)
    steps = []
    for case, prompts in cases.items():
        session = _id(case)
        for at, prompt in enumerate(prompts):
            start = ["--session-id", session] if at == 0 else ["--resume", session]
            steps.append(Step([*start, *TOOLS, "-p", prompt, *JSON_OUT], folder, label=f"{case}: {at + 1}"))
    for result in live.run(steps, counting=True):
        assert result.returncode == 0 and not result.output.get("is_error"), result.describe()
    with _reprise_env(root, live.config_dir):
        planned = _metered(live, folder, cases, drafts, vias)
    turns = live.run([step for *_, step in planned], counting=True)
    rows = []
    for (case, draft_name, via, document, _), turn in zip(planned, turns, strict=True):
        assert turn.returncode == 0, turn.describe()
        rows.append(Row(case, draft_name, via, document["total"], fake_anthropic.model_count(first_call(turn)),
                        document["calibration"]))
    return rows


@contextmanager
def _reprise_env(root: Path, config_dir: Path) -> Iterator[None]:
    """Reprise's paths under `root` and Claude Code's config dir, for the meters read in this process."""
    values = {"CLAUDE_CONFIG_DIR": str(config_dir), "REPRISE_CONFIG": str(root / "reprise" / "config.toml"),
              **{f"REPRISE_{name}_DIR": str(root / "reprise" / name.lower()) for name in ("STATE", "DATA", "CACHE")}}
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def reprise_meter(session_id: str, via: str, message_file: Path) -> dict:
    """`reprise meter ID --json --via VIA --message-file F`, run in this process: its JSON document."""
    out = io.StringIO()
    with redirect_stdout(out):
        status = cli.main(["meter", session_id, "--json", "--via", via, "--message-file", str(message_file)])
    assert status == 0, out.getvalue()
    return json.loads(out.getvalue())


def _metered(live: LiveClaude, folder: Path, cases: dict[str, list[str]], drafts: dict[str, str],
             vias: tuple[str, ...]) -> list[tuple[str, str, str, dict, Step]]:
    """Each case's session copied per (draft, via) and metered: (case, draft, via, `reprise meter`'s
    document, the turn's step)."""
    planned = []
    files = {}
    for name, draft in drafts.items():
        files[name] = live.root / f"draft-{len(draft)}.txt"
        files[name].write_text(draft, encoding="utf-8")
    for case in cases:
        [session_file] = live.config_dir.glob(f"projects/*/{_id(case)}.jsonl")
        for draft_name, draft in drafts.items():
            for via in vias:
                copy = _id(case, draft_name, via)
                _copy(session_file, _id(case), copy)
                document = reprise_meter(copy, via, files[draft_name])
                assert document["via"] == via
                step = Step(["--resume", copy, *TOOLS, "-p", *JSON_OUT], folder, stdin=draft,
                            label=f"{case} {draft_name} {via}") if via == SEND else \
                    Step(["--resume", copy], folder, label=f"{case} {draft_name} {via}", interactive=draft)
                planned.append((case, draft_name, via, document, step))
    return planned


def client_window(live: LiveClaude, folder: Path, model: str) -> tuple[str, int | None]:
    """What Claude Code's own `/context` shows for `model` (typed in its UI on a pty): its model id and
    window ("13.7k/1m tokens") and the total it compacts at (the window minus "Autocompact buffer: 33k"),
    None when it shows no buffer. Returns (the window as shown, the compaction point in tokens)."""
    [result] = live.run([Step(["--model", model], folder, label=f"/context {model}", interactive="/context")])
    screen = json.loads(result.stdout.strip().splitlines()[-1])["screen"].replace(" ", "")
    shown = re.search(r"[\d.]+k?/([\d.]+[km])tokens\(\d+%\)", screen)
    assert shown is not None and model in screen, screen[-3000:]
    buffer = re.search(r"Autocompactbuffer:([\d.]+)k", screen)
    window = shown_tokens(shown.group(1))
    return shown.group(1), window - shown_tokens(buffer.group(1) + "k") if buffer else None


def shown_tokens(shown: str) -> int:
    return round(float(shown[:-1]) * (1_000_000 if shown.endswith("m") else 1_000))


def table(rows: list[Row]) -> str:
    head = "| case | draft | via | meter | client's request | error |\n|---|---|---|---:|---:|---:|"
    return "\n".join([head, *(row.line() for row in rows)])


def main() -> int:
    binary = find_claude_bin()
    if binary is None:
        print("set REPRISE_CLAUDE_BIN", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="reprise-claude-meter-", dir="/tmp"))
    try:
        rows = measure(root, binary)
        print(table(rows))
        print(json.dumps({"calibration": sorted({round(r.calibration or 0, 4) for r in rows})}), file=sys.stderr)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
