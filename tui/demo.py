"""The `--demo` store: three project folders with Fractal sessions of every status, short and
long, pinned and titled, plus one corrupt file, all written through core; and beside them, in
the demo's own Claude Code root, a handful of Claude Code sessions written byte for byte the way
Claude Code 2.1.332 writes them, and in its own Codex home a few Codex sessions (`demo_codex.py`).
Deterministic for a given clock, so snapshot tests can use it."""

from __future__ import annotations

import random
import string
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reprise.core.paths import SessionRef, workspace_key
from reprise.core.sources.claude.layout import slug
from reprise.core.sources.fractal.models import (
    INTERRUPTED_ERROR,
    MAX_ITERATIONS_ERROR,
    AgentTurn,
    HistoryStatus,
    HistoryTurn,
    SessionState,
    SummaryTurn,
    TurnUsage,
    UserTurn,
)
from reprise.core.sources.fractal.store import SessionMeta, Store

from .demo_codex import codex_root, write_codex_sessions
from .demo_files import write_json_lines

PROJECTS = {
    "webapp": "# AGENTS.md\n\nUse pnpm. Run `pnpm test` before committing. Keep components small.\n",
    "cli-tool": None,
    "data-pipeline": "# Pipeline rules\n\nNever touch prod credentials. Prefer polars over pandas.\n",
}

TOPICS = [
    ("Add a dark mode toggle to the settings page", "Added a ThemeToggle component and wired it to the store."),
    ("Why does the login test fail on CI?", "The test relied on local time; it now freezes the clock."),
    ("Refactor the date parsing into its own module", "Moved parsing into `dates.py` with tests for every format."),
    ("Speed up the CSV import", "Switched to a streaming reader; 4x faster on the 2 GB sample."),
    ("Fix the flaky websocket reconnect", "Reconnect now backs off exponentially and resets on success."),
    ("Document the release process", "Wrote RELEASING.md with the checklist and the tag format."),
    ("Add retries to the S3 uploader", "Retries on 5xx with jitter; idempotent keys prevent duplicates."),
    ("Explain the caching layer to me", "Requests hit an LRU in front of Redis; keys include the schema version."),
]


def _session_id(rng: random.Random) -> str:
    return uuid.UUID(int=rng.getrandbits(128), version=4).hex


def _succeeded(turns: int) -> list[HistoryStatus]:
    return ["succeeded"] * turns


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


# Per project, its sessions: (turns, each turn's status, age, title, pinned, long replies).
Plan = tuple[int, list[HistoryStatus], timedelta, str | None, bool, bool]


def _state(session_id: str, turns: int, statuses: list[HistoryStatus], start: datetime, rng: random.Random,
           long_replies: bool = False) -> SessionState:
    state = SessionState(session_id=session_id)
    moment = start
    for index in range(turns):
        turn_id = f"turn-{_session_id(rng)}"
        message, reply = TOPICS[(index + rng.randrange(len(TOPICS))) % len(TOPICS)]
        status = statuses[index] if index < len(statuses) else "succeeded"
        if long_replies:
            steps = (f"Step {n}: checked module_{n}.py and updated its tests." for n in range(120))
            reply = reply + " " + " ".join(steps)
        files_read = [f"src/module_{rng.randrange(40)}.py" for _ in range(rng.randrange(1, 5))]
        files_modified = files_read[: rng.randrange(0, 3)]
        commands = ["pytest -q"] if rng.random() < 0.6 else []
        created = moment
        moment = moment + timedelta(minutes=rng.randrange(2, 40))
        error = {"failed": "Tool call failed: permission denied writing dist/", "max_iterations": MAX_ITERATIONS_ERROR,
                 "interrupted": INTERRUPTED_ERROR}.get(status)
        if status == "pending":
            agent = None
        else:
            usage = TurnUsage(input_tokens=rng.randrange(20_000, 90_000), output_tokens=rng.randrange(500, 4_000),
                              cost=round(rng.uniform(0.01, 0.4), 4), duration_ms=rng.randrange(5_000, 90_000),
                              iterations=rng.randrange(2, 12), context_tokens=15_000 + 900 * index)
            agent = AgentTurn(status=status, response="" if status == "failed" else reply,
                              files_read_count=len(files_read), files_changed_count=len(files_modified),
                              commands_run_count=len(commands), error=error, usage=usage)
        state.summary.turns.append(SummaryTurn(turn_id=turn_id, user=UserTurn(message=message), agent=agent))
        state.history.append(HistoryTurn(
            turn_id=turn_id, user_message=message, status=status, files_read=files_read,
            files_modified=files_modified, commands_run=commands, trace=None, error=error,
            created_at=_iso(created), updated_at=_iso(moment if status != "pending" else created)))
    state.history = state.history[-20:]
    return state


