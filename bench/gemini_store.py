"""A generated Gemini CLI store for the benchmarks: 2,000 sessions in the byte form Gemini CLI 0.61.0
writes, of the sizes and turn counts of the Claude Code bench store's sessions, built
deterministically (seeded) and cached under bench/.stores/ keyed by the parameters, like the other
stores (bench/stores.py, bench/claude_store.py, bench/codex_store.py).

The store is a home (`GEMINI_CLI_HOME`) holding `.gemini/`: `projects.json` mapping each folder to
its slug (the folder's base name slugified, `-1`, `-2` on a collision, as the client's project
registry claims them), `tmp/<slug>/.project_root` and `history/<slug>/.project_root` naming the
folder, and one JSONL file per session in `tmp/<slug>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`.
Its lines are what the client's chat recorder appends (compact `JSON.stringify`, UTF-8 unescaped, one
record a line): the header `{sessionId, projectHash, startTime, lastUpdated, kind}`, the first
`$set` of the message list (the injected `<session_context>` message, one id in every session), then
per turn the prompt, `{"$set":{"lastUpdated"}}` after each recorded message, the model's message
written again when its tokens and its tool calls (with their results) arrive, the `functionResponse`
message after a tool call, and the reply. Headless sessions (`gemini -p`, one process a turn) resume
for each later turn: the resume appends `{"$set":{"sessionId"}}` to the session's file and, when the
minute in the name has passed, leaves a small stub file with the same `sessionId` (else its header
lands in the session's own file). Some sessions are rewound (`$rewindTo` an earlier prompt, then go
on), some have a `summary` (`$set`), some have subagent sessions (`chats/<session id>/<id>.jsonl`,
kind `subagent`), a few are legacy whole-file `.json` sessions (the pretty-printed record older
clients wrote), and a few folders are in `projects.json` only or have no mapping at all.

The sessions mirror the Claude Code store's, one for one: the same size, turns, folder, last change
and headless share (`claude -p` sessions become `gemini -p` ones), so a per-row comparison of the two
listings compares like with like.

Bump GENERATOR_VERSION whenever the bytes this module writes change.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import re
import shutil
import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import claude_store, stores

GENERATOR_VERSION = 1
STORES_DIR = stores.STORES_DIR
MODELS = ("gemini-2.5-pro", "gemini-2.5-pro", "gemini-2.5-flash", "gemini-3-pro-preview")
ENV_ID = "environment-context"   # replaced by the client's stable id when the fixtures are read
_SEPARATORS = (",", ":")


@dataclass(frozen=True)
class GeminiStoreParams:
    name: str = "gemini"
    sessions: int = 2_000
    rewind_share: float = 0.1        # a `$rewindTo` an earlier prompt, then more turns
    summary_share: float = 0.45      # a `$set` of `summary` (the client's model summary)
    subagent_share: float = 0.08     # a subagent session under chats/<session id>/
    same_minute_share: float = 0.2   # a resume within the name's minute: its header lands in the session's file
    legacy_sessions: int = 12        # whole-file `.json` sessions (older clients)
    orphan_folders: int = 3          # slugs with chats but in neither projects.json nor .project_root
    max_stubs: int = 40              # resumes that leave stub files, at most, per session
    seed: int = 20261206
    version: int = GENERATOR_VERSION

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


FULL = GeminiStoreParams()
QUICK = GeminiStoreParams(name="gemini-quick", sessions=200, legacy_sessions=3, orphan_folders=1)


@dataclass
class GeminiStore:
    """A built store: its home (GEMINI_CLI_HOME) and what is in it."""

    params: GeminiStoreParams
    dir: Path
    home: Path
    sessions: int
    total_bytes: int
    lines: int
    sizes: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    files: list[dict] = field(default_factory=list)
    build_seconds: float | None = None
    first_build_seconds: float | None = None

    @property
    def root(self) -> Path:
        return self.home / ".gemini"

    def session_files(self) -> list[Path]:
        return sorted(self.root.glob("tmp/*/chats/session-*.json*"))

    def describe(self) -> str:
        s, c = self.sizes, self.counts
        return (f"{self.sessions:,} Gemini CLI sessions in {c['folders']} folders ({c['slugs']} slugs, "
                f"{c['unmapped']} not in projects.json), {self.total_bytes / 2**30:.2f} GiB in {self.lines:,} lines "
                f"and {c['files']:,} session files ({c['stubs']:,} resume stubs, {c['subagents']} subagent files, "
                f"{c['legacy']} legacy .json); sizes median {s['median_kb']:.0f} KB, p90 {s['p90_kb'] / 1024:.1f} MB, "
                f"largest {s['max_kb'] / 1024:.1f} MB; {c['turns']:,} turns, {c['headless']} headless (`-p`), "
                f"{c['rewound']} rewound, {c['summary']} with a summary, {c['tool_calls']:,} tool calls")


# --- the client's forms ----------------------------------------------------------------------------

def dumps(record: Any) -> str:
    """One line as `JSON.stringify` writes it: compact, non-ASCII unescaped."""
    return json.dumps(record, separators=_SEPARATORS, ensure_ascii=False)


def stamp(seconds: float) -> str:
    """`new Date().toISOString()`: milliseconds and a Z."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def file_name(session_id: str, seconds: float) -> str:
    """`session-<the minute it started, UTC>-<the id's first 8 characters>.jsonl`."""
    return f"session-{datetime.fromtimestamp(seconds, UTC).strftime('%Y-%m-%dT%H-%M')}-{session_id[:8]}.jsonl"


