"""Real Gemini CLI sessions, made offline by the real client against the fake Gemini API server.

The client is `$REPRISE_GEMINI_BIN` (`bundle/gemini.js` of an npm install of `@google/gemini-cli`,
pinned in the source's spec), run by the `node` on PATH. It runs only inside a fresh
`unshare -n -p -f --mount-proc` namespace (nothing but loopback, brought up by
tests/compat/live/launch.py, which is its pid 1 and starts fake_gemini.py beside it), with a
scratch home per store: `GEMINI_CLI_HOME` (and HOME) is `<root>/home`, so the store is
`<root>/home/.gemini`, whose settings.json (`SETTINGS`) selects API-key auth and turns usage
statistics, telemetry, auto-update, its notification and the IDE link off, and whose
trustedFolders.json trusts the folders under `<root>/work`. The API key is a dummy; the base URL
is the fake's. Only headless runs (`-p`) are made: never `--list-sessions` nor the interactive
start, which ask the model for a summary and write it into an earlier session's file.

The API for other tests:
- `run_gemini(binary, root, steps)`: run a list of `Step`s (args, folder) in one namespace against
  the scripted fake (fake_gemini.py: the prompt's words script the reply) and return a `GeminiRun`: the
  store root (`<root>/home/.gemini`) and one `StepResult` per step (exit status, output, the
  request bodies the step sent);
- `LiveGemini(binary, root)` does the same batch by batch on one store (`.run(steps)`, `.one(step)`);
- `make_root()` / `remove_root(root)`: a fresh root under /tmp for such a store, and its removal;
- `make_store(binary, root)` runs the scenario (`SCENARIO`) and returns a `GeminiStore` (the
  `gemini_store` fixture: one per test run).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..live.batch import ClientUnavailable, Run, configured_binary, prepare_client, run_batch

HERE = Path(__file__).resolve().parent
SERVER = HERE / "fake_gemini.py"
PORT = 18093
FAKE_KEY = "fake-offline-gemini-key-0000000000000000"
BIN_ENV = "REPRISE_GEMINI_BIN"
DEV_BIN = Path("/work/env/gemini/node_modules/@google/gemini-cli/bundle/gemini.js")
SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "ide": {"enabled": False},
}
# set while the client runs (also the spec's ClientSpec.env)
CLIENT_ENV = {"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_TELEMETRY_ENABLED": "false"}
HEADLESS = ["--output-format", "json"]


def find_gemini_bin() -> Path | None:
    return configured_binary(BIN_ENV)


def prepare() -> Path:
    """The client's entry script, checked, node on PATH and a namespace check; raises ClientUnavailable."""
    binary = prepare_client(BIN_ENV, "the real Gemini CLI")
    if shutil.which("node") is None:
        raise ClientUnavailable(f"{BIN_ENV}={binary} needs node, which is not on PATH")
    return binary


def node() -> str:
    """The node that runs the client (the one on PATH, as the entry script's shebang finds it)."""
    return shutil.which("node") or "node"


@dataclass(slots=True)
class Step:
    """One client run: `gemini ARGS` in `cwd`, with `stdin` (empty unless given)."""

    args: list[str]
    cwd: Path
    stdin: str = ""
    label: str = ""

    def argv(self, binary: Path) -> list[str]:
        return [node(), str(binary), *self.args]


def prompt_step(prompt: str, cwd: Path, *, resume: str | None = None, options: Sequence[str] = (),
                label: str = "") -> Step:
    """A headless turn (`-p PROMPT --output-format json`), resuming `resume` when given."""
    args = [*HEADLESS, *options, *(["--resume", resume] if resume else []), "-p", prompt]
    return Step(args, cwd, label=label or prompt)


@dataclass(slots=True)
class StepResult:
    """One step's run (its exit status and output) and the requests it sent: bodies and paths."""

    step: Step
    done: Run
    requests: list[dict] = field(default_factory=list)
    request_paths: list[str] = field(default_factory=list)

    @property
    def returncode(self) -> int:
        return self.done.returncode

    @property
    def stdout(self) -> str:
        return self.done.stdout

    @property
    def stderr(self) -> str:
        return self.done.stderr

    @property
    def output(self) -> dict:
        """The `--output-format json` object the run printed ({} when it printed none)."""
        start = self.stdout.find("{")
        if start < 0:
            return {}
        try:
            parsed = json.loads(self.stdout[start:])
        except json.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}

    @property
    def session_id(self) -> str | None:
        found = self.output.get("session_id")
        return found if isinstance(found, str) else None

    @property
    def turns(self) -> list[dict]:
        """The bodies of the turn requests (`:streamGenerateContent`) of this run, in order."""
        return [body for body, path in zip(self.requests, self.request_paths, strict=True)
                if ":streamGenerateContent" in path]

    def describe(self) -> str:
        return (f"{self.step.label or self.step.args}: exit {self.returncode}; stdout: {self.stdout[-1500:]}; "
                f"stderr: {self.stderr[-3000:]}")