def build_demo(root: Path, *, now: datetime | None = None, seed: int = 7) -> Path:
    """Write the demo store under `root` and return the folder of its main project."""
    now = now or datetime.now(UTC)
    rng = random.Random(seed)
    store = Store(root / "state")
    projects = root / "projects"
    plans: dict[str, list[Plan]] = {
        "webapp": [
            (3, _succeeded(3), timedelta(hours=2), "Dark mode", True, False),
            (60, _succeeded(55) + ["failed", "succeeded", "max_iterations", "succeeded", "succeeded"],
             timedelta(days=3), "Big refactor (60 turns)", False, True),
            (5, ["succeeded", "succeeded", "failed", "succeeded", "pending"], timedelta(minutes=30), None, False,
             False),
            (2, ["succeeded", "interrupted"], timedelta(days=12), None, False, False),
            (0, [], timedelta(days=1), "Empty session", False, False),
        ],
        "cli-tool": [
            (8, _succeeded(6) + ["max_iterations", "succeeded"], timedelta(days=1), None, False, False),
            (1, ["failed"], timedelta(days=40), None, False, False),
        ],
        "data-pipeline": [
            (25, _succeeded(24) + ["interrupted"], timedelta(hours=6), "Polars migration", True, False),
            (4, _succeeded(4), timedelta(days=90), None, False, False),
        ],
    }
    for project, sessions in plans.items():
        folder = projects / project
        folder.mkdir(parents=True, exist_ok=True)
        instructions = PROJECTS[project]
        if instructions:
            (folder / "AGENTS.md").write_text(instructions, encoding="utf-8")
        key = workspace_key(folder)
        store.record_workspace(key, folder.resolve())
        for turns, statuses, age, title, pinned, long_replies in sessions:
            ref = SessionRef(key, _session_id(rng), "fractal")
            start = now - age - timedelta(minutes=25 * turns)
            state = _state(ref.session_id, turns, statuses, start, rng, long_replies)
            store.save(ref, state, expected=None)
            store.write_meta(ref, SessionMeta(title=title, pinned=pinned, created_at=_iso(start)))
    broken = store.paths.sessions(workspace_key(projects / "cli-tool")) / f"{_session_id(rng)}.json"
    broken.write_bytes(b'{"schema_version": 1, "session_id": "truncated by a crash", "summary": {"tu')
    _write_claude_sessions(claude_root(root), projects, now, random.Random(seed + 1))
    write_codex_sessions(codex_root(root), projects, now, random.Random(seed + 2))
    return (projects / "webapp").resolve()


# --- Claude Code's sessions ---------------------------------------------------------------------------

CLAUDE_VERSION = "2.1.332"
CLAUDE_MODEL = "claude-opus-5-5"
# Per million tokens, to give each file the `cost-state` record Claude Code keeps (API-equivalent).
_PRICES = {"input_tokens": 15.0, "cache_creation_input_tokens": 18.75, "cache_read_input_tokens": 1.5,
           "output_tokens": 75.0}
_ID_CHARS = string.ascii_letters + string.digits


def claude_root(root: Path) -> Path:
    """The demo's own Claude Code root (what `CLAUDE_CONFIG_DIR` points at while the demo runs)."""
    return root / "claude"


