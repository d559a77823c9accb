"""A generated Codex CLI store for the benchmarks: rollouts in the byte form Codex 0.171.0 writes,
built deterministically (seeded) and cached under bench/.stores/ keyed by the parameters, like the
Fractal and Claude Code stores (bench/stores.py, bench/claude_store.py).

The records are the real ones of tests/fixtures/codex-store/ (rollouts Codex 0.171.0 wrote offline),
re-emitted with this session's id, turn ids, folder, times, prompts, replies and command outputs: the
same record types in the same order, keys in the same order, compact JSON with non-ASCII text
unescaped (the fixture's lines re-encode to themselves byte for byte, which the build checks). A
rollout is the first turn's header (`session_meta` with the ~26 KB base instructions, the
`additional_tools` and developer messages, `world_state`, `turn_context`, `thread_settings_applied`)
and then turns: `thread_settings_applied`, `task_started`, `turn_context` for every later turn, the
user message and its `item_completed`, zero or more exec tool calls (`custom_tool_call`,
`token_usage_record`, the `CommandExecution` item with its output, `custom_tool_call_output` with the
same output again, `token_count`), the reply, its usage and `task_complete`. Sessions are spread over
months in `sessions/YYYY/MM/DD/`; some are archived (`archived_sessions/`), most are `exec` (the others
`cli`), and some are named in `session_index.jsonl`. Their folders are partly the Fractal store's
workspace folders and the Claude Code store's project folders, so a workspace holds all three agents.

What the fixture has no example of is left out or guessed: every recorded rollout is `codex exec`, so
a `cli` session differs only in `source` and `originator` ("codex_cli_rs"); there are no forks,
compactions, reasoning items or git info (the header alone is ~97 KB, so no rollout is smaller).

Bump GENERATOR_VERSION whenever the bytes this module writes change.
"""

from __future__ import annotations

import copy
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
from typing import Any

from . import claude_store, stores

GENERATOR_VERSION = 1
STORES_DIR = stores.STORES_DIR
PROJECT = Path(__file__).resolve().parent.parent
FIXTURE = PROJECT / "tests" / "fixtures" / "codex-store" / "sessions" / "2026" / "12" / "01"
TOOL_TEMPLATE = "01a2331b-cc0a-74b3-8c63-8c4e7c73f7a6"    # one turn with an exec tool call
TURNS_TEMPLATE = "01a2331b-c3e0-7ab0-a9f5-6874c14f3431"   # three turns (the later turns' opening records)
TEMPLATE_CWD = "/tmp/reprise-codex-fixture/work/alpha"
_SEPARATORS = (",", ":")


@dataclass(frozen=True)
class CodexStoreParams:
    name: str = "codex"
    sessions: int = 2_000
    folders: int = 120
    min_kb: int = 34                # the header alone is ~97 KB; smaller ones are one short turn (forks are ~34 KB)
    max_kb: int = 12 * 1024
    median_kb: int = 140            # lognormal sizes, clipped to [min_kb, max_kb]
    sigma: float = 0.95
    days: int = 150                 # sessions start over this many days before the Fractal store's epoch
    fractal_folders: int = 30       # folders that are Fractal scale-store workspace folders
    claude_folders: int = 30        # folders that are Claude Code store project folders (some of both)
    exec_share: float = 0.6         # `codex exec` (source "exec"): Codex's own picker hides them
    archived_share: float = 0.1
    named_share: float = 0.08       # a `session_index.jsonl` entry (a rename)
    seed: int = 20261202
    version: int = GENERATOR_VERSION

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


FULL = CodexStoreParams()
QUICK = CodexStoreParams(name="codex-quick", sessions=200, folders=20, fractal_folders=5, claude_folders=5)


@dataclass
class CodexStore:
    """A built store: its root (CODEX_HOME) and what is in it."""

    params: CodexStoreParams
    dir: Path
    root: Path
    sessions: int
    total_bytes: int
    lines: int
    sizes: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    files: list[dict] = field(default_factory=list)
    build_seconds: float | None = None
    first_build_seconds: float | None = None

    def rollouts(self) -> list[Path]:
        return sorted(self.root.glob("sessions/*/*/*/*.jsonl")) + sorted(self.root.glob("archived_sessions/*.jsonl"))

    def describe(self) -> str:
        s, c = self.sizes, self.counts
        return (f"{self.sessions:,} Codex rollouts ({c['archived']} archived, {c['exec']} exec, {c['named']} named "
                f"in session_index.jsonl) in {c['date_folders']} date folders over {self.params.days} days, "
                f"{self.total_bytes / 2**20:.0f} MB in {self.lines:,} lines, {c['turns']:,} turns; sizes median "
                f"{s['median_kb']:.0f} KB, p90 {s['p90_kb']:.0f} KB, largest {s['max_kb'] / 1024:.1f} MB, smallest "
                f"{s['min_kb']:.0f} KB, {c['over_1mb']} over 1 MB; {c['folders']} folders")


