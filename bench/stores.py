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
from datetime import UTC, datetime, timedelta
from pathlib import Path

GENERATOR_VERSION = 1
STORES_DIR = Path(__file__).resolve().parent / ".stores"
MAX_ITERATIONS_ERROR = "Reached max iterations before SUBMIT; response came from fallback extraction."
INTERRUPTED_ERROR = "Turn interrupted by user."
_EPOCH = datetime(2025, 9, 1, tzinfo=UTC)


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
                       "cost": round(sum(c["usage"]["cost"] for c in calls), 6),
                       "cache_hits": group_usage["cache_hits"]}
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
    with_trace = [h for h in history
                  if h["status"] != "pending" and (h["status"] != "interrupted" or rng.random() < 0.5)]
    budget = max(0, target - base)
    if with_trace and budget:
        weights = [rng.random() + 0.3 for _ in with_trace]
        scale = budget / sum(weights)
        for turn, weight in zip(with_trace, weights, strict=True):
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
    from reprise.core.sources.fractal.store import Store

    directory = STORES_DIR / f"{params.name}-{params.digest}"
    manifest = directory / "manifest.json"
    paths = workspace_paths(params)
    keys = [workspace_key(p) for p in paths]
    if manifest.exists() and not force:
        data = json.loads(manifest.read_text())
        return ScaleStore(params, directory, directory / "state", list(zip(paths, keys, strict=True)), data["sessions"],
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
    for i, (path, key) in enumerate(zip(paths, keys, strict=True)):
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
    return ScaleStore(params, directory, root, list(zip(paths, keys, strict=True)), n, sum(sizes), stats, statuses,
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


# --- the long session (meter, trim and TUI benchmarks) -------------------------------------------
#
# One 60-turn session whose rendered summary is about 300,000 characters: long agent responses in
# the shape a coding agent writes them (prose, bullet lists of changes, code blocks, test output),
# from a richer vocabulary than the corpus above so that it tokenizes like real text. Built from
# the seed alone; not part of the scale store (its bytes do not change the store's cache key).

LONG_TURNS = 60
LONG_SUMMARY_CHARS = 300_000
LONG_TRACE_BYTES = 20_000   # each of the 20 history turns carries a RunTrace of about this size

_NOUNS = ("parser config loader cache index schema migration request response handler middleware router "
          "session token buffer stream queue worker scheduler retry backoff timeout connection pool client "
          "server endpoint payload serializer validator fixture snapshot benchmark profile regression test "
          "module package dependency lockfile manifest build pipeline deployment container volume secret "
          "credential permission role policy audit log metric counter histogram trace span exporter "
          "dashboard alert threshold window cursor offset page batch chunk record row column table query "
          "transaction lock mutex thread process signal event callback hook plugin adapter interface "
          "protocol dataclass field attribute property method function argument parameter default value "
          "error exception warning traceback stacktrace message prompt template summary history turn "
          "widget screen layout binding keystroke composer meter budget estimate encoding tokenizer").split()
_VERBS = ("added updated fixed refactored renamed moved extracted simplified removed replaced rewrote "
          "tightened relaxed documented tested validated cached memoized batched parallelised guarded "
          "normalised escaped wrapped inlined split merged deduplicated sorted filtered indexed streamed "
          "profiled measured reproduced bisected traced logged").split()
_ADJECTIVES = ("stale missing duplicate flaky slow unbounded nested optional required legacy partial "
               "atomic idempotent concurrent lazy eager explicit implicit deterministic noisy quiet "
               "empty malformed oversized truncated cached cold warm").split()
_CONNECTIVES = ("because", "so that", "which means", "although", "while", "since", "after", "before",
                "unless", "whereas")
_DIRS = ("src", "src/core", "src/api", "src/cli", "src/storage", "src/ui", "tests", "tests/unit",
         "tests/integration", "scripts", "docs")
_PROSE_TAIL = ("in the happy path", "under load", "on a cold start", "when the file is missing",
               "for every workspace", "on the second run", "with the default settings",
               "after a crash", "on Windows paths", "when two processes race", "in CI only")


def _ident(rng: random.Random) -> str:
    return "_".join(rng.sample(_NOUNS, rng.randrange(1, 3)))


def _file_path(rng: random.Random) -> str:
    return f"{rng.choice(_DIRS)}/{_ident(rng)}.py"


def _sentence(rng: random.Random) -> str:
    noun, other = rng.choice(_NOUNS), rng.choice(_NOUNS)
    kind = rng.random()
    if kind < 0.3:
        text = (f"I {rng.choice(_VERBS)} the {rng.choice(_ADJECTIVES)} {noun} in `{_file_path(rng)}` "
                f"{rng.choice(_CONNECTIVES)} the {other} was {rng.choice(_ADJECTIVES)} {rng.choice(_PROSE_TAIL)}.")
    elif kind < 0.55:
        text = (f"The {noun} {rng.choice(['now', 'no longer', 'still', 'only'])} "
                f"{rng.choice(['reads', 'writes', 'checks', 'returns', 'skips', 'keeps'])} the {other} "
                f"{rng.choice(_CONNECTIVES)} `{_ident(rng)}()` is called {rng.choice(_PROSE_TAIL)}.")
    elif kind < 0.75:
        text = (f"`{_ident(rng)}` took {rng.randrange(2, 900)} ms before and {rng.randrange(1, 90)} ms after; "
                f"the {rng.choice(_ADJECTIVES)} {noun} was the cause.")
    elif kind < 0.9:
        text = (f"This keeps the {noun} {rng.choice(_ADJECTIVES)} {rng.choice(_PROSE_TAIL)}, "
                f"{rng.choice(_CONNECTIVES)} the {other} stays {rng.choice(_ADJECTIVES)}.")
    else:
        text = (f"Note: {rng.randrange(2, 40)} call sites use the old {noun} API; "
                f"I left them unchanged {rng.choice(['for now', 'on purpose', 'behind a flag'])} — "
                f"see {_file_path(rng)}:{rng.randrange(10, 900)}.")
    return text


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randrange(2, 6)))


