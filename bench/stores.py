"""Scale stores for the benchmarks: many Fractal session files, built quickly and
deterministically, cached under bench/.stores/ and reused while the parameters are unchanged.

Every file is what Fractal itself would write (`json.dumps(state, indent=2) + "\\n"`, keys in
model-field order, every RunTrace field present), so the real Fractal loads and re-dumps each
one byte for byte. The size of a file comes mostly from its history traces, shaped like
predict_rlm's RunTrace (steps with reasoning, code, outputs, tool calls, predict() calls, usage).

Bump GENERATOR_VERSION whenever the bytes this module writes change: the cache is keyed on
the parameters and that version.
"""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import os
import random
import shutil
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

GENERATOR_VERSION = 1
STORES_DIR = Path(__file__).resolve().parent / ".stores"
MAX_ITERATIONS_ERROR = "Reached max iterations before SUBMIT; response came from fallback extraction."
INTERRUPTED_ERROR = "Turn interrupted by user."
_EPOCH = datetime(2025, 9, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class StoreParams:
    name: str = "scale"
    sessions: int = 10_000
    workspaces: int = 50
    small_kb: tuple[int, int] = (20, 200)   # most files: log-uniform in this range
    large_kb: tuple[int, int] = (1024, 5 * 1024)   # about large_share of them
    large_share: float = 0.01
    max_turns: int = 60
    recorded_share: float = 0.5   # workspaces with a reprise/workspace.json
    seed: int = 20250901
    version: int = GENERATOR_VERSION

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


FULL = StoreParams()
QUICK = StoreParams(name="quick", sessions=1_000, workspaces=10)


@dataclass
class ScaleStore:
    """A built store: where it is and what is in it."""

    params: StoreParams
    dir: Path
    root: Path                                   # the state root (FRACTAL_STATE_HOME)
    workspaces: list[tuple[str, str]]            # (fake workspace path, workspace key)
    sessions: int
    total_bytes: int
    sizes: dict = field(default_factory=dict)    # size statistics
    statuses: dict = field(default_factory=dict)  # last-turn status counts
    per_workspace: dict = field(default_factory=dict)  # key -> session count
    build_seconds: float | None = None            # None: reused from the cache
    first_build_seconds: float | None = None      # how long building it took when it was built

    @property
    def workspace_paths(self) -> list[str]:
        return [path for path, _ in self.workspaces]

    def session_files(self) -> list[Path]:
        files = []
        for _, key in self.workspaces:
            files.extend(sorted((self.root / "workspaces" / key / "sessions").glob("*.json")))
        return files

    def describe(self) -> str:
        s = self.sizes
        return (f"{self.sessions:,} sessions in {len(self.workspaces)} workspaces, "
                f"{self.total_bytes / 2**30:.2f} GiB; file sizes median {s['median_kb']:.0f} KB, "
                f"{s['share_20_200kb']:.1%} in 20-200 KB, {s['count_1_5mb']} in 1-5 MB "
                f"(largest {s['max_kb'] / 1024:.1f} MB); last-turn statuses "
                + ", ".join(f"{k} {v}" for k, v in sorted(self.statuses.items())))


# --- text -------------------------------------------------------------------------------------

_WORDS = ("the session file trace agent tool call model output value error result token cache "
          "listing catalog workspace summary history turn iteration reasoning sandbox predict "
          "usage cost duration retry parse validate decode encode refresh index row column "
          "import path config setting module function class method return yield await async").split()
_UNICODE = ["é", "ü", "→", "✓", "—", "…", "😀", "中文", "ß", "π"]


def _corpus(seed: int, chars: int = 1 << 20) -> str:
    """A block of code-, log- and prose-like text that strings are sliced from."""
    rng = random.Random(seed)
    lines = []
    total = 0
    while total < chars:
        kind = rng.random()
        indent = " " * (4 * rng.randrange(4))
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(3, 14)))
        if kind < 0.35:
            name = "_".join(rng.sample(_WORDS, 2))
            line = f"{indent}{name} = {rng.choice(_WORDS)}({rng.randrange(1000)}, \"{words}\")"
        elif kind < 0.55:
            line = f"{indent}# {words}"
        elif kind < 0.75:
            line = f"[{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}] INFO {words}"
        elif kind < 0.8:
            line = f"{words} {rng.choice(_UNICODE)} \"quoted\" \\ tab\there"
        else:
            line = words.capitalize() + "."
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


