"""The meter against what a live Fractal turn really sends: `reprise meter --json` (same
message, same model) beside the first request the fake server received, counted with
o200k_base and OpenAI's chat framing. Shared by the test and by `python -m
tests.compat.live.measure`, which prints the table of docs/benchmarks.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import sessions
from .harness import MODEL, LiveFractal, Turn, chat_tokens

SIZES = (0, 5, 60)
SHORT_MESSAGE = "Please run the tests and fix whatever fails."
LONG_CHARS = 14_000


def long_message(chars: int = LONG_CHARS) -> str:
    """A pasted bug report of `chars` characters: prose, a traceback, a log."""
    block = ("The importer fails on files with a byte-order mark; here is what I see when I run it on the "
             "March export:\n\nTraceback (most recent call last):\n  File \"importer/cli.py\", line 88, in main\n"
             "    rows = load(path)\n  File \"importer/load.py\", line 41, in load\n    header = next(reader)\n"
             "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0\n\n"
             "2026-03-02 10:14:07 INFO reading export-03.csv (48,210 rows)\n"
             "2026-03-02 10:14:07 WARN column 'amount' has 12 empty cells\n\n")
    text = ""
    while len(text) < chars:
        text += block
    return text[:chars].rstrip() + "\nPlease fix it and add a test."


@dataclass(frozen=True, slots=True)
class Row:
    turns: int
    message_chars: int
    meter: int
    real: int
    counted: int  # the meter's counted parts (everything but the configured overhead)

    @property
    def gap(self) -> float:
        return (self.meter - self.real) / self.real

    @property
    def fixed(self) -> int:
        """The real request minus the meter's counted parts: the fixed text, measured."""
        return self.real - self.counted


def reprise_meter(session_id: str, message: str, workspace: Path) -> dict:
    exe = Path(sys.executable).with_name("reprise")
    message_file = workspace.parent / f"message-{session_id}.txt"
    message_file.write_text(message, encoding="utf-8")
    done = subprocess.run([str(exe), "meter", session_id, "--message-file", str(message_file), "--model", MODEL,
                           "--json"], check=False, capture_output=True, text=True, cwd=workspace, env=dict(os.environ),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def measure(fractal, live: LiveFractal) -> list[Row]:
    """One real turn per (session size, message length), each on its own copy of the session."""
    workspace = live.root / "ws-meter"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text(sessions.AGENTS_MD, encoding="utf-8")
    cases = []
    for size in SIZES:
        for message in (SHORT_MESSAGE, long_message()):
            session_id = sessions.write(fractal, workspace, size, seed=size)
            cases.append((size, message, session_id, reprise_meter(session_id, message, workspace)))
    results = live.run([Turn(workspace, message, session_id) for _, message, session_id, _ in cases])
    rows = []
    for (size, message, _, meter), result in zip(cases, results, strict=True):
        assert result.returncode == 0 and result.output.get("status") == "succeeded", result.describe()
        assert result.requests, "the fake server received no request"
        counted = sum(part["tokens"] or 0 for part in meter["parts"] if part["basis"] == "counted")
        rows.append(Row(size, len(message), meter["total"], chat_tokens(result.requests[0]), counted))
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| session | message | meter | real request | gap |", "| --- | --- | ---: | ---: | ---: |"]
    for row in rows:
        lines.append(f"| {row.turns} turns | {row.message_chars:,} chars | {row.meter:,} | {row.real:,} | "
                     f"{row.gap:+.2%} |")
    return "\n".join(lines)