def _code_block(rng: random.Random) -> str:
    name, arg, other = _ident(rng), rng.choice(_NOUNS), rng.choice(_NOUNS)
    lines = [f"def {name}({arg}: {other.capitalize()}, *, limit: int = {rng.randrange(1, 500)}) -> list[str]:",
             f'    """{_sentence(rng)}"""']
    for _ in range(rng.randrange(3, 12)):
        kind = rng.random()
        if kind < 0.3:
            lines.append(f"    {_ident(rng)} = {arg}.{_ident(rng)}({rng.choice(_NOUNS)}, {rng.randrange(100)})")
        elif kind < 0.5:
            lines.append(f"    if {arg}.{rng.choice(_NOUNS)} is None or len({other}) > limit:")
            error = f"{rng.choice(_NOUNS).capitalize()}Error"
            lines.append(f"        raise {error}(f\"{rng.choice(_ADJECTIVES)} {{{arg}!r}}\")")
        elif kind < 0.7:
            lines.append(f"    for {rng.choice(_NOUNS)} in sorted({arg}.{_ident(rng)}, key=len):")
            lines.append(f"        yield_{rng.choice(_NOUNS)}.append({rng.choice(_NOUNS)}.strip())")
        else:
            lines.append(f"    # {_sentence(rng)[:-1].lower()}")
    lines.append(f"    return [{rng.choice(_NOUNS)} for {rng.choice(_NOUNS)} in {arg}][:limit]")
    return "```python\n" + "\n".join(lines) + "\n```"