class _Text:
    def __init__(self, rng: random.Random, corpus: str):
        self.rng = rng
        self.corpus = corpus

    def __call__(self, n: int) -> str:
        n = max(1, int(n))
        start = self.rng.randrange(0, len(self.corpus) - n) if n < len(self.corpus) else 0
        return self.corpus[start:start + n]

    def hex(self, bits: int = 128) -> str:
        return f"{self.rng.getrandbits(bits):0{bits // 4}x}"


# --- one session ------------------------------------------------------------------------------

def _token_usage(rng: random.Random, scale: int = 1) -> dict:
    inp = rng.randrange(500, 30_000) * scale
    out = rng.randrange(50, 3_000) * scale
    return {"input_tokens": inp, "output_tokens": out, "cost": round((inp * 1.25 + out * 10) / 1e6, 6),
            "cache_hits": rng.randrange(0, 2)}


def _lm_usage(rng: random.Random, with_sub: bool, scale: int = 1) -> dict:
    zero = {"input_tokens": 0, "output_tokens": 0, "cost": 0.0, "cache_hits": 0}
    return {"main": _token_usage(rng, scale), "sub": _token_usage(rng, scale) if with_sub else zero}


def _step(text: _Text, index: int, budget: int) -> dict:
    """One IterationStep (every field, in model order), about `budget` characters of text."""
    rng = text.rng
    share = [rng.random() + 0.2 for _ in range(4)]
    total = sum(share)
    reasoning, code, output, extra = (int(budget * s / total) for s in share)
    untruncated = text(output + extra)
    shown = untruncated if len(untruncated) <= 5000 else untruncated[:5000]
    tool_calls = []
    for _ in range(rng.randrange(0, 4)):
        tool_calls.append({
            "name": rng.choice(["read_file", "write_file", "run_command", "search", "list_dir"]),
            "args": [f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py"],
            "kwargs": {"limit": rng.randrange(1, 500)} if rng.random() < 0.5 else {},
            "result": text(rng.randrange(50, 400)) if rng.random() < 0.9 else None,
            "error": None if rng.random() < 0.9 else "FileNotFoundError: no such file",
            "duration_ms": rng.randrange(1, 2000),
        })
    predict_calls = []
    if rng.random() < 0.3:
        calls = []
        for _ in range(rng.randrange(1, 3)):
            calls.append({
                "duration_ms": rng.randrange(200, 20_000),
                "usage": _token_usage(rng),
                "input": {"question": text(rng.randrange(80, 300))},
                "output": {"answer": text(rng.randrange(80, 300))},
                "error": None,
                "lm": {"finish_reason": "stop"},
            })
        group_usage = {k: sum(c["usage"][k] for c in calls) for k in ("input_tokens", "output_tokens", "cache_hits")}
        group_usage = {"input_tokens": group_usage["input_tokens"], "output_tokens": group_usage["output_tokens"],
                       "cost": round(sum(c["usage"]["cost"] for c in calls), 6), "cache_hits": group_usage["cache_hits"]}
        predict_calls.append({
            "signature": "question -> answer",
            "instructions": "Answer from the given context only." if rng.random() < 0.5 else None,
            "model": "openai/gpt-5-mini",
            "total_usage": group_usage,
            "calls": calls,
        })
    return {
        "iteration": index,
        "reasoning": text(reasoning),
        "code": text(code),
        "output": shown,
        "untruncated_output": untruncated,
        "error": rng.random() < 0.1,
        "duration_ms": rng.randrange(500, 60_000),
        "tool_calls": tool_calls,
        "predict_calls": predict_calls,
        "lm": {"finish_reason": rng.choice(["stop", "stop", "stop", "length"])} if rng.random() < 0.8 else None,
        "usage": _lm_usage(rng, bool(predict_calls)),
    }


_TRACE_STATUS = {"succeeded": "completed", "failed": "error", "max_iterations": "max_iterations",
                 "interrupted": "in_progress"}
_STEP_CHARS = 6_000      # text asked of one step (its dump is larger: outputs appear twice)
_STEP_INDENT = 900       # bytes indent=2 adds to a step's compact dump, measured
_TRACE_BASE = 650        # bytes of a RunTrace without steps, indented


def _trace(text: _Text, status: str, budget: int) -> dict:
    """A RunTrace dump (every field, in model order) of about `budget` bytes once indented."""
    rng = text.rng
    steps = []
    remaining = budget - _TRACE_BASE
    while remaining > 0 or not steps:
        ask = min(_STEP_CHARS, max(200, int((remaining - _STEP_INDENT) / 1.6)))
        step = _step(text, len(steps) + 1, ask)
        steps.append(step)
        remaining -= len(json.dumps(step)) + _STEP_INDENT
    steps_n = len(steps)
    usage = {"main": {"input_tokens": 0, "output_tokens": 0, "cost": 0.0, "cache_hits": 0},
             "sub": {"input_tokens": 0, "output_tokens": 0, "cost": 0.0, "cache_hits": 0}}
    for step in steps:
        for side in ("main", "sub"):
            for k in ("input_tokens", "output_tokens", "cache_hits"):
                usage[side][k] += step["usage"][side][k]
            usage[side]["cost"] = round(usage[side]["cost"] + step["usage"][side]["cost"], 6)
    max_iterations = 30
    return {
        "status": _TRACE_STATUS[status],
        "model": "openai/gpt-5",
        "sub_model": "openai/gpt-5-mini" if rng.random() < 0.7 else None,
        "iterations": max_iterations if status == "max_iterations" else steps_n,
        "max_iterations": max_iterations,
        "duration_ms": sum(s["duration_ms"] for s in steps),
        "usage": usage,
        "telemetry_ref": {"run_id": text.hex(64), "events": rng.randrange(1, 400)} if rng.random() < 0.3 else None,
        "steps": steps,
    }


def _status(rng: random.Random) -> str:
    r = rng.random()
    return ("succeeded" if r < 0.78 else "failed" if r < 0.86 else "max_iterations" if r < 0.93
            else "interrupted")


def make_session(index: int, params: StoreParams, corpus: str) -> tuple[dict, float]:
    """The state of session `index` and its file's mtime (seconds), from the seed alone."""
    rng = random.Random(f"{params.seed}:{index}")
    text = _Text(rng, corpus)
    if rng.random() < params.large_share:
        lo, hi = params.large_kb
    else:
        lo, hi = params.small_kb
    target = int(1024 * math.exp(rng.uniform(math.log(lo), math.log(hi))))
    turns_n = min(params.max_turns, max(1, int(rng.triangular(1, params.max_turns + 1, 4))))
    session_id = text.hex()
    start = _EPOCH - timedelta(days=rng.uniform(0, 120))
    now = start
    summary_turns = []
    history = []
    for t in range(turns_n):
        last = t == turns_n - 1
        pending = rng.random() < (0.04 if last else 0.005)   # a crash mid-turn leaves it pending for good
        status = "pending" if pending else _status(rng)
        turn_id = "turn-" + text.hex()
        message = text(rng.randrange(20, 300)).strip() or "continue"
        created = now
        now = now + timedelta(seconds=rng.uniform(5, 900), microseconds=rng.randrange(1_000_000))
        files_read = [f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py" for _ in range(rng.randrange(0, 8))]
        files_modified = files_read[: rng.randrange(0, len(files_read) + 1)] if status != "pending" else []
        commands = [f"pytest -q tests/test_{rng.choice(_WORDS)}.py" for _ in range(rng.randrange(0, 4))]
        if status == "pending":
            files_read, commands = [], []
            agent = None
            error = None
        else:
            error = {"failed": "RuntimeError: the sandbox exited with code 1", "max_iterations": MAX_ITERATIONS_ERROR,
                     "interrupted": INTERRUPTED_ERROR}.get(status)
            usage = None
            if status != "interrupted" or rng.random() < 0.5:
                inp, out = rng.randrange(10_000, 400_000), rng.randrange(500, 20_000)
                usage = {"input_tokens": inp, "output_tokens": out, "cost": round((inp * 1.25 + out * 10) / 1e6, 6),
                         "duration_ms": rng.randrange(2_000, 600_000), "iterations": rng.randrange(1, 30),
                         "context_tokens": rng.randrange(14_000, 120_000)}
            agent = {"status": status, "response": text(rng.randrange(40, 600)) if status != "interrupted" else "",
                     "files_read_count": len(files_read), "files_changed_count": len(files_modified),
                     "commands_run_count": len(commands), "error": error, "usage": usage}
        summary_turns.append({"turn_id": turn_id, "user": {"message": message}, "agent": agent})
        history.append({"turn_id": turn_id, "user_message": message, "status": status, "files_read": files_read,
                        "files_modified": files_modified, "commands_run": commands, "trace": None,
                        "error": error, "created_at": created.isoformat(),
                        "updated_at": (created if pending else now).isoformat()})
        now = now + timedelta(seconds=rng.uniform(10, 3600))
    history = history[-20:]
    base = len(json.dumps({"schema_version": 1, "session_id": session_id, "summary": {"turns": summary_turns},
                           "history": history}, indent=2)) + 1
    with_trace = [h for h in history if h["status"] != "pending" and (h["status"] != "interrupted" or rng.random() < 0.5)]
    budget = max(0, target - base)
    if with_trace and budget:
        weights = [rng.random() + 0.3 for _ in with_trace]
        scale = budget / sum(weights)
        for turn, weight in zip(with_trace, weights):
            turn["trace"] = _trace(text, turn["status"], int(weight * scale))
    state = {"schema_version": 1, "session_id": session_id, "summary": {"turns": summary_turns}, "history": history}
    mtime = datetime.fromisoformat(history[-1]["updated_at"]).timestamp() + rng.uniform(0.001, 0.5)
    return state, mtime


# --- building -----------------------------------------------------------------------------------

_worker: dict = {}


def _init_worker(params: StoreParams, root: str, keys: list[str]) -> None:
    _worker.update(params=params, root=root, keys=keys, corpus=_corpus(params.seed))


def _workspace_of(index: int, params: StoreParams) -> int:
    """Uneven but deterministic: a few big workspaces, many small ones."""
    rng = random.Random(f"{params.seed}:ws:{index}")
    weights = _weights(params.workspaces)
    return rng.choices(range(params.workspaces), cum_weights=weights)[0]


_WEIGHTS: dict[int, list[float]] = {}


def _weights(n: int) -> list[float]:
    if n not in _WEIGHTS:
        raw = [1 / (i + 1) ** 0.7 for i in range(n)]
        total, acc, cum = sum(raw), 0.0, []
        for w in raw:
            acc += w / total
            cum.append(acc)
        _WEIGHTS[n] = cum
    return _WEIGHTS[n]


def _write_range(bounds: tuple[int, int]) -> list[tuple[int, int, int, str]]:
    params, root, keys, corpus = (_worker[k] for k in ("params", "root", "keys", "corpus"))
    out = []
    for index in range(*bounds):
        state, mtime = make_session(index, params, corpus)
        ws = _workspace_of(index, params)
        directory = os.path.join(root, "workspaces", keys[ws], "sessions")
        path = os.path.join(directory, state["session_id"] + ".json")
        data = (json.dumps(state, indent=2) + "\n").encode("ascii")
        with open(path, "wb") as handle:
            handle.write(data)
        os.utime(path, (mtime, mtime))
        last = state["summary"]["turns"][-1]
        status = "pending" if last["agent"] is None else last["agent"]["status"]
        out.append((index, ws, len(data), status))
    return out


def workspace_paths(params: StoreParams) -> list[str]:
    return [f"/home/dev/project-{i:02d}" for i in range(params.workspaces)]


def build(params: StoreParams = FULL, *, force: bool = False, processes: int | None = None,
          log=print) -> ScaleStore:
    """The store for these parameters: reused from bench/.stores/ when already built."""
    from reprise.core.paths import workspace_key
    from reprise.core.store import Store

    directory = STORES_DIR / f"{params.name}-{params.digest}"
    manifest = directory / "manifest.json"
    paths = workspace_paths(params)
    keys = [workspace_key(p) for p in paths]
    if manifest.exists() and not force:
        data = json.loads(manifest.read_text())
        return ScaleStore(params, directory, directory / "state", list(zip(paths, keys)), data["sessions"],
                          data["total_bytes"], data["sizes"], data["statuses"], data["per_workspace"], None,
                          data.get("build_seconds"))
    # Other versions of the same store are stale: drop them (they are big).
    STORES_DIR.mkdir(parents=True, exist_ok=True)
    for old in STORES_DIR.glob(f"{params.name}-" + "?" * 12):
        shutil.rmtree(old, ignore_errors=True)
    started = time.perf_counter()
    root = directory / "state"
    for key in keys:
        (root / "workspaces" / key / "sessions").mkdir(parents=True, exist_ok=True)
    store = Store(root)
    for i, (path, key) in enumerate(zip(paths, keys)):
        if i < round(params.workspaces * params.recorded_share):
            store.record_workspace(key, Path(path))
    processes = processes or os.cpu_count() or 1
    chunk = 100
    ranges = [(i, min(i + chunk, params.sessions)) for i in range(0, params.sessions, chunk)]
    log(f"  building {params.name} store: {params.sessions:,} sessions with {processes} processes ...")
    results = []
    context = multiprocessing.get_context("fork")
    with context.Pool(processes, initializer=_init_worker, initargs=(params, str(root), keys)) as pool:
        for part in pool.imap_unordered(_write_range, ranges):
            results.extend(part)
    sizes = sorted(r[2] for r in results)
    n = len(sizes)
    statuses: dict[str, int] = {}
    per_workspace = {key: 0 for key in keys}
    for _, ws, _, status in results:
        statuses[status] = statuses.get(status, 0) + 1
        per_workspace[keys[ws]] += 1
    stats = {
        "min_kb": sizes[0] / 1024, "median_kb": sizes[n // 2] / 1024, "p99_kb": sizes[int(n * 0.99)] / 1024,
        "max_kb": sizes[-1] / 1024,
        "share_20_200kb": sum(20 * 1024 <= s <= 200 * 1024 for s in sizes) / n,
        "count_1_5mb": sum(1024 * 1024 <= s <= 5 * 1024 * 1024 for s in sizes),
    }
    build_seconds = time.perf_counter() - started
    manifest.write_text(json.dumps({"params": asdict(params), "sessions": n, "total_bytes": sum(sizes),
                                    "sizes": stats, "statuses": statuses, "per_workspace": per_workspace,
                                    "build_seconds": build_seconds}, indent=2) + "\n")
    return ScaleStore(params, directory, root, list(zip(paths, keys)), n, sum(sizes), stats, statuses,
                      per_workspace, build_seconds, build_seconds)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Build (or reuse) a benchmark store.")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    built = build(QUICK if args.quick else FULL, force=args.force)
    print(built.root)
    print(built.describe())
    print(f"built in {built.build_seconds:.1f} s" if built.build_seconds else "reused")