# --- the real records, as templates -----------------------------------------------------------

class _Templates:
    """The fixture's records, their ids and folder replaced by this session's."""

    def __init__(self) -> None:
        tool = _lines(TOOL_TEMPLATE)
        turns = _lines(TURNS_TEMPLATE)
        for line in tool + turns:
            if json.dumps(json.loads(line), separators=_SEPARATORS, ensure_ascii=False) != line:
                raise ValueError("a fixture line does not re-encode to itself: the template cannot be reused")
        self.tool_turn = json.loads(tool[9])["payload"]["turn_id"]
        self.turns_session = json.loads(turns[0])["payload"]["id"]
        self.header = tool[0:11]          # session_meta … thread_settings_applied
        self.prompt = tool[11:13]         # the user message, its item_completed
        self.call = tool[13:20]           # the agent's words, the exec call, its usage, output, token_count
        self.ending = tool[20:25]         # the reply, its usage, token_count, task_complete
        self.reopen = [line.replace(self.turns_session, TOOL_TEMPLATE) for line in turns[18:21]]
        self.reopen_turn = json.loads(turns[20])["payload"]["turn_id"]

    def records(self, lines: list[str], session_id: str, turn_id: str, cwd: str, *,
                turn_template: str | None = None) -> list[dict[str, Any]]:
        old_turn = turn_template or self.tool_turn
        return [json.loads(line.replace(TOOL_TEMPLATE, session_id).replace(old_turn, turn_id)
                           .replace(TEMPLATE_CWD, _json_inner(cwd))) for line in lines]


def _lines(session_id: str) -> list[str]:
    path = next(FIXTURE.glob(f"rollout-*-{session_id}.jsonl"))
    return path.read_text(encoding="utf-8").splitlines()