class _ClaudeFile:
    """One session file as Claude Code writes it: compact JSON lines; the conversation's records
    linked by `parentUuid`, each carrying the session's context fields, each API message's content
    blocks on lines of their own that share `message.id` and repeat its usage."""

    def __init__(self, rng: random.Random, folder: Path, start: datetime, *, interactive: bool = False):
        self.rng, self.cwd, self.clock = rng, str(folder), start
        self.session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self.entrypoint = "cli" if interactive else "sdk-cli"
        self.lines: list[dict[str, object]] = []
        self.head: str | None = None
        self.context = 11_800 + rng.randrange(1_500)   # system prompt and tool definitions, before any history
        self.totals = dict.fromkeys(_PRICES, 0)
        self.prompt_text = ""
        self.turn_started = start

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _api_id(self, prefix: str) -> str:
        return prefix + "".join(self.rng.choice(_ID_CHARS) for _ in range(24))

    def _stamp(self, seconds: float) -> str:
        self.clock += timedelta(seconds=seconds)
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def _link(self, kind: str, body: dict[str, object], tail: dict[str, object] | None = None, *,
              seconds: float = 0.05, root: bool = False) -> str:
        """A record of the conversation, its fields in Claude Code's order: the link, the body, the
        type and id, the tail, then the session's context."""
        record_id = self._uuid()
        record: dict[str, object] = {"parentUuid": None if root else self.head, "isSidechain": False}
        record.update(body)
        record.update({"type": kind, "uuid": record_id, "timestamp": self._stamp(seconds)})
        record.update(tail or {})
        record.update({"userType": "external", "entrypoint": self.entrypoint, "cwd": self.cwd,
                       "sessionId": self.session_id, "version": CLAUDE_VERSION, "gitBranch": "main"})
        self.lines.append(record)
        self.head = record_id
        return record_id

    def prompt(self, text: str, *, after_minutes: float = 0) -> None:
        self.clock += timedelta(minutes=after_minutes)
        self.turn_started = self.clock
        self.prompt_text = text
        self.lines.append({"type": "queue-operation", "operation": "enqueue", "timestamp": self._stamp(0),
                           "sessionId": self.session_id, "content": text})
        self.lines.append({"type": "queue-operation", "operation": "dequeue", "timestamp": self._stamp(0.003),
                           "sessionId": self.session_id})
        origin = {"promptSource": "typed", "turnOrigin": "human"} if self.entrypoint == "cli" else {
            "promptSource": "sdk", "turnOrigin": "sdk"}
        self._link("user", {"promptId": self._uuid(), "message": {"role": "user", "content": text}},
                   {"permissionMode": "default", **origin})

    def reply(self, *blocks: dict[str, object], seconds: float = 20) -> None:
        """One API message of these content blocks; its usage grows the context by what the turn added."""
        grown = self.rng.randrange(300, 2_500)
        tokens = {"input_tokens": self.rng.randrange(3, 12), "cache_creation_input_tokens": grown,
                  "cache_read_input_tokens": self.context, "output_tokens": self.rng.randrange(120, 1_400)}
        usage = {**tokens, "service_tier": "standard"}
        self.context += grown + tokens["input_tokens"] + tokens["output_tokens"]
        for key in _PRICES:
            self.totals[key] += tokens[key]
        message_id, request = self._api_id("msg_01"), self._api_id("req_01")
        stop = "tool_use" if any(block["type"] == "tool_use" for block in blocks) else "end_turn"
        for index, block in enumerate(blocks):
            message = {"id": message_id, "type": "message", "role": "assistant", "model": CLAUDE_MODEL,
                       "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
            self._link("assistant", {"message": message, "apiBlockIndex": index, "requestId": request,
                                     "requestedModel": CLAUDE_MODEL}, seconds=seconds if index == 0 else 0.4)

    def say(self, text: str, *, thinking: str | None = None, seconds: float = 20) -> None:
        blocks: list[dict[str, object]] = []
        if thinking is not None:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": self._api_id("sig")})
        blocks.append({"type": "text", "text": text})
        self.reply(*blocks, seconds=seconds)
        self.end_turn()

    def bash(self, intro: str, command: str, description: str, stdout: str, *, stderr: str = "") -> None:
        """A Bash tool call and its result, as the next record of the turn."""
        tool_id = self._api_id("toolu_01")
        self.reply({"type": "text", "text": intro},
                   {"type": "tool_use", "id": tool_id, "name": "Bash",
                    "input": {"command": command, "description": description}})
        output = "\n".join(part for part in (stdout, stderr) if part)
        self._link("user", {"message": {"role": "user", "content": [
            {"tool_use_id": tool_id, "type": "tool_result", "content": output, "is_error": False}]}},
            {"toolUseResult": {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False,
                               "noOutputExpected": False}, "sourceToolAssistantUUID": self.head}, seconds=3)

    def interrupted(self) -> None:
        self._link("user", {"message": {"role": "user", "content": [
            {"type": "text", "text": "[Request interrupted by user]"}]}}, seconds=8)
        self.end_turn()

    def end_turn(self) -> None:
        self.lines.append({"type": "last-prompt", "lastPrompt": self.prompt_text, "leafUuid": self.head,
                           "sessionId": self.session_id})
        if self.entrypoint == "cli":
            took = int((self.clock - self.turn_started).total_seconds() * 1000)
            self._link("system", {}, {"subtype": "turn_duration", "durationMs": took, "messageCount": len(self.lines),
                                      "isMeta": False}, seconds=0.02)

    def compact(self, summary: str, *, after_minutes: float = 0) -> None:
        """`/compact`: the boundary (no parent; the logical one kept), the summary as a user record,
        then the command's wrappers; the context after it is the summary's."""
        self.clock += timedelta(minutes=after_minutes)
        post = 2_400 + self.rng.randrange(600)
        metadata = {"trigger": "manual", "preTokens": self.context, "durationMs": 41_000, "postTokens": post}
        self._link("system", {"logicalParentUuid": self.head}, {
            "subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False, "level": "info",
            "compactMetadata": metadata}, root=True, seconds=41)
        self._link("user", {"promptId": self._uuid(), "message": {"role": "user", "content": (
            "This session is being continued from a previous conversation that ran out of context. The summary "
            f"below covers the earlier portion of the conversation.\n\nSummary:\n{summary}")}},
            {"isVisibleInTranscriptOnly": True, "isCompactSummary": True})
        self._link("user", {"message": {"role": "user", "content": (
            "<local-command-caveat>The command below was run directly in Claude Code, not sent to you as a "
            "request, and its output goes straight to the user. It's recorded here as context for later "
            "messages.</local-command-caveat>")}}, {"isMeta": True})
        self._link("user", {"message": {"role": "user", "content": (
            "<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n"
            "            <command-args></command-args>")}})
        self._link("user", {"message": {"role": "user", "content": (
            "<local-command-stdout>Compacted (ctrl+o to see full summary)</local-command-stdout>")}})
        self.context = post

    def title(self, text: str) -> None:
        self.lines.append({"type": "custom-title", "customTitle": text, "sessionId": self.session_id})
        self.lines.append({"type": "agent-name", "agentName": text, "sessionId": self.session_id})

    def write(self, root: Path) -> Path:
        """The file under `root`'s projects, its cost recorded, modified when its last record was written."""
        cost = sum(self.totals[key] * price for key, price in _PRICES.items()) / 1_000_000
        self.lines.append({"type": "cost-state", "sessionId": self.session_id, "totalCostUSD": round(cost, 6),
                           "modelUsage": {CLAUDE_MODEL: {"inputTokens": self.totals["input_tokens"],
                                                         "outputTokens": self.totals["output_tokens"],
                                                         "cacheReadInputTokens": self.totals["cache_read_input_tokens"],
                                                         "cacheCreationInputTokens":
                                                             self.totals["cache_creation_input_tokens"],
                                                         "costUSD": round(cost, 6)}}})
        return write_json_lines(root / "projects" / slug(self.cwd) / f"{self.session_id}.jsonl", self.lines,
                                self.clock)


def _write_claude_sessions(root: Path, projects: Path, now: datetime, rng: random.Random) -> None:
    """Five Claude Code sessions: four in the main project (one from the terminal UI, titled; one with
    a Bash call; one compacted; one old enough for Claude Code's cleanup to be near) and one in
    another project, interrupted; all but the terminal UI's made with `claude -p`."""
    webapp, pipeline = (projects / "webapp").resolve(), (projects / "data-pipeline").resolve()

    typed = _ClaudeFile(rng, webapp, now - timedelta(hours=3, minutes=40), interactive=True)
    typed.prompt("Add address autocomplete to the checkout form")
    typed.say("Added an `AddressAutocomplete` component: it queries the places endpoint 250 ms after the last "
              "keystroke and fills street, city and postcode; the form keeps working when the endpoint is down.",
              thinking="The form is src/checkout/AddressForm.tsx and the places key is already in the env file, "
                       "so the component only needs a debounced fetch and a listbox.", seconds=48)
    typed.prompt("Keyboard navigation doesn't work in the suggestions", after_minutes=6)
    typed.say("The suggestions now follow ArrowUp, ArrowDown, Enter and Escape, and the input keeps "
              "`aria-activedescendant` in step with the highlighted one.", seconds=35)
    typed.title("Checkout: address autocomplete")
    typed.prompt("Run the checkout tests", after_minutes=4)
    typed.bash("Running the checkout tests.", "pnpm test checkout", "Run the checkout tests",
               " ✓ src/checkout/AddressForm.test.tsx (12 tests)\n ✓ src/checkout/AddressAutocomplete.test.tsx "
               "(9 tests)\n\n Test Files  2 passed (2)\n      Tests  21 passed (21)")
    typed.say("All 21 checkout tests pass, the 9 new ones included.", seconds=6)
    typed.write(root)

    failing = _ClaudeFile(rng, webapp, now - timedelta(days=1, hours=2))
    failing.prompt("Why does the date test fail on CI? Run it and fix it.")
    failing.bash("I'll run the test first.", "pnpm vitest run src/dates.test.ts", "Run the date tests",
                 " FAIL  src/dates.test.ts > formats a date in the user's time zone\nAssertionError: expected "
                 "'31/05/2026' to be '01/06/2026'\n\n Test Files  1 failed (1)\n      Tests  1 failed | 6 passed (7)",
                 stderr="ELIFECYCLE  Test failed. See above for more details.")
    failing.say("The test formats `new Date()` in the machine's time zone and CI runs in UTC. I froze the clock "
                "with `vi.setSystemTime` and set `TZ=Europe/Paris` in the test setup; all 7 date tests pass.",
                seconds=30)
    failing.write(root)

    long = _ClaudeFile(rng, webapp, now - timedelta(days=4, hours=5))
    steps = [("Plan the move of the API from REST to tRPC", "Three routers (orders, users, products), moved one at "
              "a time behind the existing REST paths so the mobile app keeps working."),
             ("Start with the orders router", "The orders router is in src/server/orders.ts with the same "
              "validation as the REST handlers; the REST paths now call it."),
             ("Now the users router", "Done: the users router reuses the session middleware, and the admin-only "
              "procedures check the role in one place.")]
    for index, (prompt, reply) in enumerate(steps):
        long.prompt(prompt, after_minutes=12 * index)
        long.say(reply, seconds=60)
    long.compact("1. Primary Request and Intent: move the API from REST to tRPC, one router at a time.\n"
                 "2. Done: the orders and users routers.\n3. Pending Tasks: the products router.", after_minutes=3)
    long.prompt("Continue with the products router", after_minutes=1)
    long.say("The products router is in place and the last REST handlers are thin wrappers around it.",
             seconds=70)
    long.write(root)

    old = _ClaudeFile(rng, webapp, now - timedelta(days=27, hours=6))
    old.prompt("Move the eslint config to the flat config format")
    old.say("Replaced .eslintrc.cjs with eslint.config.js; the rules are unchanged and `pnpm lint` is clean.",
            seconds=40)
    old.write(root)

    other = _ClaudeFile(rng, pipeline, now - timedelta(days=2, hours=3))
    other.prompt("Profile the nightly job and tell me where the time goes")
    other.say("80% of the run is the join of events with accounts: it loads both tables in full. The writes "
              "and the validation take the rest.", seconds=55)
    other.prompt("Rewrite the join step with polars lazy frames", after_minutes=9)
    other.reply({"type": "text", "text": "Starting with the events scan: "}, seconds=12)
    other.interrupted()
    other.write(root)