def project_hash(folder: str) -> str:
    return hashlib.sha256(folder.encode()).hexdigest()


def slugify(text: str) -> str:
    """The project registry's slug of a folder's base name."""
    return re.sub(r"^-|-$", "", re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", text.lower()))) or "project"


def slugs_of(folders: Iterable[str]) -> dict[str, str]:
    """Each folder's slug, claimed in this order: the base name's, then `-1`, `-2`... on a collision."""
    taken: set[str] = set()
    out: dict[str, str] = {}
    for folder in folders:
        base = slugify(os.path.basename(folder) or "project")
        counter = 0
        while (candidate := base if counter == 0 else f"{base}-{counter}") in taken:
            counter += 1
        taken.add(candidate)
        out[folder] = candidate
    return out


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def env_context(folder: str, temp_dir: str, day: float) -> str:
    """The injected `<session_context>` text (not a prompt)."""
    moment = datetime.fromtimestamp(day, UTC)
    return ("<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
            f"Today's date is {moment.strftime('%A, %B')} {moment.day}, {moment.year} (formatted according to the "
            "user's locale).\nMy operating system is: linux\nThe project's temporary directory is: "
            f"{temp_dir}\n\n\n\n</session_context>")


# --- one session ---------------------------------------------------------------------------------

@dataclass
class SessionFacts:
    session_id: str
    cwd: str
    path: str
    bytes: int = 0                 # the session's own file
    lines: int = 0
    turns: int = 0                 # prompts the client would send now (a rewind drops some)
    prompts_written: int = 0
    tool_calls: int = 0
    headless: bool = False
    rewound: bool = False
    summary: str | None = None
    first_prompt: str = ""
    stubs: list[str] = field(default_factory=list)
    subagents: list[str] = field(default_factory=list)
    stub_bytes: int = 0
    mtime: float = 0.0
    legacy: bool = False


class SessionWriter:
    """Appends one session's lines as the client's recorder does, keeping the clock and the message
    list the client holds in memory (what a `$rewindTo` cuts)."""

    def __init__(self, handle, text: stores._Text, rng: random.Random, *, session_id: str, cwd: str, temp_dir: str,
                 start: float, model: str) -> None:
        self.handle, self.text, self.rng = handle, text, rng
        self.session_id, self.cwd, self.temp_dir, self.model = session_id, cwd, temp_dir, model
        self.hash = project_hash(cwd)
        self.now = start
        self.bytes = self.lines = 0
        self.messages: list[tuple[str, str]] = []   # (id, type) as the client holds them
        self.prompts: list[str] = []                # ids of the prompts still held
        self.context = 9_000                        # tokens of the next request
        self.tool_calls = 0

    def tick(self, low: float = 0.05, high: float = 2.0) -> str:
        self.now += self.rng.uniform(low, high)
        return stamp(self.now)

    def emit(self, record: Any) -> None:
        data = (dumps(record) + "\n").encode()
        self.handle.write(data)
        self.bytes += len(data)
        self.lines += 1

    def header(self, *, kind: str = "main", directories: list[str] | None = None) -> dict[str, Any]:
        moment = stamp(self.now)
        record: dict[str, Any] = {"sessionId": self.session_id, "projectHash": self.hash, "startTime": moment,
                                  "lastUpdated": moment, "kind": kind}
        if directories is not None:
            record["directories"] = directories
        return record

    def start(self) -> None:
        """The header, then the first message list: the injected session context."""
        self.emit(self.header())
        self.set_messages([self.env_message()])

    def env_message(self) -> dict[str, Any]:
        return {"id": ENV_ID, "timestamp": self.tick(0.01, 0.1), "type": "user",
                "content": [{"text": env_context(self.cwd, self.temp_dir, self.now)}]}

    def set_messages(self, messages: list[dict[str, Any]]) -> None:
        self.emit({"$set": {"messages": messages, "lastUpdated": stamp(self.now)}})
        self.messages = [(m["id"], m["type"]) for m in messages]
        self.prompts = [m["id"] for m in messages if m["type"] == "user" and m["id"] != ENV_ID]

    def touched(self) -> None:
        self.emit({"$set": {"lastUpdated": self.tick(0.001, 0.01)}})

    def push(self, message: dict[str, Any]) -> None:
        """A message line: a new one, or one with a held id written again (it replaces it)."""
        self.emit(message)
        if all(held != message["id"] for held, _ in self.messages):
            self.messages.append((message["id"], message["type"]))

    def prompt(self, text: str) -> str:
        message_id = _uuid(self.rng)
        self.push({"id": message_id, "timestamp": self.tick(), "type": "user", "content": [{"text": text}]})
        self.touched()
        self.prompts.append(message_id)
        self.context += len(text) // 4 + 8
        return message_id

    def tokens(self, output: int) -> dict[str, int]:
        cached = int(self.context * self.rng.uniform(0.0, 0.9))
        thoughts = self.rng.randrange(0, 600)
        tokens = {"input": self.context, "output": output, "cached": cached, "thoughts": thoughts, "tool": 0,
                  "total": self.context + output + thoughts}
        self.context += output + 20
        return tokens

    def model_message(self, text: str, *, calls: int, output_chars: int) -> None:
        """The model's message: recorded, its tokens added, its tool calls (with results) added, and
        for a tool call the `functionResponse` message that carries the results on."""
        message: dict[str, Any] = {"id": _uuid(self.rng), "timestamp": self.tick(1, 30), "type": "gemini",
                                   "content": text, "thoughts": [], "tokens": None, "model": self.model}
        self.push(message)
        self.touched()
        message = dict(message, tokens=self.tokens(len(text) // 4 + 30 * calls + 10))
        self.push(message)
        if not calls:
            return
        records = []
        responses = []
        for _ in range(calls):
            call_id = f"{self.rng.choice(('run_shell_command', 'read_file', 'search_file_content'))}-" \
                      f"{int(self.now * 1000)}-{self.text.hex(48)}"
            name = call_id.rsplit("-", 2)[0]
            args = ({"command": self.rng.choice(("git diff", "pytest -q", "ls -la", "rg -n 'def ' src"))}
                    if name == "run_shell_command" else {"file_path": f"{self.cwd}/src/mod_{self.rng.randrange(90)}.py"}
                    if name == "read_file" else {"pattern": "def main"})
            output = self.text(max(40, int(output_chars * self.rng.uniform(0.5, 1.5))))
            response = {"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}
            records.append({"id": call_id, "name": name, "args": args, "result": [response], "status": "success",
                            "timestamp": self.tick(0.5, 20), "resultDisplay": output, "displayName": name,
                            "description": "", "renderOutputAsMarkdown": name != "run_shell_command"})
            responses.append(response)
            self.context += len(output) // 4
            self.tool_calls += 1
        self.push(dict(message, toolCalls=records))
        self.push({"id": _uuid(self.rng), "timestamp": self.tick(0.01, 0.2), "type": "user", "content": responses})
        self.touched()

    def turn(self, budget: int) -> None:
        """One prompt and the model's answer: zero or more tool-call rounds, then the reply."""
        self.now += self.rng.uniform(20, 900)
        self.prompt(self.text(self.rng.randrange(30, 600)).strip() or "go on")
        rounds = 0 if budget < 6_000 else self.rng.choice((1, 1, 2, 3, 4, 6))
        for _ in range(rounds):
            # a tool result is written twice (the call's record, the functionResponse message)
            self.model_message(self.text(self.rng.randrange(20, 300)).strip(), calls=self.rng.choice((1, 1, 2)),
                               output_chars=max(200, budget // rounds // 4))
        self.model_message(self.text(self.rng.randrange(80, 2_500)).strip() or "Done.", calls=0, output_chars=0)

    def rewind(self, back: int) -> str | None:
        """`$rewindTo` the prompt `back` prompts ago: it and every message after it are dropped."""
        if len(self.prompts) < back + 1:
            return None
        target = self.prompts[-back]
        index = next(i for i, (held, _) in enumerate(self.messages) if held == target)
        self.emit({"$rewindTo": target})
        self.messages = self.messages[:index]
        self.prompts = [held for held in self.prompts if any(held == m for m, _ in self.messages)]
        return target

    def resume(self) -> None:
        """A later process took the session up again: it names the session in its file."""
        self.now += self.rng.uniform(60, 3 * 86400)
        self.emit({"$set": {"sessionId": self.session_id}})


def write_session(path: Path, text: stores._Text, rng: random.Random, *, params: GeminiStoreParams, target: int,
                  turns: int, cwd: str, temp_dir: str, headless: bool, start: float,
                  session_id: str | None = None) -> SessionFacts:
    """A session of about `target` bytes and `turns` prompts, its stubs and subagent files beside it."""
    session_id = session_id or _uuid(rng)
    path = path.parent / file_name(session_id, start)
    path.parent.mkdir(parents=True, exist_ok=True)
    facts = SessionFacts(session_id, cwd, str(path), headless=headless)
    model = rng.choice(MODELS)
    per_turn = max(2_000, target // max(1, turns))
    rewind_at = rng.randrange(2, turns) if turns >= 3 and rng.random() < params.rewind_share else -1
    stub_budget = params.max_stubs
    with open(path, "wb") as handle:
        writer = SessionWriter(handle, text, rng, session_id=session_id, cwd=cwd, temp_dir=temp_dir, start=start,
                               model=model)
        writer.start()
        for index in range(turns):
            if index and (headless or rng.random() < 0.08):
                before = writer.now
                writer.resume()
                if stub_budget and file_name(session_id, writer.now) != path.name and \
                        rng.random() >= params.same_minute_share:
                    facts.stubs.append(_write_stub(path.parent, writer, start=writer.now))
                    stub_budget -= 1
                else:
                    writer.now = before + rng.uniform(1, 40)
                    writer.emit(writer.header())
            if index == rewind_at and writer.rewind(rng.choice((1, 1, 2))):
                facts.rewound = True
            writer.turn(int(per_turn * rng.uniform(0.6, 1.4)))
            facts.prompts_written += 1
            if not facts.first_prompt and writer.prompts:
                facts.first_prompt = writer.prompts[0]
            if writer.bytes >= target * 1.1 and index >= 1:
                break
        if not headless and rng.random() < params.summary_share:
            facts.summary = f"{rng.choice(('Fix', 'Add', 'Refactor', 'Explain', 'Test'))} " \
                            f"{rng.choice(('the parser', 'CI', 'docs', 'the API', 'the UI'))} {rng.randrange(999)}"
            writer.emit({"$set": {"summary": facts.summary}})
    if rng.random() < params.subagent_share:
        facts.subagents.append(_write_subagent(path.parent / session_id, writer, text, rng))
    facts.bytes, facts.lines = writer.bytes, writer.lines
    facts.turns = len(writer.prompts)
    facts.tool_calls = writer.tool_calls
    facts.mtime = writer.now
    facts.stub_bytes = sum(os.path.getsize(stub) for stub in facts.stubs)
    os.utime(path, (writer.now, writer.now))
    return facts


def _write_stub(folder: Path, writer: SessionWriter, *, start: float) -> str:
    """The small file a resume leaves when the minute in the session's name has passed: a header."""
    stub = folder / file_name(writer.session_id, start)
    with open(stub, "ab") as handle:
        handle.write((dumps(writer.header()) + "\n").encode())
    os.utime(stub, (start, start))
    return str(stub)


def _write_subagent(folder: Path, parent: SessionWriter, text: stores._Text, rng: random.Random) -> str:
    """A subagent's session: its own file under `chats/<parent id>/`, kind `subagent`."""
    folder.mkdir(parents=True, exist_ok=True)
    session_id = _uuid(rng)
    path = folder / f"{session_id}.jsonl"
    with open(path, "wb") as handle:
        writer = SessionWriter(handle, text, rng, session_id=session_id, cwd=parent.cwd, temp_dir=parent.temp_dir,
                               start=parent.now - rng.uniform(60, 600), model=parent.model)
        writer.hash = parent.hash
        writer.emit(writer.header(kind="subagent", directories=[parent.cwd]))
        for _ in range(rng.randrange(1, 3)):
            writer.turn(rng.randrange(4_000, 30_000))
    return str(path)


def write_legacy(path: Path, text: stores._Text, rng: random.Random, *, cwd: str, temp_dir: str, start: float,
                 turns: int) -> SessionFacts:
    """A whole-file `.json` session as older clients wrote it (`JSON.stringify(record, null, 2)`)."""
    session_id = _uuid(rng)
    path = path.parent / file_name(session_id, start).removesuffix("l")
    path.parent.mkdir(parents=True, exist_ok=True)
    messages: list[dict[str, Any]] = []
    now = start
    for _ in range(turns):
        now += rng.uniform(20, 600)
        messages.append({"id": _uuid(rng), "timestamp": stamp(now), "type": "user",
                         "content": [{"text": text(rng.randrange(30, 400)).strip() or "go on"}]})
        now += rng.uniform(2, 60)
        messages.append({"id": _uuid(rng), "timestamp": stamp(now), "type": "gemini",
                         "content": text(rng.randrange(200, 4_000)).strip() or "Done.", "thoughts": [],
                         "tokens": {"input": 9_000, "output": 300, "cached": 0, "thoughts": 0, "tool": 0,
                                    "total": 9_300}, "model": MODELS[0]})
    record = {"sessionId": session_id, "projectHash": project_hash(cwd), "startTime": stamp(start),
              "lastUpdated": stamp(now), "messages": messages}
    data = json.dumps(record, indent=2, ensure_ascii=False).encode()
    path.write_bytes(data)
    os.utime(path, (now, now))
    return SessionFacts(session_id, cwd, str(path), bytes=len(data), lines=data.count(b"\n") + 1, turns=turns,
                        prompts_written=turns, mtime=now, legacy=True)


def append_turn(path: Path, *, seed: int = 1, budget: int = 60_000) -> int:
    """Append one more turn to a session as a resumed client does (`$set` of the session id, the prompt,
    tool calls, the reply); returns the bytes appended."""
    return _append(path, seed, lambda writer: (writer.resume(), writer.turn(budget)))


def append_rewind(path: Path, *, seed: int = 2, budget: int = 20_000) -> int:
    """Append a `$rewindTo` of the last prompt (it and what followed are dropped), then a new turn."""
    return _append(path, seed, lambda writer: (writer.rewind(1), writer.turn(budget)))


def append_summary(path: Path, summary: str = "Benchmark: a summary set later") -> int:
    """Append `{"$set":{"summary":...}}`, as `gemini --list-sessions` does to another session's file."""
    return _append(path, 3, lambda writer: writer.emit({"$set": {"summary": summary}}))


def _append(path: Path, seed: int, action) -> int:
    session_id, cwd, model, prompts, messages, last = _tail_state(path)
    rng = random.Random(f"append:{seed}:{path.name}")
    before = os.path.getsize(path)
    with open(path, "ab") as handle:
        writer = SessionWriter(handle, stores._Text(rng, stores._corpus(seed, 1 << 18)), rng, session_id=session_id,
                               cwd=cwd, temp_dir=str(path.parent.parent), start=last + 1, model=model)
        writer.prompts, writer.messages = prompts, messages
        action(writer)
    return os.path.getsize(path) - before


def _tail_state(path: Path) -> tuple[str, str, str, list[str], list[tuple[str, str]], float]:
    """What appending needs: the session id, folder, model, the prompts and messages held at the end
    (read whole: the generator's own bookkeeping, not measured) and the last time written."""
    session_id = cwd = model = ""
    messages: list[tuple[str, str]] = []
    last = 0.0
    root = (path.parent.parent / ".project_root")
    cwd = root.read_text() if root.exists() else "/"
    with open(path, "rb") as handle:
        for raw in handle:
            record = json.loads(raw)
            if "$set" in record:
                update = record["$set"]
                if isinstance(update.get("messages"), list):
                    messages = [(m["id"], m["type"]) for m in update["messages"]]
                if "lastUpdated" in update:
                    last = datetime.fromisoformat(update["lastUpdated"].replace("Z", "+00:00")).timestamp()
            elif "$rewindTo" in record:
                ids = [m for m, _ in messages]
                if record["$rewindTo"] in ids:
                    messages = messages[:ids.index(record["$rewindTo"])]
            elif "id" in record:
                if all(m != record["id"] for m, _ in messages):
                    messages.append((record["id"], record["type"]))
                model = record.get("model") or model
            elif "sessionId" in record:
                session_id = record["sessionId"]
    prompt_ids = {m for m, kind in messages if kind == "user" and m != ENV_ID}
    prompts = [m for m, _ in messages if m in prompt_ids]
    return session_id, cwd, model or MODELS[0], prompts, messages, last


def write_big_session(home: Path, target: int, *, seed: int = 20261206, cwd: str = "/home/dev/project-00",
                      turns: int = 120) -> SessionFacts:
    """One interactive session of about `target` bytes in a home of its own (its folder mapped)."""
    rng = random.Random(f"{seed}:big:{target}")
    root = home / ".gemini"
    slug = slugify(os.path.basename(cwd))
    _write_registry(root, {cwd: slug})
    params = GeminiStoreParams(rewind_share=0, summary_share=0, subagent_share=0)
    return write_session(root / "tmp" / slug / "chats" / "x", stores._Text(rng, stores._corpus(seed)), rng,
                         params=params, target=target, turns=turns, cwd=cwd, temp_dir=str(root / "tmp" / slug),
                         headless=False, start=stores._EPOCH.timestamp() - 86400)


# --- the store -------------------------------------------------------------------------------------

def _write_registry(root: Path, mapped: dict[str, str], *, markers: dict[str, str] | None = None) -> None:
    """`projects.json` (pretty-printed, no newline at the end, as the registry saves it) and the
    `.project_root` markers under `tmp/` and `history/`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "projects.json").write_text(json.dumps({"projects": mapped}, indent=2, ensure_ascii=False))
    for folder, slug in (markers if markers is not None else mapped).items():
        for base in ("tmp", "history"):
            (root / base / slug).mkdir(parents=True, exist_ok=True)
            (root / base / slug / ".project_root").write_text(folder)


def plan(params: GeminiStoreParams, shapes: list[dict]) -> list[dict]:
    """Each session's index, size, turns, folder, headless flag and start, from the Claude Code
    store's sessions (`shapes`: its manifest's files) one for one."""
    if len(shapes) < params.sessions:
        raise ValueError(f"{len(shapes)} session shapes for {params.sessions} sessions")
    out = []
    for index, shape in enumerate(shapes[:params.sessions]):
        rng = random.Random(f"{params.seed}:plan:{index}")
        span = min(shape["turns"] * rng.uniform(300, 4_000), 20 * 86400)
        out.append({"index": index, "target": shape["bytes"], "turns": max(1, shape["turns"]), "cwd": shape["cwd"],
                    "headless": bool(shape.get("sdk")), "start": shape["mtime"] - span})
    return out


def folders_of(entries: list[dict], params: GeminiStoreParams) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """The slug of each folder; the folders in projects.json; those with only a `.project_root`."""
    folders = sorted({e["cwd"] for e in entries})
    slugs = slugs_of(folders)
    rng = random.Random(f"{params.seed}:folders")
    orphans = set(rng.sample(folders, min(params.orphan_folders, len(folders))))
    marker_only = set(rng.sample(sorted(set(folders) - orphans), min(2, len(folders) - len(orphans))))
    mapped = {f: s for f, s in slugs.items() if f not in orphans and f not in marker_only}
    return slugs, mapped, orphans


_WORKER: dict[str, Any] = {}


def _init_worker(params: GeminiStoreParams, root: str, slugs: dict[str, str]) -> None:
    _WORKER.update(params=params, root=Path(root), slugs=slugs, corpus=stores._corpus(params.seed))


def _write_entries(entries: list[dict]) -> list[dict]:
    params, root, slugs = _WORKER["params"], _WORKER["root"], _WORKER["slugs"]
    out = []
    for entry in entries:
        rng = random.Random(f"{params.seed}:session:{entry['index']}")
        text = stores._Text(rng, _WORKER["corpus"])
        slug = slugs[entry["cwd"]]
        chats = root / "tmp" / slug / "chats"
        temp_dir = str(root / "tmp" / slug)
        if entry.get("legacy"):
            facts = write_legacy(chats / "x", text, rng, cwd=entry["cwd"], temp_dir=temp_dir, start=entry["start"],
                                 turns=min(entry["turns"], 12))
        else:
            facts = write_session(chats / "x", text, rng, params=params, target=entry["target"], turns=entry["turns"],
                                  cwd=entry["cwd"], temp_dir=temp_dir, headless=entry["headless"],
                                  start=entry["start"])
        out.append({**entry, **asdict(facts)})
    return out


def _stats(sizes: list[int]) -> dict:
    sizes = sorted(sizes)
    n = len(sizes)
    return {"min_kb": sizes[0] / 1024, "median_kb": sizes[n // 2] / 1024, "p90_kb": sizes[int(n * 0.9)] / 1024,
            "max_kb": sizes[-1] / 1024}


def _store(params: GeminiStoreParams, directory: Path, data: dict, build_seconds: float | None) -> GeminiStore:
    return GeminiStore(params, directory, directory / "home", data["sessions"], data["total_bytes"], data["lines"],
                       data["sizes"], data["counts"], data["files"], build_seconds, data.get("build_seconds"))


def check_lines(path: Path) -> int:
    """Every line decodes and re-encodes to itself (the client's byte form); the lines checked."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for line in lines:
        if dumps(json.loads(line)) != line:
            raise ValueError(f"{path}: a line is not in Gemini CLI's byte form")
    return len(lines)


def claude_shapes(claude: claude_store.ClaudeStore) -> list[dict]:
    """The Claude Code store's sessions as shapes for `plan`."""
    return claude_store.manifest_files(claude)


def build_into(directory: Path, params: GeminiStoreParams, shapes: list[dict], *, processes: int = 2,
               log=print) -> dict:
    """Write a store under `directory/home/.gemini` (the folder must not exist); its manifest's data."""
    started = time.perf_counter()
    root = directory / "home" / ".gemini"
    entries = plan(params, shapes)
    rng = random.Random(f"{params.seed}:legacy")
    for entry in rng.sample(entries, min(params.legacy_sessions, len(entries))):
        entry["legacy"] = True
    slugs, mapped, orphans = folders_of(entries, params)
    _write_registry(root, mapped, markers={f: s for f, s in slugs.items() if f not in orphans})
    for folder in orphans:
        (root / "tmp" / slugs[folder] / "chats").mkdir(parents=True, exist_ok=True)
    ordered = sorted(entries, key=lambda e: -e["target"])
    count = max(1, min(40, len(ordered)))
    chunks = [ordered[i::count] for i in range(count)]
    log(f"  building {params.name} store: {params.sessions:,} Gemini CLI sessions with {processes} processes ...")
    results: list[dict] = []
    if processes > 1:
        with multiprocessing.get_context("fork").Pool(processes, initializer=_init_worker,
                                                      initargs=(params, str(root), slugs)) as pool:
            for part in pool.imap_unordered(_write_entries, chunks):
                results.extend(part)
    else:
        _init_worker(params, str(root), slugs)
        for chunk in chunks:
            results.extend(_write_entries(chunk))
    results.sort(key=lambda r: r["index"])
    sample = random.Random(params.seed).sample([r for r in results if not r["legacy"]],
                                               min(30, sum(not r["legacy"] for r in results)))
    checked = sum(check_lines(Path(r["path"])) for r in sample if r["bytes"] < 8 * 2**20)
    sizes = [r["bytes"] for r in results]
    counts = {"folders": len(slugs), "slugs": len(set(slugs.values())), "unmapped": len(slugs) - len(mapped),
              "orphans": len(orphans), "files": len(results) + sum(len(r["stubs"]) for r in results),
              "stubs": sum(len(r["stubs"]) for r in results), "subagents": sum(len(r["subagents"]) for r in results),
              "legacy": sum(r["legacy"] for r in results), "turns": sum(r["turns"] for r in results),
              "headless": sum(r["headless"] for r in results), "rewound": sum(r["rewound"] for r in results),
              "summary": sum(r["summary"] is not None for r in results),
              "tool_calls": sum(r["tool_calls"] for r in results), "lines_checked": checked}
    return {"params": asdict(params), "sessions": len(results), "total_bytes": sum(sizes),
            "lines": sum(r["lines"] for r in results), "sizes": _stats(sizes), "counts": counts,
            "build_seconds": time.perf_counter() - started, "orphan_slugs": sorted(slugs[f] for f in orphans),
            "files": results}


def build(params: GeminiStoreParams = FULL, *, claude: claude_store.ClaudeStore | None = None, force: bool = False,
          processes: int = 2, log=print) -> GeminiStore:
    """The store for these parameters, reused from bench/.stores/ when already built; its sessions'
    shapes from the Claude Code store (built, or reused, for the matching scale)."""
    directory = STORES_DIR / f"{params.name}-{params.digest}"
    manifest = directory / "manifest.json"
    if manifest.exists() and not force:
        return _store(params, directory, json.loads(manifest.read_text()), None)
    if claude is None:
        claude = claude_store.build(claude_store.QUICK if params.sessions <= 200 else claude_store.FULL, log=log)
    STORES_DIR.mkdir(parents=True, exist_ok=True)
    for old in STORES_DIR.glob(f"{params.name}-" + "?" * 12):
        shutil.rmtree(old, ignore_errors=True)
    data = build_into(directory, params, claude_shapes(claude), processes=processes, log=log)
    manifest.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return _store(params, directory, data, data["build_seconds"])


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Build (or reuse) the Gemini CLI benchmark store.")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    built = build(QUICK if args.quick else FULL, force=args.force)
    print(built.root)
    print(built.describe())
    print(f"built in {built.build_seconds:.1f} s" if built.build_seconds else "reused")