def seed_home(home: Path, folders: Sequence[Path], settings: dict[str, Any] | None = None) -> Path:
    """Write the store's settings.json and trustedFolders.json under `home`; the store (`home/.gemini`)."""
    store = home / ".gemini"
    store.mkdir(parents=True, exist_ok=True)
    (store / "settings.json").write_text(json.dumps(settings if settings is not None else SETTINGS, indent=2) + "\n")
    trusted = {str(folder): "TRUST_FOLDER" for folder in folders}
    (store / "trustedFolders.json").write_text(json.dumps(trusted, indent=2) + "\n")
    return store


# The launcher passes its own environment on: under CI (`CI=true` or `GITHUB_ACTIONS=true`) the
# client takes itself for headless and its TUI exits at once, showing nothing.
NOT_CI = {"CI": "false", "GITHUB_ACTIONS": "false"}


class LiveGemini:
    """Runs batches of real Gemini CLI steps against one store, each batch in its own namespace."""

    def __init__(self, binary: Path, root: Path, *, settings: dict[str, Any] | None = None):
        self.binary = binary
        self.root = root
        self.home = root / "home"
        self.work = root / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        self.store = seed_home(self.home, [self.work], settings)
        self.batches = 0

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        path = os.pathsep.join(dict.fromkeys([str(Path(node()).parent), "/usr/sbin", "/usr/bin", "/bin"]))
        return {"HOME": str(self.home), "GEMINI_CLI_HOME": str(self.home), "GEMINI_API_KEY": FAKE_KEY,
                "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{PORT}", "PATH": path, "NO_COLOR": "1",
                "TERM": "dumb", **NOT_CI, **CLIENT_ENV, **(extra or {})}

    def run(self, steps: Sequence[Step], *, env: dict[str, str] | None = None, timeout: int = 120) -> list[StepResult]:
        self.batches += 1
        runs = [{"argv": step.argv(self.binary), "stdin": step.stdin, "env": self.env(env), "cwd": str(step.cwd),
                 "timeout": timeout} for step in steps]
        done = run_batch(self.root / "batches" / f"{self.batches:02d}", port=PORT, server=SERVER, runs=runs,
                         timeout=timeout)
        return [StepResult(step, run, [json.loads(path.read_bytes() or b"{}") for path in run.request_files],
                           [path.with_suffix(".path").read_text() for path in run.request_files])
                for step, run in zip(steps, done, strict=True)]

    def one(self, step: Step, **options: Any) -> StepResult:
        [result] = self.run([step], **options)
        return result

    def folder(self, name: str) -> Path:
        """A folder `name` under the trusted work folder, made when absent."""
        path = self.work / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def chats(self, folder: Path) -> Path:
        """The chats/ folder of `folder`'s project (its slug read from projects.json)."""
        projects = json.loads((self.store / "projects.json").read_text())["projects"]
        return self.store / "tmp" / projects[str(folder)] / "chats"

    def files_of(self, session_id: str) -> list[Path]:
        """Every session file whose header names `session_id`, by name."""
        found = []
        for path in sorted(self.store.glob("tmp/*/chats/session-*.json*")):
            first = path.read_text().split("\n", 1)[0]
            if session_id in first:
                found.append(path)
        return found


@dataclass(slots=True)
class GeminiRun:
    """What `run_gemini` made: the store root and each step's result."""

    store: Path
    results: list[StepResult]


def run_gemini(binary: Path, root: Path, steps: Sequence[Step], *, settings: dict[str, Any] | None = None,
               env: dict[str, str] | None = None) -> GeminiRun:
    """Run `steps` (their folders under `root/work`, trusted) in one namespace against the scripted
    fake, with the store at `root/home/.gemini` (made when absent)."""
    live = LiveGemini(binary, root, settings=settings)
    return GeminiRun(live.store, live.run(steps, env=env))


def backdate_minute(path: Path, minutes: int = 2) -> Path:
    """Rename a session file as if it had started `minutes` earlier (the minute in its name), so a
    resume in this same minute is a resume in a later minute; the new path."""
    stem = path.name.removeprefix("session-")
    stamp, rest = stem[:16], stem[16:]    # YYYY-MM-DDTHH-MM, then -<id8>.jsonl
    earlier = datetime.strptime(stamp, "%Y-%m-%dT%H-%M") - timedelta(minutes=minutes)
    target = path.with_name(f"session-{earlier:%Y-%m-%dT%H-%M}{rest}")
    path.rename(target)
    return target


