"""Real Codex CLI sessions, made offline by the real client against the fake OpenAI server.

The client is `$REPRISE_CODEX_BIN` (the musl binary in the platform package of an npm install of
`@openai/codex`, pinned in .ci/run). It runs only inside a fresh `unshare -n -p -f --mount-proc`
namespace (nothing but loopback, brought up by tests/compat/live/launch.py, which is its pid 1 and
starts fake_openai.py beside it), with a scratch HOME and CODEX_HOME per store whose config.toml
points Codex at the fake server and turns analytics, feedback, telemetry and update checks off.
Only `codex exec` runs (never the interactive picker, which leaves an app-server daemon behind).

`make_store(root)` runs the scenario (`SCENARIO`: one turn; three turns with `exec resume`; a shell
command; an auto-compaction; an `exec fork`; a second folder, a git repository; an API error; a turn
interrupted with SIGINT) and returns a `CodexStore`: where the rollouts are, the session ids (Codex
chooses them: read from each run's `thread.started` event), the folders, and every request each
step sent. `LiveCodex.run` runs any other steps.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..live.batch import configured_binary, prepare_client, run_batch

HERE = Path(__file__).resolve().parent
SERVER = HERE / "fake_openai.py"
PORT = 18091
FAKE_KEY = "sk-fake-offline-codex-0000000000000000"
BIN_ENV = "REPRISE_CODEX_BIN"
DEV_BIN = Path("/work/agents-side/codex/node_modules/@openai/codex-linux-x64/vendor/"
               "x86_64-unknown-linux-musl/bin/codex")
CONFIG = f"""\
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:{PORT}/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
"""
EXEC = ["exec", "--json", "--skip-git-repo-check"]
# the fake server's counting mode (fake_openai.py): every request's usage is one count of what it sends
COUNTING_CONFIG = CONFIG.replace(f"127.0.0.1:{PORT}/v1", f"127.0.0.1:{PORT}/count/v1")


def find_codex_bin() -> Path | None:
    return configured_binary(BIN_ENV)


def prepare() -> Path:
    """The client binary, checked, and a namespace check; raises ClientUnavailable."""
    return prepare_client(BIN_ENV, "the real Codex CLI")


@dataclass(slots=True)
class Step:
    """One client run: `codex ARGS` in `cwd`, with `stdin` (empty unless given); with `interrupt_s`
    set, the client gets SIGINT (as from Ctrl-C) after that many seconds (`timeout -s INT`)."""

    args: list[str]
    cwd: Path
    stdin: str = ""
    label: str = ""
    interrupt_s: int | None = None

    def argv(self, binary: Path) -> list[str]:
        wrapper = [] if self.interrupt_s is None else ["timeout", "-s", "INT", "-k", "20", str(self.interrupt_s)]
        return [*wrapper, str(binary), *self.args]


@dataclass(slots=True)
class StepResult:
    step: Step
    returncode: int
    stdout: str
    stderr: str
    requests: list[dict] = field(default_factory=list)
    request_paths: list[str] = field(default_factory=list)
    request_sizes: list[int] = field(default_factory=list)

    @property
    def events(self) -> list[dict]:
        """The `--json` events the run printed (one JSON object a line)."""
        found = []
        for line in self.stdout.splitlines():
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(parsed, dict):
                found.append(parsed)
        return found

    @property
    def thread_id(self) -> str | None:
        return next((e.get("thread_id") for e in self.events if e.get("type") == "thread.started"), None)

    @property
    def responses(self) -> list[dict]:
        """The bodies of the `POST /v1/responses` requests of this run."""
        return [body for body, path in zip(self.requests, self.request_paths, strict=True)
                if path.removeprefix("POST ").removeprefix("/count").startswith("/v1/responses")]

    def describe(self) -> str:
        return (f"{self.step.label or self.step.args}: exit {self.returncode}; stdout: {self.stdout[-1500:]}; "
                f"stderr: {self.stderr[-3000:]}")


class LiveCodex:
    """Runs batches of real Codex steps against one CODEX_HOME, each batch in its own namespace."""

    def __init__(self, binary: Path, root: Path, *, config: str = CONFIG):
        self.binary = binary
        self.root = root
        self.home = root / "home"
        self.codex_home = self.home / ".codex"
        self.codex_home.mkdir(parents=True, exist_ok=True)
        settings = self.codex_home / "config.toml"
        if not settings.exists():
            settings.write_text(config)
        self.batches = 0

    @property
    def sessions(self) -> Path:
        return self.codex_home / "sessions"

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {"HOME": str(self.home), "CODEX_HOME": str(self.codex_home), "FAKE_API_KEY": FAKE_KEY,
                "PATH": "/usr/sbin:/usr/bin:/bin", "NO_COLOR": "1", "TERM": "dumb", "RUST_LOG": "error",
                **(extra or {})}

    def run(self, steps: list[Step], *, env: dict[str, str] | None = None, timeout: int = 120) -> list[StepResult]:
        self.batches += 1
        runs = [{"argv": step.argv(self.binary), "stdin": step.stdin, "env": self.env(env), "cwd": str(step.cwd),
                 "timeout": timeout} for step in steps]
        done = run_batch(self.root / "batches" / f"{self.batches:02d}", port=PORT, server=SERVER, runs=runs,
                         timeout=timeout)
        return [StepResult(step, run.returncode, run.stdout, run.stderr,
                           [json.loads(path.read_bytes()) for path in run.request_files],
                           [path.with_suffix(".path").read_text() for path in run.request_files],
                           [path.stat().st_size for path in run.request_files])
                for step, run in zip(steps, done, strict=True)]

    def one(self, step: Step, **options) -> StepResult:
        [result] = self.run([step], **options)
        return result

    def rollout(self, session_id: str) -> Path:
        """The rollout file of `session_id` under sessions/ (exactly one)."""
        [path] = self.sessions.glob(f"*/*/*/rollout-*-{session_id}.jsonl")
        return path


# The scenario: (label, session, folder, how, prompt, extra options). `how` is "new" (`codex exec`),
# "resume" (`codex exec resume ID` of `session`) or "fork:<parent>" (`codex exec fork ID` of the
# parent, making `session`). Folders are "alpha" and "beta" under the store's root.
BASH_COMMAND = "echo OUTWORD$((6*7)) && echo second line"
BASH_OUTPUT_WORD = "OUTWORD42"
COMPACT = ["-c", "model_auto_compact_token_limit=5000"]
SCENARIO: list[tuple[str, str, str, str, str, list[str]]] = [
    ("one turn", "one", "alpha", "new", "What is in this folder? MARKsolo", []),
    ("three turns: 1", "three", "alpha", "new", "Start a plan MARKfirst", []),
    ("three turns: 2", "three", "alpha", "resume", "Continue the plan MARKsecond", []),
    ("three turns: 3", "three", "alpha", "resume", "Finish the plan MARKthird", []),
    ("command", "bash", "alpha", "new", f"Please RUN: {BASH_COMMAND}", []),
    ("compact: 1", "compact", "alpha", "new", "Remember the colour MARKteal", []),
    ("compact: 2", "compact", "alpha", "resume", "And the shape MARKhexagon BIGUSAGE", []),
    ("compact: after", "compact", "alpha", "resume", "What now? MARKaftercompact", COMPACT),
    ("fork of three", "fork", "alpha", "fork:three", "Branch off MARKforked", []),
    ("second folder", "beta", "beta", "new", "Another project MARKbeta", []),
    ("api error", "failed", "beta", "new", "This one will FAIL: MARKfail", []),
    ("interrupted", "aborted", "beta", "new", "Take your time SLOW: MARKslow", []),
]
# steps whose client run ends in an error on purpose
FAILING = {"api error", "interrupted"}
# steps interrupted (SIGINT, as from Ctrl-C) after this many seconds, while the fake server is slow
INTERRUPT_S = {"interrupted": 6}
SESSION_OF = {label: session for label, session, *_ in SCENARIO}


def exec_args(how: str, session: str, prompt: str, options: list[str], ids: dict[str, str]) -> list[str]:
    """The `codex exec` argv of one scenario step (`ids`: the sessions made so far)."""
    if how == "new":
        return [*EXEC, *options, prompt]
    verb, _, parent = how.partition(":")
    return [*EXEC, *options, verb, ids[parent or session], prompt]


@dataclass(slots=True)
class CodexStore:
    root: Path
    codex_home: Path
    folders: dict[str, Path]
    ids: dict[str, str]
    folder_of: dict[str, str]
    results: list[StepResult]
    live: LiveCodex

    @property
    def sessions(self) -> Path:
        return self.codex_home / "sessions"

    def rollout(self, session: str) -> Path:
        return self.live.rollout(self.ids[session])

    def steps_of(self, session: str) -> list[StepResult]:
        return [r for r in self.results if SESSION_OF.get(r.step.label) == session]

    def step(self, label: str) -> StepResult:
        return next(r for r in self.results if r.step.label == label)


GIT_BRANCH = "feature/fixture"


def make_git_repo(folder: Path) -> None:
    """A git repository with one commit on GIT_BRANCH (Codex records the branch in session_meta)."""
    (folder / "README.txt").write_text("the second folder of the scenario, a git repository\n")
    who = ["-c", "user.name=Reprise tests", "-c", "user.email=tests@reprise.invalid", "-c", "commit.gpgsign=false"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(folder), "GIT_CONFIG_NOSYSTEM": "1"}   # no user's git config
    for args in (["init", "-q", "-b", GIT_BRANCH], ["add", "README.txt"], [*who, "commit", "-q", "-m", "fixture"]):
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, env=env)


def make_store(binary: Path, root: Path) -> CodexStore:
    """Run the scenario into a fresh CODEX_HOME under `root`, one namespace per step (a step needs
    the ids Codex chose before it); raises AssertionError on a failed step."""
    live = LiveCodex(binary, root)
    folders = {"alpha": root / "work" / "alpha", "beta": root / "work" / "beta"}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    (folders["alpha"] / "notes.txt").write_text("a file for the scenario's folder\n")
    make_git_repo(folders["beta"])
    ids: dict[str, str] = {}
    results = []
    for label, session, folder, how, prompt, options in SCENARIO:
        arguments = exec_args(how, session, prompt, options, ids)
        result = live.one(Step(arguments, folders[folder], label=label, interrupt_s=INTERRUPT_S.get(label)))
        results.append(result)
        failed = result.returncode != 0 or result.thread_id is None
        if label in FAILING:
            if result.returncode == 0:
                raise AssertionError(f"a scenario step meant to fail did not: {result.describe()}")
        elif failed:
            raise AssertionError(f"a scenario step failed: {result.describe()}")
        if result.thread_id is not None:
            ids.setdefault(session, result.thread_id)
    return CodexStore(root, live.codex_home, folders, ids, {s: f for _, s, f, *_ in SCENARIO}, results, live)


def make_root() -> Path:
    """A root folder whose path has the same length on every run."""
    return Path(tempfile.mkdtemp(prefix="reprise-codex-", dir="/tmp"))


def remove_root(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":  # a dev run: python -m tests.compat.codex.sessions [ROOT]; or ... run ARGS (one step)
    if sys.argv[1:2] == ["run"]:
        where = make_root()
        (where / "work").mkdir()
        result = LiveCodex(find_codex_bin() or DEV_BIN, where).one(Step(sys.argv[2:], where / "work"))
        print(result.returncode, result.stdout, result.stderr[-3000:], sep="\n")
        print(where)
        sys.exit(0)
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else make_root()
    store = make_store(find_codex_bin() or DEV_BIN, where)
    for step_result in store.results:
        print(step_result.step.label, step_result.returncode, len(step_result.requests), step_result.thread_id,
              step_result.request_paths)
    print(json.dumps(store.ids))
    steps = [{"label": r.step.label, "argv": ["codex", *r.step.args], "cwd": str(r.step.cwd), "exit": r.returncode,
              "session": store.ids.get(SESSION_OF[r.step.label]), "requests": r.request_paths,
              "request_bytes": r.request_sizes, "events": r.events} for r in store.results]
    (where / "steps.json").write_text(json.dumps(steps, indent=1, ensure_ascii=False) + "\n")
    print(where)
