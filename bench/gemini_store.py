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
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import claude_store, codex_store, stores

GENERATOR_VERSION = 1
STORES_DIR = stores.STORES_DIR
MODELS = ("gemini-3-pro-preview", "gemini-3-flash-preview", "gemini-2.5-pro", "gemini-2.5-flash")
ENV_ID = "d04923d38bb0f6017037e74183378ef4"   # the session context's id: the same in every session
_SEPARATORS = (",", ":")


@dataclass(frozen=True)
class GeminiStoreParams:
    name: str = "gemini"
    sessions: int = 2_000
    resume_share: float = 0.08       # an interactive session resumed before a turn (a headless one: every later turn)
    rewind_share: float = 0.1        # `/rewind` to an earlier prompt (`$rewindTo`, a snapshot), then more turns
    summary_share: float = 0.45      # a `$set` of `summary` (the client's model summary)
    subagent_share: float = 0.08     # a subagent session under chats/<session id>/
    same_minute_share: float = 0.2   # a resume within a minute of the last: its stub lines join that minute's stub
    legacy_sessions: int = 12        # whole-file `.json` sessions (older clients)
    orphan_folders: int = 3          # slugs with chats but in neither projects.json nor .project_root
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
    """Appends one session's lines as the client's recorder does, keeping what the client holds in
    memory: the messages as last written (what a resume's or a rewind's `$set.messages` snapshot
    re-writes, and what a `$rewindTo` cuts)."""

    def __init__(self, handle, text: stores._Text, rng: random.Random, *, session_id: str, cwd: str, temp_dir: str,
                 start: float, model: str) -> None:
        self.handle, self.text, self.rng = handle, text, rng
        self.session_id, self.cwd, self.temp_dir, self.model = session_id, cwd, temp_dir, model
        self.hash = project_hash(cwd)
        self.now = start
        self.bytes = self.lines = 0
        self.held: list[dict[str, Any]] = []   # the messages the client holds, as last written
        self.context = 9_000                   # tokens of the next request
        self.tool_calls = 0

    @property
    def prompts(self) -> list[str]:
        """The ids of the prompts held (user messages of text, the session context left out)."""
        return [m["id"] for m in self.held if m["type"] == "user" and m["id"] != ENV_ID
                and any("text" in part for part in m["content"])]

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
                                  "lastUpdated": moment}
        record["kind"] = kind
        if directories is not None:
            record["directories"] = directories
        return record

    def start(self) -> None:
        """The header, then the first message list: the injected session context."""
        self.emit(self.header())
        self.set_messages([self.env_message()])

    def env_message(self) -> dict[str, Any]:
        return {"id": ENV_ID, "timestamp": stamp(self.now + 0.001), "type": "user",
                "content": [{"text": env_context(self.cwd, self.temp_dir, self.now)}]}

    def set_messages(self, messages: list[dict[str, Any]]) -> None:
        """A `$set.messages` snapshot: the client's message list replaced by these."""
        self.emit({"$set": {"messages": messages, "lastUpdated": self.tick(0.001, 0.01)}})
        self.held = list(messages)

    def history(self, *, with_env: bool) -> list[dict[str, Any]]:
        """The held messages as the client re-reads them into its history and writes them back
        (`convertSessionToClientHistory`, then `updateMessagesFromHistory`), as Gemini CLI 0.61.0 wrote
        them (tests/fixtures/gemini/resumed-tool-0.61.0): each at the resume's time; a model message
        becomes its id, time, type and parts (its text, then its calls' `functionCall`s: no `toolCalls`,
        `tokens` or `model` any more), followed by a `<id>_response` message of its calls' results; the
        user messages stay, the `functionResponse` ones too, and the session context unless dropped."""
        now = stamp(self.now)
        out: list[dict[str, Any]] = []
        env = next((m for m in self.held if m["id"] == ENV_ID), None)
        if with_env:
            out.append(dict(env or self.env_message(), timestamp=now))
        for message in self.held:
            if message["id"] == ENV_ID:
                continue
            if message["type"] == "user":
                out.append(dict(message, timestamp=now))
                continue
            calls = message.get("toolCalls") or []
            parts = ([{"text": message["content"]}] if isinstance(message["content"], str) and message["content"]
                     else list(message["content"]) if isinstance(message["content"], list) else [])
            if not any("functionCall" in part for part in parts):
                parts += [{"functionCall": {"id": c["id"], "name": c["name"], "args": c["args"]}} for c in calls]
            responses = list({json.dumps(part, sort_keys=True): part
                              for c in calls for part in (c.get("result") or [])}.values())
            out.append({"id": message["id"], "timestamp": now, "type": message["type"], "content": parts})
            if responses:
                out.append({"id": f"{message['id']}_response", "timestamp": now, "type": "user",
                            "content": responses})
        return out

    def touched(self) -> None:
        self.emit({"$set": {"lastUpdated": self.tick(0.001, 0.01)}})

    def push(self, message: dict[str, Any]) -> None:
        """A message line: a new one, or one with a held id written again (it replaces it)."""
        self.emit(message)
        for index, held in enumerate(self.held):
            if held["id"] == message["id"]:
                self.held[index] = message
                return
        self.held.append(message)

    def prompt(self, text: str) -> str:
        message_id = _uuid(self.rng)
        self.push({"id": message_id, "timestamp": self.tick(), "type": "user", "content": [{"text": text}]})
        self.touched()
        self.context += len(text) // 4 + 8
        return message_id

    def tokens(self, output: int) -> dict[str, int]:
        cached = int(self.context * self.rng.uniform(0.0, 0.9))
        thoughts = self.rng.randrange(0, 600)
        tokens = {"input": self.context, "output": output, "cached": cached, "thoughts": thoughts, "tool": 0,
                  "total": self.context + output + thoughts}
        self.context += output + 20
        return tokens

    def _call(self, output_chars: int) -> dict[str, Any]:
        """One tool call's record, with its result (a shell command, or a file read)."""
        shell = self.rng.random() < 0.7
        millis = int(self.now * 1000)
        output = self.text(max(40, int(output_chars * self.rng.uniform(0.5, 1.5))))
        if shell:
            name = "run_shell_command"
            command = self.rng.choice(("git diff", "pytest -q", "ls -la", "rg -n 'def ' src", "make lint"))
            call_id = f"{name}__{name}_{millis}_{self.tool_calls % 3}"
            args: dict[str, Any] = {"command": command, "description": "Run the command the user gave."}
            wrapped = (f"<untrusted_context>\nOutput: {output}\nProcess Group PGID: {self.rng.randrange(9, 99_999)}"
                       "\n</untrusted_context>")
            display, description, shown, markdown = output, command, "Shell", False
        else:
            name = "read_file"
            target = f"{self.cwd}/src/mod_{self.rng.randrange(90)}.py"
            call_id = f"{name}__{name}_{millis}_{self.tool_calls % 3}"
            args = {"file_path": target}
            wrapped, display, description, shown, markdown = output, "", target, "ReadFile", True
        response = {"functionResponse": {"id": call_id, "name": name, "response": {"output": wrapped}}}
        self.context += len(wrapped) // 4
        self.tool_calls += 1
        return {"id": call_id, "name": name, "args": args, "result": [response], "status": "success",
                "timestamp": self.tick(0.5, 20), "resultDisplay": display, "description": description,
                "displayName": shown, "renderOutputAsMarkdown": markdown}

    def model_message(self, text: str, *, calls: int, output_chars: int) -> None:
        """The model's message and its tokens; with tool calls, the message written again with them
        (their results in), then the `functionResponse` message that carries the results on."""
        message: dict[str, Any] = {"id": _uuid(self.rng), "timestamp": self.tick(1, 30), "type": "gemini",
                                   "content": text, "thoughts": [],
                                   "tokens": self.tokens(len(text) // 4 + 30 * calls + 10), "model": self.model}
        self.push(message)
        self.touched()
        if not calls:
            return
        records = [self._call(output_chars) for _ in range(calls)]
        self.push(dict(message, toolCalls=records))
        self.push({"id": _uuid(self.rng), "timestamp": self.tick(0.01, 0.2), "type": "user",
                   "content": [part for record in records for part in record["result"]]})
        self.touched()

    def turn(self, budget: int) -> None:
        """One prompt and the model's answer: zero or more tool-call rounds, then the reply."""
        self.now += self.rng.uniform(20, 900)
        self.prompt(self.text(self.rng.randrange(30, 600)).strip() or "go on")
        rounds = 0 if budget < 6_000 else self.rng.choice((1, 1, 2, 3, 4, 6))
        for _ in range(rounds):
            # a result is written three times: the call's result and display, the functionResponse message
            self.model_message(self.text(self.rng.randrange(20, 300)).strip(), calls=self.rng.choice((1, 1, 2)),
                               output_chars=max(200, budget // rounds // 4))
        self.model_message(self.text(self.rng.randrange(80, 2_500)).strip() or "Done.", calls=0, output_chars=0)

    def rewind_line(self, back: int = 1) -> str | None:
        """`{"$rewindTo": id}` of the prompt `back` prompts ago: it and every message after it are dropped."""
        prompts = self.prompts
        if len(prompts) < back:
            return None
        target = prompts[-back]
        index = next(i for i, held in enumerate(self.held) if held["id"] == target)
        self.emit({"$rewindTo": target})
        self.held = self.held[:index]
        return target

    def rewind(self, back: int = 1) -> str | None:
        """`/rewind`: the `$rewindTo` line, then at once a snapshot of what is left (no session context)."""
        target = self.rewind_line(back)
        if target is not None:
            self.set_messages(self.history(with_env=False))
        return target

    def resume(self) -> None:
        """A later process took the session up again (`--resume`): it names the session in its file and
        writes back the history it read (a snapshot, the session context first)."""
        self.emit({"$set": {"sessionId": self.session_id}})
        self.set_messages(self.history(with_env=True))


def turn_budget(target: int, turns: int, *, headless: bool, resume_share: float) -> int:
    """Bytes a turn's own lines get, so that the file comes to about `target`: a resume writes back
    the whole history (a snapshot, about half a turn's lines: a tool result is written three times in
    the turn, twice in the snapshot), so a headless session's file grows as the square of its turns."""
    resumes = turns - 1 if headless else resume_share * (turns - 1)
    return max(2_000, int(target / (turns + resumes * (turns + 1) / 2 * 0.7)))


def write_session(path: Path, text: stores._Text, rng: random.Random, *, params: GeminiStoreParams, target: int,
                  turns: int, cwd: str, temp_dir: str, headless: bool, start: float,
                  session_id: str | None = None) -> SessionFacts:
    """A session of about `target` bytes and `turns` prompts, its resume stubs and subagent files beside it."""
    session_id = session_id or _uuid(rng)
    path = path.parent / file_name(session_id, start)
    path.parent.mkdir(parents=True, exist_ok=True)
    facts = SessionFacts(session_id, cwd, str(path), headless=headless)
    budget = turn_budget(target, turns, headless=headless, resume_share=params.resume_share)
    rewind_at = rng.randrange(2, turns) if not headless and turns >= 3 and rng.random() < params.rewind_share else -1
    with open(path, "wb") as handle:
        writer = SessionWriter(handle, text, rng, session_id=session_id, cwd=cwd, temp_dir=temp_dir, start=start,
                               model=rng.choice(MODELS))
        writer.start()
        for index in range(turns):
            if index and (headless or rng.random() < params.resume_share):
                writer.now += rng.uniform(5, 50) if rng.random() < params.same_minute_share else \
                    rng.uniform(60, 2 * 86400)
                if file_name(session_id, writer.now) == path.name:   # not in the minute the session began
                    writer.now += 60
                named = _write_stub(path.parent, session_id, _stub_lines(writer), writer.now)
                if named not in facts.stubs:
                    facts.stubs.append(named)
                writer.resume()
            if index == rewind_at and writer.rewind(rng.choice((1, 1, 2))):
                facts.rewound = True
            writer.turn(int(budget * rng.uniform(0.6, 1.4)))
            facts.prompts_written += 1
        if not headless and rng.random() < params.summary_share:
            facts.summary = f"{rng.choice(('Fix', 'Add', 'Refactor', 'Explain', 'Test'))} " \
                            f"{rng.choice(('the parser', 'CI', 'docs', 'the API', 'the UI'))} {rng.randrange(999)}"
            writer.emit({"$set": {"summary": facts.summary}})
    if rng.random() < params.subagent_share:
        facts.subagents.append(_write_subagent(path.parent / session_id, writer, text, rng))
    facts.bytes, facts.lines = writer.bytes, writer.lines
    facts.turns = len(writer.prompts)
    facts.first_prompt = writer.prompts[0] if writer.prompts else ""
    facts.tool_calls = writer.tool_calls
    facts.mtime = writer.now
    facts.stub_bytes = sum(os.path.getsize(stub) for stub in facts.stubs)
    os.utime(path, (writer.now, writer.now))
    return facts


def _stub_lines(writer: SessionWriter) -> bytes:
    """What a resumed process writes before it finds the session: a new file's header and its first
    message list (the session context), in the file named by this minute."""
    env = writer.env_message()
    return (dumps(writer.header()) + "\n" + dumps({"$set": {"messages": [env], "lastUpdated": env["timestamp"]}})
            + "\n").encode()


def _write_stub(folder: Path, session_id: str, lines: bytes, moment: float) -> str:
    """The small file a resume leaves when the minute in the session's name has passed (appended to,
    when another resume came in the same minute)."""
    stub = folder / file_name(session_id, moment)
    with open(stub, "ab") as handle:
        handle.write(lines)
    os.utime(stub, (moment, moment))
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
    """A whole-file `.json` session as clients up to 0.38.2 wrote it (`JSON.stringify(record, null, 2)`,
    no newline at the end), rewritten in place at every change."""
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
              "lastUpdated": stamp(now), "messages": messages, "kind": "main"}
    data = json.dumps(record, indent=2, ensure_ascii=False).encode()
    path.write_bytes(data)
    os.utime(path, (now, now))
    return SessionFacts(session_id, cwd, str(path), bytes=len(data), lines=data.count(b"\n") + 1, turns=turns,
                        prompts_written=turns, mtime=now, legacy=True)


def append_turn(path: Path, *, seed: int = 1, budget: int = 60_000) -> int:
    """Append one more turn to a session the client is running (the prompt, tool calls with their
    results, the reply); returns the bytes appended."""
    return _append(path, seed, lambda writer: writer.turn(budget))


def append_rewind_line(path: Path) -> int:
    """Append `{"$rewindTo": <the last prompt>}`: the line `/rewind` writes first (the file as a listing
    may find it between the client's two writes)."""
    return _append(path, 2, lambda writer: writer.rewind_line(1))


def append_after_rewind(path: Path, *, seed: int = 3, budget: int = 20_000) -> int:
    """Append what `/rewind` writes right after its `$rewindTo` (a snapshot of the messages left, the
    session context not among them), then the next turn."""
    def after(writer: SessionWriter) -> None:
        writer.set_messages(writer.history(with_env=False))
        writer.turn(budget)
    return _append(path, seed, after)


def append_summary(path: Path, summary: str = "Benchmark: a summary set later") -> int:
    """Append `{"$set":{"summary":...}}`, as `gemini --list-sessions` does to another session's file."""
    return _append(path, 4, lambda writer: writer.emit({"$set": {"summary": summary}}))


def _append(path: Path, seed: int, action) -> int:
    session_id, cwd, model, held, last = _tail_state(path)
    rng = random.Random(f"append:{seed}:{path.name}")
    before = os.path.getsize(path)
    with open(path, "ab") as handle:
        writer = SessionWriter(handle, stores._Text(rng, stores._corpus(seed, 1 << 18)), rng, session_id=session_id,
                               cwd=cwd, temp_dir=str(path.parent.parent), start=last + 1, model=model)
        writer.held = held
        action(writer)
    return os.path.getsize(path) - before


def _tail_state(path: Path) -> tuple[str, str, str, list[dict[str, Any]], float]:
    """What appending needs: the session id, folder and model, the messages held at the end (the
    client's merge, read whole: the generator's own bookkeeping, not measured) and the last time written."""
    session_id = model = ""
    held: dict[str, dict[str, Any]] = {}
    last = 0.0
    marker = path.parent.parent / ".project_root"
    cwd = marker.read_text() if marker.exists() else "/"
    with open(path, "rb") as handle:
        for raw in handle:
            record = json.loads(raw)
            if "$set" in record:
                update = record["$set"]
                if isinstance(update.get("messages"), list):
                    held = {m["id"]: m for m in update["messages"]}
                if "lastUpdated" in update:
                    last = datetime.fromisoformat(update["lastUpdated"].replace("Z", "+00:00")).timestamp()
            elif "$rewindTo" in record:
                ids = list(held)
                if record["$rewindTo"] in ids:
                    for dropped in ids[ids.index(record["$rewindTo"]):]:
                        del held[dropped]
                else:
                    held = {}
            elif "id" in record:
                held[record["id"]] = record
                model = record.get("model") or model
            elif "sessionId" in record:
                session_id = record["sessionId"]
    return session_id, cwd, model or MODELS[0], list(held.values()), last


def write_big_session(home: Path, target: int, *, seed: int = 20261206, cwd: str = "/home/dev/project-00",
                      turns: int = 120) -> SessionFacts:
    """One interactive session of about `target` bytes in a home of its own (its folder mapped)."""
    rng = random.Random(f"{seed}:big:{target}")
    root = home / ".gemini"
    slug = slugify(os.path.basename(cwd))
    _write_registry(root, {cwd: slug})
    params = GeminiStoreParams(resume_share=0, rewind_share=0, summary_share=0, subagent_share=0)
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


def _store(params: GeminiStoreParams, directory: Path, data: dict, build_seconds: float | None) -> GeminiStore:
    return GeminiStore(params, directory, directory / "home", data["sessions"], data["total_bytes"], data["lines"],
                       data["sizes"], data["counts"], data["files"], build_seconds, data.get("build_seconds"))


_OPAQUE = frozenset({"args", "response", "resultDisplay", "directories"})   # shapes that vary by tool or folder


def kind_of(record: dict[str, Any]) -> str:
    """A line's kind: header, `$set` of which keys, `$rewindTo`, or a message of which type."""
    if "$rewindTo" in record:
        return "$rewindTo"
    if "$set" in record:
        return "$set " + ",".join(sorted(record["$set"]))
    if "id" in record:
        return f"message {record.get('type')}" + (" with toolCalls" if "toolCalls" in record else "")
    return "header " + str(record.get("kind"))


def key_orders(value: Any, path: str = "") -> Iterator[tuple[str, tuple[str, ...]]]:
    """Every object in a record: (where it is, its keys in their order). Values are left out; what
    the client's byte form fixes is the keys and their order (`JSON.stringify` keeps the order keys
    were set in). A message in a `$set.messages` list is where a message line is."""
    if isinstance(value, dict):
        if "id" in value and "type" in value and "timestamp" in value:
            path = f"message {value['type']}" + (" with toolCalls" if "toolCalls" in value else "")
        yield path, tuple(value)
        for key, item in value.items():
            if key not in _OPAQUE:
                yield from key_orders(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from key_orders(item, path + "[]")


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
            "lines": sum(r["lines"] for r in results), "sizes": codex_store._stats(sizes), "counts": counts,
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
