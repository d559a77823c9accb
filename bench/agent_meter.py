"""The meter of a big Claude Code session and a big Codex rollout (20 MB each, in the byte form the
real clients write: the Claude session is one the real client began, with its request log, grown
by bench/claude_store.py's turns; the rollout is bench/codex_store.py's): the first full count
after the file is read, and the cost of a keystroke in the composer.

- First count: `prepare_meter(opened).with_message("")` on the session `source.open` read (the
  read timed apart, so the figure is the meter's own work). Both `via` ways are timed. The
  baseline is the naive meter: every message's text in the file counted with o200k_base.
- Keystrokes: each text is the previous one plus one typed character at the end of a
  2,000-token message; ours is `LiveMeter.with_message(text)` on a meter prepared once; the
  baseline counts the whole draft afresh with tiktoken (no cache).
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from . import stores
from .meter import keystrokes, long_message, p95

USES_STORE = False   # builds its two sessions itself
SIZE = 20 * 2**20
KEYSTROKES, REPEATS = 40, 5
FIRST_COUNT_TARGET_MS = 300.0
KEY_TARGET_MS = 5.0


REAL_CLAUDE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "claude-meter"


def claude_session_file(root: Path, size: int = SIZE) -> tuple[Path, str, str]:
    """A session the real Claude Code began (its request log, which the meter calibrates on, is real:
    tests/fixtures/claude-meter), grown to `size` by turns in the generator's byte form, under the
    config folder `root`: its path, id and folder."""
    from . import claude_store

    real = next(REAL_CLAUDE.glob("*.jsonl"))
    cwd = next(json.loads(line)["cwd"] for line in real.read_text().splitlines() if '"cwd"' in line)
    folder = root / "projects" / claude_store.slug(cwd)
    folder.mkdir(parents=True)
    path = folder / real.name
    path.write_bytes(real.read_bytes())
    pools = claude_store._Pools(1)
    turn = 0
    while path.stat().st_size < size:
        turn += 1
        claude_store.append_turn(path, seed=turn, budget=400_000, pools=pools)
    return path, real.stem, cwd


def codex_session_file(root: Path, cwd: str, size: int = SIZE) -> tuple[Path, str]:
    """A Codex rollout of `size` bytes run in `cwd`, under the Codex home `root`: its path and id."""
    from . import codex_store

    rng = random.Random("agent-meter")
    session_id = "019a0000-0000-7000-8000-000000000001"
    start = time.time() - 86400
    path = codex_store.path_of(root, {"session_id": session_id, "start": start, "archived": False})
    codex_store.write_rollout(path, codex_store._Templates(), stores._Text(rng, stores._corpus(1)), rng, target=size,
                              session_id=session_id, cwd=cwd, start=start, source="cli")
    return path, session_id


def _claude_service(scratch: Path):
    from . import codex_listing

    root = scratch / "claude"
    _, session_id, _ = claude_session_file(root)
    (scratch / "state").mkdir()
    service = codex_listing.service(scratch / "state", root, None, scratch / "cache", str(scratch))
    return service, session_id


def _codex_service(scratch: Path):
    from . import codex_listing

    root = scratch / "codex"
    _, session_id = codex_session_file(root, str(scratch))
    (scratch / "state").mkdir()
    return codex_listing.service(scratch / "state", None, root, scratch / "cache", str(scratch)), session_id


def _naive_count(path: Path) -> tuple[float, int]:
    """Seconds and tokens: every string under a record's `message` or `payload` counted with o200k."""
    from reprise.core import tokens

    texts: list[str] = []

    def walk(value) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for raw in path.read_bytes().splitlines():
        record = json.loads(raw)
        walk(record.get("message") or record.get("payload"))
    started = time.perf_counter()
    total = sum(tokens.count_tokens(text, "o200k_base") for text in texts)
    return time.perf_counter() - started, total