def _json_inner(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _uuid7(rng: random.Random, at: float) -> str:
    ms = int(at * 1000)
    high = f"{ms:012x}"
    rand = f"{rng.getrandbits(80):020x}"
    return f"{high[:8]}-{high[8:12]}-7{rand[:3]}-{'89ab'[rng.randrange(4)]}{rand[3:6]}-{rand[6:18]}"


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _usage(inputs: int, cached: int, output: int) -> dict[str, int]:
    return {"input_tokens": inputs, "cached_input_tokens": cached, "cache_write_input_tokens": 0,
            "output_tokens": output, "reasoning_output_tokens": 0, "total_tokens": inputs + output}


# --- one rollout --------------------------------------------------------------------------------

class RolloutWriter:
    """Writes one rollout's records in order; `turn` adds a turn of about `budget` bytes."""

    def __init__(self, templates: _Templates, text: stores._Text, rng: random.Random, handle, *,
                 session_id: str, cwd: str, start: float, source: str, ordinal: int = 0,
                 totals: tuple[int, int, int] = (0, 0, 0), context: int = 15_000) -> None:
        self.t, self.text, self.rng, self.handle = templates, text, rng, handle
        self.session_id, self.cwd, self.clock, self.source = session_id, cwd, start, source
        self.ordinal, self.sequence = ordinal, 7 + ordinal // 3
        self.totals = list(totals)
        self.context = context
        self.current_turn = ""
        self.turns = 0
        self.bytes = 0
        self.lines = 0

    def emit(self, record: dict[str, Any]) -> None:
        self.clock += self.rng.uniform(0.001, 0.4)
        record["timestamp"] = _stamp(self.clock)
        record["ordinal"] = self.ordinal
        self.ordinal += 1
        if isinstance(record.get("metadata"), dict) and "history_sequence" in record["metadata"]:
            record["metadata"]["history_sequence"] = self.sequence
            self.sequence += 1
        for key in ("started_at_ms", "completed_at_ms"):
            if key in record["payload"]:
                record["payload"][key] = int(self.clock * 1000)
        line = json.dumps(record, separators=_SEPARATORS, ensure_ascii=False) + "\n"
        data = line.encode()
        self.handle.write(data)
        self.bytes += len(data)
        self.lines += 1

    def turn(self, budget: int, *, first: bool) -> None:
        self.clock += self.rng.uniform(20, 900) if not first else 0
        turn_id = self.current_turn = _uuid7(self.rng, self.clock)
        t = self.t
        opening = (t.records(t.header, self.session_id, turn_id, self.cwd) if first else
                   t.records(t.reopen, self.session_id, turn_id, self.cwd, turn_template=t.reopen_turn))
        for record in opening:
            payload = record["payload"]
            if record["type"] == "session_meta":
                payload["timestamp"] = _stamp(self.clock)
                payload["source"] = self.source
                payload["originator"] = "codex_exec" if self.source == "exec" else "codex_cli_rs"
            elif payload.get("type") == "task_started":
                payload["started_at"] = int(self.clock)
            self.emit(record)
        prompt = self.text(self.rng.randrange(30, 600)).strip() or "go on"
        user, item = t.records(t.prompt, self.session_id, turn_id, self.cwd)
        user["payload"]["content"][0]["text"] = prompt
        item["payload"]["item"]["content"][0]["text"] = prompt
        self.emit(user)
        self.emit(item)
        calls = 0 if budget < 6_000 else self.rng.choice((1, 1, 2, 3, 4, 6))
        for _ in range(calls):
            self._call(max(200, budget // calls // 2 - 2_400))
        reply = self.text(self.rng.randrange(80, 2_500)).strip() or "Done."
        said, assistant, usage, count, complete = t.records(t.ending, self.session_id, turn_id, self.cwd)
        said["payload"]["item"]["content"][0]["text"] = reply
        assistant["payload"]["content"][0]["text"] = reply
        complete["payload"]["last_agent_message"] = reply
        complete["payload"]["started_at"] = int(self.clock)
        self._tokens(usage, count, len(reply) // 4 + 10)
        for record in (said, assistant, usage, count):
            self.emit(record)
        complete["payload"]["completed_at"] = int(self.clock)
        self.emit(complete)
        self.turns += 1

    def _call(self, chars: int) -> None:
        t = self.t
        turn_id = self.current_turn
        said, assistant, call, usage, done, output, count = t.records(t.call, self.session_id, turn_id, self.cwd)
        words = self.text(self.rng.randrange(20, 200)).strip() or "Running it."
        command = self.rng.choice(("rg -n 'def ' src", "sed -n 1,200p src/app.py", "pytest -q tests", "git diff",
                                   "ls -la", "cat README.md", "python -m build"))
        out = self.text(chars)
        said["payload"]["item"]["content"][0]["text"] = words
        assistant["payload"]["content"][0]["text"] = words
        call["payload"]["input"] = f"const done = await tools.exec_command({{\"cmd\": {json.dumps(command)}}});\n" \
                                   "text(done.output);\n"
        item = done["payload"]["item"]
        item["command"][2] = command
        item["parsed_cmd"][0]["cmd"] = command
        item["aggregated_output"] = out
        output["payload"]["output"][1]["text"] = out
        self._tokens(usage, count, self.rng.randrange(20, 400))
        for record in (said, assistant, call, usage, done, output):
            self.emit(record)
        self.context += len(out) // 4
        self.emit(count)

    def _tokens(self, usage: dict, count: dict, output: int) -> None:
        cached = int(self.context * self.rng.uniform(0.4, 0.95))
        call = _usage(self.context, cached, output)
        for index, value in enumerate((self.context, cached, output)):
            self.totals[index] += value
        total = _usage(*self.totals)
        payload = usage["payload"]
        payload["usage"], payload["turn_token_usage"], payload["thread_token_usage"] = call, call, total
        info = count["payload"]["info"]
        info["total_token_usage"], info["last_token_usage"] = total, call
        self.context += output + 40


def rollout_name(session_id: str, start: float) -> str:
    return f"rollout-{datetime.fromtimestamp(start, UTC).strftime('%Y-%m-%dT%H-%M-%S')}-{session_id}.jsonl"


def write_rollout(path: Path, templates: _Templates, text: stores._Text, rng: random.Random, *, target: int,
                  session_id: str, cwd: str, start: float, source: str) -> dict:
    """A rollout of about `target` bytes: its facts (bytes, lines, turns)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = 97_000
    turns = max(1, min(400, round(rng.lognormvariate(math.log(5), 0.9) * max(1.0, target / 400_000) ** 0.5)))
    per_turn = max(1_000, (target - header) // turns)
    with open(path, "wb") as handle:
        writer = RolloutWriter(templates, text, rng, handle, session_id=session_id, cwd=cwd, start=start, source=source)
        for index in range(turns):
            writer.turn(int(per_turn * rng.uniform(0.5, 1.5)), first=index == 0)
            if writer.bytes >= target and index:
                break
    return {"bytes": writer.bytes, "lines": writer.lines, "turns": writer.turns, "mtime": writer.clock}


def append_turn(path: Path, *, seed: int = 1, budget: int = 40_000) -> int:
    """Append one more turn (the later turns' opening records, a prompt, tool calls, the reply) to a
    rollout as Codex does when the session is resumed; returns the bytes appended."""
    with open(path, "rb") as handle:
        first = json.loads(handle.readline())
        handle.seek(max(0, os.path.getsize(path) - 2**20))
        tail = handle.read().split(b"\n")
    last = count = None
    for raw in reversed(tail):
        if raw.startswith(b"{") and raw.endswith(b"}"):
            record = json.loads(raw)
            last = last or record
            if record["payload"].get("type") == "token_count":
                count = record
                break
    if last is None or count is None:
        raise ValueError(f"{path}: no token_count in its last MB")
    rng = random.Random(f"append:{seed}:{path.name}")
    info = count["payload"]["info"]
    totals = tuple(info["total_token_usage"][k] for k in ("input_tokens", "cached_input_tokens", "output_tokens"))
    started = datetime.fromisoformat(last["timestamp"].replace("Z", "+00:00")).timestamp()
    before = os.path.getsize(path)
    with open(path, "ab") as handle:
        writer = RolloutWriter(_Templates(), stores._Text(rng, stores._corpus(seed, 1 << 18)), rng, handle,
                         session_id=first["payload"]["id"], cwd=first["payload"]["cwd"], start=started,
                         source=first["payload"]["source"], ordinal=last["ordinal"] + 1, totals=totals,
                         context=info["last_token_usage"]["input_tokens"])
        writer.turn(budget, first=False)
    return os.path.getsize(path) - before


# --- the store ----------------------------------------------------------------------------------

def folder_paths(params: CodexStoreParams) -> list[str]:
    """The folders sessions ran in: Fractal workspace folders, Claude Code project folders, others."""
    fractal = stores.workspace_paths(stores.FULL)[:params.fractal_folders]
    claude = claude_store.project_paths(claude_store.FULL)[20:20 + params.claude_folders]
    paths = list(dict.fromkeys(fractal + claude))
    rng = random.Random(f"{params.seed}:folders")
    while len(paths) < params.folders:
        path = f"/home/dev/codex/{rng.choice(('svc', 'tool', 'lib', 'app', 'exp'))}-{rng.randrange(1, 999)}"
        if path not in paths:
            paths.append(path)
    return paths


def plan(params: CodexStoreParams) -> list[dict]:
    """Each session's id, folder, start, size, source, archived and name: the build's one source of truth."""
    rng = random.Random(f"{params.seed}:plan")
    folders = folder_paths(params)
    weights = [1 / (i + 1) ** 0.8 for i in range(len(folders))]
    epoch = stores._EPOCH.timestamp()
    out = []
    for index in range(params.sessions):
        size = rng.lognormvariate(math.log(params.median_kb * 1024), params.sigma)
        start = epoch - timedelta(days=rng.uniform(0, params.days)).total_seconds()
        out.append({"index": index, "session_id": _uuid7(rng, start), "start": start,
                    "cwd": rng.choices(folders, weights)[0],
                    "target": int(min(params.max_kb * 1024, max(params.min_kb * 1024, size))),
                    "source": "exec" if rng.random() < params.exec_share else "cli",
                    "archived": rng.random() < params.archived_share,
                    "name": (f"Codex session {index}: {rng.choice(('fix', 'plan', 'review', 'port'))} "
                             f"{rng.choice(('parser', 'ci', 'docs', 'api', 'ui'))}")
                    if rng.random() < params.named_share else None})
    return out


def path_of(root: Path, entry: dict) -> Path:
    name = rollout_name(entry["session_id"], entry["start"])
    if entry["archived"]:
        return root / "archived_sessions" / name
    day = datetime.fromtimestamp(entry["start"], UTC)
    return root / "sessions" / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}" / name


_WORKER: dict[str, Any] = {}


def _init_worker(params: CodexStoreParams, root: str) -> None:
    _WORKER.update(params=params, root=Path(root), templates=_Templates(), corpus=stores._corpus(params.seed))


def _write_entries(entries: list[dict]) -> list[dict]:
    results = []
    for entry in entries:
        rng = random.Random(f"{_WORKER['params'].seed}:{entry['index']}")
        path = path_of(_WORKER["root"], entry)
        facts = write_rollout(path, _WORKER["templates"], stores._Text(rng, _WORKER["corpus"]), rng,
                              target=entry["target"], session_id=entry["session_id"], cwd=entry["cwd"],
                              start=entry["start"], source=entry["source"])
        os.utime(path, (facts["mtime"], facts["mtime"]))
        results.append({**entry, **facts, "path": str(path)})
    return results


def _stats(sizes: list[int]) -> dict:
    sizes = sorted(sizes)
    n = len(sizes)
    return {"min_kb": sizes[0] / 1024, "median_kb": sizes[n // 2] / 1024, "p90_kb": sizes[int(n * 0.9)] / 1024,
            "max_kb": sizes[-1] / 1024}


def _store(params: CodexStoreParams, directory: Path, data: dict, build_seconds: float | None) -> CodexStore:
    return CodexStore(params, directory, directory / "home", data["sessions"], data["total_bytes"], data["lines"],
                      data["sizes"], data["counts"], data["files"], build_seconds, data.get("build_seconds"))


def check_lines(path: Path) -> int:
    """Every line decodes and re-encodes to itself (compact, non-ASCII unescaped); the lines checked."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for line in lines:
        if json.dumps(json.loads(line), separators=_SEPARATORS, ensure_ascii=False) != line:
            raise ValueError(f"{path}: a line is not in Codex's byte form")
    return len(lines)


def build(params: CodexStoreParams = FULL, *, force: bool = False, processes: int = 2, log=print) -> CodexStore:
    """The store for these parameters: reused from bench/.stores/ when already built."""
    directory = STORES_DIR / f"{params.name}-{params.digest}"
    manifest = directory / "manifest.json"
    if manifest.exists() and not force:
        return _store(params, directory, json.loads(manifest.read_text()), None)
    STORES_DIR.mkdir(parents=True, exist_ok=True)
    for old in STORES_DIR.glob(f"{params.name}-" + "?" * 12):
        shutil.rmtree(old, ignore_errors=True)
    started = time.perf_counter()
    root = directory / "home"
    root.mkdir(parents=True)
    entries = sorted(plan(params), key=lambda e: -e["target"])
    chunks = [entries[i::40] for i in range(40)]
    log(f"  building {params.name} store: {params.sessions:,} Codex rollouts with {processes} processes ...")
    results: list[dict] = []
    with multiprocessing.get_context("fork").Pool(processes, initializer=_init_worker,
                                                  initargs=(params, str(root))) as pool:
        for part in pool.imap_unordered(_write_entries, chunks):
            results.extend(part)
    results.sort(key=lambda r: r["index"])
    named = [r for r in results if r["name"]]
    with open(root / "session_index.jsonl", "w", encoding="utf-8") as handle:
        for r in named:
            stamp = datetime.fromtimestamp(r["mtime"], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            handle.write(json.dumps({"id": r["session_id"], "thread_name": r["name"], "updated_at": stamp},
                                    separators=_SEPARATORS, ensure_ascii=False) + "\n")
    checked = sum(check_lines(Path(r["path"])) for r in random.Random(params.seed).sample(results, 30))
    sizes = [r["bytes"] for r in results]
    counts = {"archived": sum(r["archived"] for r in results), "exec": sum(r["source"] == "exec" for r in results),
              "named": len(named), "turns": sum(r["turns"] for r in results),
              "over_1mb": sum(s > 2**20 for s in sizes), "folders": len({r["cwd"] for r in results}),
              "date_folders": len({Path(r["path"]).parent for r in results if not r["archived"]}),
              "lines_checked": checked}
    build_seconds = time.perf_counter() - started
    data = {"params": asdict(params), "sessions": len(results), "total_bytes": sum(sizes),
            "lines": sum(r["lines"] for r in results), "sizes": _stats(sizes), "counts": counts,
            "build_seconds": build_seconds, "files": [copy.copy(r) for r in results]}
    manifest.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return _store(params, directory, data, build_seconds)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Build (or reuse) the Codex benchmark store.")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    built = build(QUICK if args.quick else FULL, force=args.force)
    print(built.root)
    print(built.describe())
    print(f"built in {built.build_seconds:.1f} s" if built.build_seconds else "reused")
