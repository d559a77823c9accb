"""Gemini CLI's sample sessions (the `--demo` store's and the conformance suite's), in the byte form
of Gemini CLI 0.61.0 (the lines, key order and `JSON.stringify` form of the real sessions in
`tests/fixtures/gemini/store-0.61.0/`), in their own home (`env.root/gemini-home/.gemini`, as the
test isolation points `GEMINI_CLI_HOME`), with the sample project folders in `projects.json` and each
project's `.project_root`. As the client writes them: a header, a `$set.messages` with the injected
`<session_context>` message, then per turn the prompt, a `$set.lastUpdated`, the reply (a tool call
written again with its result, then a user message carrying the result back) and a `$set.lastUpdated`;
a resume appends `$set.sessionId` and a snapshot of the conversation to the first file and, in a
later minute, leaves a stub file of the same session. One session has the title the client's model
gave it (`$set.summary`, what the interactive client writes).
"""

from __future__ import annotations

import json
import os
import random
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..samples import Sample, SampleEnv, SampleSet
from .layout import CHATS, PROJECT_ROOT, PROJECTS, TMP, project_hash
from .writer import file_name, iso, line, stringify

MODEL = "gemini-3.8-flash"
CONTEXT_ID = "d04923d38bb0f6017037e74183378ef4"   # the `<session_context>` message's id in every session


def gemini_home(root: Path) -> Path:
    """The samples' own Gemini CLI home under `root` (what `GEMINI_CLI_HOME` points at)."""
    return root / "gemini-home"


def _context(folder: Path, store: Path, slug: str, now: datetime) -> str:
    return ("<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
            f"Today's date is {now.strftime('%A, %B %-d, %Y')} (formatted according to the user's locale).\n"
            "My operating system is: linux\n"
            f"The project's temporary directory is: {store / TMP / slug}\n"
            f"- **Workspace Directories:**\n  - {folder}\n- **Directory Structure:**\n\n"
            f"Showing up to 200 items (files + folders).\n\n{folder}/\n└───AGENTS.md\n\n\n</session_context>")