# The scenario: (label, session, folder, how, prompt). `how` is "new" or "resume" (of `session`).
# Folders are "alpha" and "beta" under the store's work folder.
# the output word is not in the prompt (the client blocks `$((...))` as command substitution)
BASH_COMMAND = "printf 'OUTWORD%s\\n' 42 && echo second line"
BASH_OUTPUT_WORD = "OUTWORD42"
SCENARIO: list[tuple[str, str, str, str, str]] = [
    ("one turn", "one", "alpha", "new", "What is in this folder? MARKsolo"),
    ("command", "bash", "alpha", "new", f"Please RUN: {BASH_COMMAND}"),
    ("three turns: 1", "three", "alpha", "new", "Start a plan MARKfirst"),
    ("three turns: 2", "three", "alpha", "resume", "Continue the plan MARKsecond"),
    ("three turns: 3", "three", "alpha", "resume", "Finish the plan MARKthird"),
    ("second folder", "beta", "beta", "new", "Another project MARKbeta"),
]
SESSION_OF = {label: session for label, session, *_ in SCENARIO}
FOLDER_OF = {session: folder for _, session, folder, *_ in SCENARIO}
YOLO = {"bash": ["--yolo"]}    # headless runs offer no shell tool without it
# the session whose file is renamed a minute earlier before its first resume (the resume then
# leaves a stub file with the same sessionId beside it). It is the last in its folder: the client's
# start-up sweep deletes a stub (it has no conversation) and every file sharing its id's first 8
# characters, so the next new session in that folder would delete the whole session.
BACKDATED = "three"


@dataclass(slots=True)
class GeminiStore:
    """The scenario's store: its folders by name, the session ids the client chose (by the
    scenario's session names), every step's result, and the LiveGemini that ran them."""

    live: LiveGemini
    folders: dict[str, Path]
    ids: dict[str, str]
    results: list[StepResult]

    @property
    def store(self) -> Path:
        return self.live.store

    def folder_of(self, session: str) -> Path:
        return self.folders[FOLDER_OF[session]]

    def files(self, session: str) -> list[Path]:
        """The files of `session` (by its sessionId), by name."""
        return self.live.files_of(self.ids[session])

    def steps_of(self, session: str) -> list[StepResult]:
        return [r for r in self.results if SESSION_OF.get(r.step.label) == session]

    def step(self, label: str) -> StepResult:
        return next(r for r in self.results if r.step.label == label)


def make_store(binary: Path, root: Path) -> GeminiStore:
    """Run the scenario into a fresh store under `root`; raises AssertionError on a failed step.
    Steps run in batches (one namespace each) up to the step that needs an id the client chose."""
    live = LiveGemini(binary, root)
    folders = {"alpha": live.folder("alpha"), "beta": live.folder("beta")}
    (folders["alpha"] / "notes.txt").write_text("a file for the scenario's folder\n")
    ids: dict[str, str] = {}
    results: list[StepResult] = []
    for label, session, folder, how, prompt in SCENARIO:
        if how == "resume" and session == BACKDATED and len(live.files_of(ids[session])) == 1:
            backdate_minute(live.files_of(ids[session])[0])
        step = prompt_step(prompt, folders[folder], resume=ids[session] if how == "resume" else None,
                           options=YOLO.get(session, ()), label=label)
        result = live.one(step)
        results.append(result)
        if result.returncode != 0 or result.session_id is None:
            raise AssertionError(f"a scenario step failed: {result.describe()}")
        ids.setdefault(session, result.session_id)
    return GeminiStore(live, folders, ids, results)


def make_root() -> Path:
    """A fresh root folder for a store of a test's own (remove it with `remove_root`)."""
    return Path(tempfile.mkdtemp(prefix="reprise-gemini-", dir="/tmp"))


def remove_root(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":  # a dev run: python -m tests.compat.gemini.sessions [ROOT]; or ... run ARGS (one step)
    if sys.argv[1:2] == ["run"]:
        where = make_root()
        one = LiveGemini(find_gemini_bin() or DEV_BIN, where)
        result = one.one(Step(sys.argv[2:], one.folder("here")))
        print(result.returncode, result.stdout, result.stderr[-3000:], result.request_paths, sep="\n")
        print(where)
        sys.exit(0)
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else make_root()
    made = make_store(find_gemini_bin() or DEV_BIN, where)
    for step_result in made.results:
        print(step_result.step.label, step_result.returncode, step_result.session_id, step_result.request_paths)
    print(json.dumps(made.ids))
    steps = [{"label": r.step.label, "argv": ["gemini", *r.step.args], "cwd": str(r.step.cwd), "exit": r.returncode,
              "session": r.session_id, "requests": r.request_paths, "output": r.output} for r in made.results]
    (where / "steps.json").write_text(json.dumps(steps, indent=1, ensure_ascii=False) + "\n")
    with (where / "requests.jsonl").open("w") as requests:
        for r in made.results:
            for body, path in zip(r.requests, r.request_paths, strict=True):
                line = {"step": r.step.label, "path": path, "body": body}
                requests.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(where)