def measure(agent: str) -> dict:
    from reprise.core import tokens
    from reprise.core.meter import RESUME, SEND

    tokens.count_tokens("warm", "o200k_base")   # the encoding loaded before anything is timed
    with tempfile.TemporaryDirectory(prefix="reprise-bench-meter-") as name:
        scratch = Path(name)
        (scratch / "cache").mkdir()
        service, session_id = (_claude_service if agent == "claude" else _codex_service)(scratch)
        rows = service.list_sessions(all_workspaces=True).rows
        row = next(r for r in rows if r.source == agent and r.ref is not None and r.ref.session_id == session_id)
        assert row.ref is not None
        source = service.source(row.ref)
        path = Path(service.session_path(row.ref))
        reads, firsts, resumes = [], [], []
        for _ in range(REPEATS):
            started = time.perf_counter()
            opened = source.open(row.ref)
            read = time.perf_counter()
            first = source.prepare_meter(opened, None, via=SEND).with_message("")
            counted = time.perf_counter()
            resumed = source.prepare_meter(opened, None, via=RESUME).with_message("")
            reads.append(read - started)
            firsts.append(counted - read)
            resumes.append(time.perf_counter() - counted)
        message = long_message(2_000)
        live = source.prepare_meter(opened, None, via=SEND)
        live.with_message(message)
        keys, base_keys = [], []
        for index in range(REPEATS):
            for text in keystrokes(message, KEYSTROKES, seed=index):
                started = time.perf_counter()
                live.with_message(text)
                keys.append(time.perf_counter() - started)
            for text in keystrokes(message, KEYSTROKES, seed=100 + index):
                started = time.perf_counter()
                tokens.count_tokens(text, "o200k_base")
                base_keys.append(time.perf_counter() - started)
        naive_seconds, naive_tokens = _naive_count(path)
        return {"bytes": path.stat().st_size, "read": reads, "first": firsts, "resume": resumes, "keys": keys,
                "base_keys": base_keys, "naive": naive_seconds, "naive_tokens": naive_tokens,
                "total": first.total, "resume_total": resumed.total,
                "parts": [(part.name, part.tokens, part.basis) for part in first.parts]}


def run(store, report, *, quick: bool, log) -> None:
    section = report.section("agent_meter", "Claude Code and Codex meter: a 20 MB session")
    for agent, label in (("claude", "Claude Code"), ("codex", "Codex")):
        log(f"  {label}: writing a {SIZE // 2**20} MB session and metering it")
        data = measure(agent)
        first, key = statistics.median(data["first"]) * 1000, statistics.median(data["keys"]) * 1000
        section.row(f"{label}: first full count after the file is read (median of {REPEATS})", f"{first:.1f} ms",
                    f"{data['naive'] * 1000:.0f} ms", f"{data['naive'] * 1000 / max(first, 1e-6):.0f}×",
                    f"< {FIRST_COUNT_TARGET_MS:.0f} ms", first < FIRST_COUNT_TARGET_MS)
        section.row(f"{label}: the same with --via resume", f"{statistics.median(data['resume']) * 1000:.1f} ms")
        section.row(f"{label}: the file read before it (`source.open`, the meter's inputs built with it)",
                    f"{statistics.median(data['read']) * 1000:.0f} ms")
        section.row(f"{label}: keystroke, 2,000-token draft: median", f"{key:.3f} ms",
                    f"{statistics.median(data['base_keys']) * 1000:.3f} ms", "", f"< {KEY_TARGET_MS:.0f} ms",
                    key < KEY_TARGET_MS)
        worst = p95(data["keys"]) * 1000
        section.row(f"{label}: keystroke: p95", f"{worst:.3f} ms", f"{p95(data['base_keys']) * 1000:.3f} ms", "",
                    f"< {KEY_TARGET_MS:.0f} ms", worst < KEY_TARGET_MS)
        parts = ", ".join(f"{name} {tokens_:,} ({basis})" for name, tokens_, basis in data["parts"])
        section.note(f"{label}: file {data['bytes']:,} bytes; meter total "
                     f"{data['total']:,} (via resume {data['resume_total']:,}): {parts}; baseline: every string "
                     f"of the records' message/payload counted with o200k_base ({data['naive_tokens']:,} tokens), "
                     "and per keystroke the whole draft counted afresh.")