class GeminiChat:
    """One session as Gemini CLI writes it, line by line."""

    def __init__(self, rng: random.Random, store: Path, folder: Path, slug: str, start: datetime):
        self.rng, self.store, self.folder, self.slug, self.clock = rng, store, folder, slug, start
        self.session_id = self._uuid()
        self.started = start
        self.files: dict[str, list[bytes]] = {}
        self.name = file_name(self.session_id, start)
        self.messages: list[dict[str, Any]] = []
        self.prompts: list[str] = []
        self.context = 7_800 + rng.randrange(200)
        self.ran_tool = False
        self.title: str | None = None
        self._start(self.name)

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _stamp(self, seconds: float) -> str:
        self.clock += timedelta(seconds=seconds)
        return iso(self.clock)

    def _write(self, name: str, record: dict[str, Any]) -> None:
        self.files.setdefault(name, []).append(line(record))

    def _start(self, name: str) -> None:
        stamp = iso(self.clock)
        self._write(name, {"sessionId": self.session_id, "projectHash": project_hash(str(self.folder)),
                           "startTime": stamp, "lastUpdated": stamp, "kind": "main"})
        context = {"id": CONTEXT_ID, "timestamp": stamp, "type": "user",
                   "content": [{"text": _context(self.folder, self.store, self.slug, self.clock)}]}
        self._write(name, {"$set": {"messages": [context]}})
        if not self.messages:
            self.messages.append(context)

    def _add(self, message: dict[str, Any]) -> None:
        self._write(self.name, message)
        known = next((at for at, old in enumerate(self.messages) if old["id"] == message["id"]), None)
        if known is None:
            self.messages.append(message)
        else:
            self.messages[known] = message

    def _updated(self) -> None:
        self._write(self.name, {"$set": {"lastUpdated": iso(self.clock)}})

    def prompt(self, text: str, *, after_minutes: float = 0) -> None:
        self.clock += timedelta(minutes=after_minutes)
        self.prompts.append(text)
        self._add({"id": self._uuid(), "timestamp": self._stamp(1.2), "type": "user", "content": [{"text": text}]})
        self._updated()

    def _reply(self, text: str, seconds: float, **extra: Any) -> dict[str, Any]:
        output = max(8, len(text) // 4)
        self.context += 30 + self.rng.randrange(40)
        tokens = {"input": self.context, "output": output, "cached": max(0, self.context - 600), "thoughts": 0,
                  "tool": 0, "total": self.context + output}
        message = {"id": self._uuid(), "timestamp": self._stamp(seconds), "type": "gemini", "content": text,
                   "thoughts": [], "tokens": tokens, "model": MODEL, **extra}
        self.context += output
        return message

    def say(self, text: str, *, seconds: float = 20) -> None:
        self._add(self._reply(text, seconds))
        self._updated()

    def command(self, text: str, command: str, output: str, *, seconds: float = 6) -> None:
        """A reply that runs `command` through `run_shell_command` (written twice: then with its result)."""
        self.ran_tool = True
        reply = self._reply(text, seconds)
        self._add(reply)
        self._updated()
        call_id = f"run_shell_command__run_shell_command_{int(self.clock.timestamp() * 1000)}_0"
        response = {"functionResponse": {"id": call_id, "name": "run_shell_command", "response": {
            "output": f"<untrusted_context>\nOutput: {output}\nProcess Group PGID: 4242\n</untrusted_context>"}}}
        call = {"id": call_id, "name": "run_shell_command", "args": {"command": command,
                                                                      "description": "Run the tests."},
                "result": [response], "status": "success", "timestamp": self._stamp(2), "resultDisplay": output,
                "description": command, "displayName": "Shell", "renderOutputAsMarkdown": False}
        self._add({**reply, "toolCalls": [call]})
        self._add({"id": self._uuid(), "timestamp": self._stamp(0.1), "type": "user", "content": [response]})
        self._updated()

    def resume(self, *, after_minutes: float) -> None:
        """`gemini --resume ID` in a later minute: the first file gets `$set.sessionId` and a snapshot of
        the conversation, and a stub file of the session is started for the new minute."""
        self.clock += timedelta(minutes=after_minutes)
        self._start(file_name(self.session_id, self.clock))
        self._write(self.name, {"$set": {"sessionId": self.session_id}})
        self._write(self.name, {"$set": {"messages": list(self.messages)}})

    def summarize(self, title: str) -> None:
        """The title the client's model gave the session (its next interactive start writes it)."""
        self.title = title
        self._write(self.name, {"$set": {"summary": title}})

    def sample(self) -> Sample:
        chats = self.store / TMP / self.slug / CHATS
        chats.mkdir(parents=True, exist_ok=True)
        stamp = int(self.clock.timestamp() * 1e9)
        for name, lines in self.files.items():
            (chats / name).write_bytes(b"".join(lines))
            os.utime(chats / name, ns=(stamp, stamp))
        files = [f"{TMP}/{self.slug}/{CHATS}/{name}" for name in self.files]
        return Sample(self.session_id, self.folder, tuple(self.prompts), title=self.title, tool_call=self.ran_tool,
                      files=tuple(files))


def _register(store: Path, projects: dict[str, Path]) -> None:
    """`projects.json` and each project's `.project_root`, as the client writes them."""
    store.mkdir(parents=True, exist_ok=True)
    registry = {"projects": {str(folder): slug for slug, folder in projects.items()}}
    (store / PROJECTS).write_text(json.dumps(registry, indent=2), encoding="utf-8")
    for slug, folder in projects.items():
        for kind in (TMP, "history"):
            (store / kind / slug).mkdir(parents=True, exist_ok=True)
            (store / kind / slug / PROJECT_ROOT).write_text(str(folder), encoding="utf-8")


def write_samples(env: SampleEnv) -> SampleSet:
    """Four Gemini CLI sessions: in the main project one with a shell command, one resumed in a later
    minute (its stub file beside it) and titled by the client, one with a single turn; and one in
    another project."""
    home, now, rng = gemini_home(env.root), env.now, random.Random(env.seed + 3)
    store = home / ".gemini"
    webapp, cli_tool = env.project("webapp"), env.project("cli-tool")
    _register(store, {"webapp": webapp, "cli-tool": cli_tool})
    written = []

    tested = GeminiChat(rng, store, webapp, "webapp", now - timedelta(days=3, hours=5))
    tested.prompt("Why does the checkout page render twice on every keystroke?")
    tested.say("`CheckoutForm` builds a new `validators` object on each render, so the memoized fields see a "
               "new prop every time; it is now created once with `useMemo`.", seconds=35)
    tested.prompt("Run the checkout tests", after_minutes=2)
    tested.command("Running the checkout tests.", "pnpm vitest run src/checkout",
                   " ✓ src/checkout/form.test.ts (9 tests)\n\n Test Files  1 passed (1)\n      Tests  9 passed (9)")
    tested.say("All 9 checkout tests pass.", seconds=4)
    written.append(tested.sample())

    resumed = GeminiChat(rng, store, webapp, "webapp", now - timedelta(days=8, hours=1))
    resumed.prompt("Add dark mode to the settings page, following the system theme by default")
    resumed.say("Added a theme switch (system, light, dark) to Settings; `useTheme` follows "
                "`prefers-color-scheme` until the user picks one.", seconds=48)
    resumed.resume(after_minutes=95)
    resumed.prompt("Remember the choice across reloads")
    resumed.say("The choice is saved in localStorage under `theme` and read before the first paint, so the "
                "page no longer flashes light.", seconds=22)
    resumed.summarize("Dark mode in settings")
    written.append(resumed.sample())

    quick = GeminiChat(rng, store, webapp, "webapp", now - timedelta(days=12, hours=3))
    quick.prompt("List the environment variables the API client reads")
    quick.say("Three: `API_URL`, `API_TIMEOUT_MS` (default 8000) and `API_RETRIES` (default 2), all in "
              "src/api/config.ts.", seconds=12)
    written.append(quick.sample())

    other = GeminiChat(rng, store, cli_tool, "cli-tool", now - timedelta(days=1, hours=9))
    other.prompt("Make `cli-tool sync --dry-run` print what it would copy")
    other.say("`--dry-run` now lists each file with its size and the destination, then the totals, and "
              "copies nothing.", seconds=27)
    written.append(other.sample())
    return SampleSet("gemini", store, tuple(written), dumps=stringify,
                     environment={"GEMINI_CLI_HOME": str(home)})