def _test_output(rng: random.Random) -> str:
    passed = rng.randrange(5, 400)
    dots = "".join(rng.choice("....................F.s") for _ in range(min(passed, 70)))
    failed = dots.count("F")
    result = f"{passed - failed} passed" + (f", {failed} failed" if failed else "")
    return (f"```\n$ pytest -q {rng.choice(_DIRS[6:9])}/test_{_ident(rng)}.py\n{dots}  [100%]\n"
            f"{result} in {rng.uniform(0.2, 40):.2f}s\n```")


def _change_list(rng: random.Random) -> str:
    items = [f"- `{_file_path(rng)}`: {rng.choice(_VERBS)} the {rng.choice(_NOUNS)} "
             f"({rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)}, +{rng.randrange(1, 300)}/-{rng.randrange(0, 200)})"
             for _ in range(rng.randrange(2, 9))]
    return "Changes:\n" + "\n".join(items)


def _response(rng: random.Random, budget: int) -> str:
    """An agent response of about `budget` characters, built block by block."""
    blocks = [_paragraph(rng)]
    size = len(blocks[0])
    while size < budget:
        kind = rng.random()
        block = (_paragraph(rng) if kind < 0.45 else _change_list(rng) if kind < 0.65 else
                 _code_block(rng) if kind < 0.85 else _test_output(rng))
        blocks.append(block)
        size += len(block) + 2
    text = "\n\n".join(blocks)
    if len(text) > budget * 1.15:   # a long last block: end at a paragraph break near the budget
        cut = text.rfind("\n\n", 0, budget)
        if cut > budget * 0.7:
            text = text[:cut]
    return text


def _request(rng: random.Random) -> str:
    noun = rng.choice(_NOUNS)
    text = (f"Can you look at the {rng.choice(_ADJECTIVES)} {noun} in {_file_path(rng)}? "
            f"{_sentence(rng)}")
    for _ in range(rng.randrange(0, 4)):
        text += " " + _sentence(rng)
    return text


def _rendered_turn_chars(number: int, turn: dict) -> int:
    """Characters the turn adds to the rendered summary ("\\n\\n" + its block), as Fractal renders it."""
    agent = turn["agent"]
    lines = [f"Turn {number} ({turn['turn_id']})", f"User: {turn['user']['message']}"]
    if agent is None:
        lines.append("Agent status: pending")
    else:
        lines.append(f"Agent status: {agent['status']}")
        if agent["response"]:
            lines.append(f"Agent response: {agent['response']}")
        lines += [f"files_read_count: {agent['files_read_count']}",
                  f"files_changed_count: {agent['files_changed_count']}",
                  f"commands_run_count: {agent['commands_run_count']}"]
        if agent["error"]:
            lines.append(f"Error: {agent['error']}")
    return 2 + len("\n".join(lines))


def make_long_session(seed: int = 20250901, *, turns: int = LONG_TURNS, summary_chars: int = LONG_SUMMARY_CHARS,
                      trace_bytes: int = LONG_TRACE_BYTES) -> dict:
    """The long session's state (Fractal's format, every field, in model order)."""
    rng = random.Random(f"{seed}:long-session")
    corpus_text = _Text(random.Random(f"{seed}:long-traces"), _corpus(seed, chars=1 << 18))
    session_id = f"{rng.getrandbits(128):032x}"
    statuses = ["succeeded"] * turns
    for index, status in zip(rng.sample(range(turns - 1), 6), ["failed", "failed", "failed", "max_iterations",
                                                                "max_iterations", "interrupted"], strict=True):
        statuses[index] = status
    weights = [rng.lognormvariate(0, 0.55) for _ in range(turns)]
    now = _EPOCH - timedelta(days=3)
    summary_turns, history = [], []
    for index in range(turns):
        status = statuses[index]
        turn_id = f"turn-{rng.getrandbits(128):032x}"
        message = _request(rng)
        files_read = [_file_path(rng) for _ in range(rng.randrange(1, 12))]
        files_modified = files_read[: rng.randrange(0, len(files_read) + 1)]
        commands = [f"pytest -q {rng.choice(_DIRS[6:9])}/test_{_ident(rng)}.py" for _ in range(rng.randrange(0, 5))]
        error = {"failed": "RuntimeError: the sandbox exited with code 1", "max_iterations": MAX_ITERATIONS_ERROR,
                 "interrupted": INTERRUPTED_ERROR}.get(status)
        inp, out = rng.randrange(20_000, 300_000), rng.randrange(1_000, 20_000)
        usage = None if status == "interrupted" else {
            "input_tokens": inp, "output_tokens": out, "cost": round((inp * 1.25 + out * 10) / 1e6, 6),
            "duration_ms": rng.randrange(5_000, 600_000), "iterations": rng.randrange(2, 30),
            "context_tokens": 16_000 + 1_200 * index + rng.randrange(0, 3_000)}
        agent = {"status": status, "response": "", "files_read_count": len(files_read),
                 "files_changed_count": len(files_modified), "commands_run_count": len(commands),
                 "error": error, "usage": usage}
        summary_turns.append({"turn_id": turn_id, "user": {"message": message}, "agent": agent})
        created = now
        now = now + timedelta(seconds=rng.uniform(30, 1500), microseconds=rng.randrange(1_000_000))
        history.append({"turn_id": turn_id, "user_message": message, "status": status, "files_read": files_read,
                        "files_modified": files_modified, "commands_run": commands, "trace": None, "error": error,
                        "created_at": created.isoformat(), "updated_at": now.isoformat()})
        now = now + timedelta(seconds=rng.uniform(10, 1800))
    # Responses fill what the rest of the summary leaves of `summary_chars`, weighted per turn; a
    # second pass rescales the budgets (responses overshoot theirs a little), then the longest
    # response absorbs the last difference.
    def rendered() -> int:
        return len("## Session Summary") + sum(_rendered_turn_chars(i + 1, t) for i, t in enumerate(summary_turns))

    answering = [i for i, s in enumerate(statuses) if s != "interrupted"]
    fixed = rendered() + len("Agent response: \n") * len(answering)
    total_weight = sum(weights[i] for i in answering)
    scale = 1.0
    for _ in range(2):
        budget = (summary_chars - fixed) * scale
        for i in answering:
            summary_turns[i]["agent"]["response"] = _response(random.Random(f"{seed}:long-response:{i}"),
                                                              max(200, int(budget * weights[i] / total_weight)))
        scale *= (summary_chars - fixed) / max(rendered() - fixed, 1)
    longest = max((summary_turns[i]["agent"] for i in answering), key=lambda agent: len(agent["response"]))
    difference = rendered() - summary_chars
    if difference > 0:
        longest["response"] = longest["response"][:len(longest["response"]) - difference]
    elif difference < 0:
        longest["response"] += ("\n\n" + _paragraph(rng) * 4)[:-difference]
    history = history[-20:]
    for entry in history:
        entry["trace"] = _trace(corpus_text, entry["status"], trace_bytes)
    return {"schema_version": 1, "session_id": session_id, "summary": {"turns": summary_turns}, "history": history}


def write_long_session(root: Path, workspace: Path, seed: int = 20250901, **options) -> tuple[str, str, Path]:
    """Write the long session under state root `root` for workspace folder `workspace` (recorded);
    return (workspace key, session id, file path). The bytes are what Fractal writes."""
    from reprise.core.paths import workspace_key
    from reprise.core.sources.fractal.store import Store

    state = make_long_session(seed, **options)
    key = workspace_key(workspace)
    directory = Path(root) / "workspaces" / key / "sessions"
    directory.mkdir(parents=True, exist_ok=True)
    Store(Path(root)).record_workspace(key, Path(workspace))
    path = directory / f"{state['session_id']}.json"
    path.write_bytes((json.dumps(state, indent=2) + "\n").encode("ascii"))
    return key, state["session_id"], path
