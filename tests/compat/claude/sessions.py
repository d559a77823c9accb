"""Real Claude Code sessions, made offline by the real client against the fake Anthropic server.

The client is `$REPRISE_CLAUDE_BIN` (the `claude.exe` of an npm install of
`@anthropic-ai/claude-code`, pinned in .ci/run). It runs only inside a fresh
`unshare -n -p -f --mount-proc` namespace (nothing but loopback, brought up by
tests/compat/live/launch.py, which is its pid 1 and starts fake_anthropic.py beside it), with a
scratch HOME and CLAUDE_CONFIG_DIR per store and the telemetry/update switches set.

`make_store(root)` runs the scenario (`SCENARIO`: one turn; three turns with `--resume`; a Bash
tool call; a `/compact`; a `--fork-session`; a second folder; one named with `-n`; one typed in
the interactive UI on a pty; a Read and a Write; a subagent; an API error) and returns a
`ClaudeStore`: where the sessions are, their ids, prompts, and every request each step sent.
Session ids are chosen (`--session-id`) so that a store made twice names the same files.
`LiveClaude.run` runs any other steps (the compat tests resume sessions with it).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..live.batch import configured_binary, prepare_client, record_folder, run_batch

HERE = Path(__file__).resolve().parent
SERVER = HERE / "fake_anthropic.py"
PTY_DRIVER = HERE / "pty_drive.py"
PORT = 18090
FAKE_KEY = "sk-ant-fake-offline-0000000000000000000000"
BIN_ENV = "REPRISE_CLAUDE_BIN"
DEV_BIN = Path("/work/agents-side/claude/node_modules/@anthropic-ai/claude-code/bin/claude.exe")
SWITCHES = {"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_BUG_COMMAND": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def find_claude_bin() -> Path | None:
    return configured_binary(BIN_ENV)


def prepare() -> Path:
    """The client binary, checked, and a namespace check; raises ClientUnavailable."""
    return prepare_client(BIN_ENV, "the real Claude Code")


@dataclass(slots=True)
class Step:
    """One client run: `claude ARGS` in `cwd` (stdin given or empty). With `interactive` set,
    the client runs on a pty (pty_drive.py), which types `interactive` and Enter once the UI is
    up, waits for the request, then types /exit; its stdout is pty_drive's JSON line."""

    args: list[str]
    cwd: Path
    stdin: str = ""
    label: str = ""
    interactive: str | None = None


@dataclass(slots=True)
class StepResult:
    step: Step
    returncode: int
    stdout: str
    stderr: str
    requests: list[dict] = field(default_factory=list)
    request_paths: list[str] = field(default_factory=list)

    @property
    def output(self) -> dict:
        """The `--output-format json` result (empty when there is none)."""
        for line in reversed(self.stdout.strip().splitlines()):
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(parsed, dict):
                return parsed
        return {}

    def describe(self) -> str:
        return (f"{self.step.label or self.step.args}: exit {self.returncode}; stdout: {self.stdout[-1500:]}; "
                f"stderr: {self.stderr[-3000:]}")


class LiveClaude:
    """Runs batches of real Claude Code steps against one config dir, each batch in its own namespace."""

    def __init__(self, binary: Path, root: Path):
        self.binary = binary
        self.root = root
        self.home = root / "home"
        self.config_dir = self.home / ".claude"
        self.config_dir.mkdir(parents=True, exist_ok=True)
        self.batches = 0

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {"HOME": str(self.home), "CLAUDE_CONFIG_DIR": str(self.config_dir),
                "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{PORT}", "ANTHROPIC_API_KEY": FAKE_KEY,
                "PATH": "/usr/sbin:/usr/bin:/bin", "NO_COLOR": "1", "TERM": "dumb", **SWITCHES, **(extra or {})}

    def argv(self, step: Step, record: Path) -> list[str]:
        if step.interactive is None:
            return [str(self.binary), *step.args]
        return [sys.executable, str(PTY_DRIVER), "--record", str(record), "--send", step.interactive, "--",
                str(self.binary), *step.args]

    def trust(self, *folders: Path) -> None:
        """What the interactive UI needs before it takes a prompt: onboarding done, the fake key
        approved, each folder's trust dialog accepted (in `<config dir>/.claude.json`)."""
        path = self.config_dir / ".claude.json"
        config = json.loads(path.read_text()) if path.exists() else {}
        config["hasCompletedOnboarding"] = True
        config.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
        if FAKE_KEY[-20:] not in config["customApiKeyResponses"].setdefault("approved", []):
            config["customApiKeyResponses"]["approved"].append(FAKE_KEY[-20:])
        for folder in folders:
            config.setdefault("projects", {}).setdefault(str(folder), {})["hasTrustDialogAccepted"] = True
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps(config, indent=2))
        temporary.replace(path)

    def run(self, steps: list[Step], *, env: dict[str, str] | None = None, timeout: int = 120,
            counting: bool = False) -> list[StepResult]:
        """Run `steps` in one namespace; with `counting`, the fake reports counted usage
        (fake_anthropic.py's counting mode) and answers THINK and LONGREPLY."""
        self.batches += 1
        workdir = self.root / "batches" / f"{self.batches:02d}"
        if counting:
            workdir.mkdir(parents=True)
            (workdir / "fake.json").write_text(json.dumps({"usage": "count"}))
        runs = [{"argv": self.argv(step, record_folder(workdir)), "stdin": step.stdin, "env": self.env(env),
                 "cwd": str(step.cwd), "timeout": timeout} for step in steps]
        done = run_batch(workdir, port=PORT, server=SERVER, runs=runs, timeout=timeout)
        return [StepResult(step, run.returncode, run.stdout, run.stderr,
                           [json.loads(path.read_bytes()) for path in run.request_files],
                           [path.with_suffix(".path").read_text() for path in run.request_files])
                for step, run in zip(steps, done, strict=True)]


# The scenario: (label, session, folder, args). `session` names the session the step writes;
# its id is SESSION_IDS[session]. Folders are "alpha" and "beta" under the store's root.
SESSION_IDS = {
    "one": "11111111-1111-4111-8111-111111111111",
    "three": "33333333-3333-4333-8333-333333333333",
    "bash": "55555555-5555-4555-8555-555555555555",
    "compact": "77777777-7777-4777-8777-777777777777",
    "fork": "99999999-9999-4999-8999-999999999999",
    "beta": "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb",
    "named": "dddddddd-dddd-4ddd-8ddd-dddddddddddd",
    "typed": "ffffffff-ffff-4fff-8fff-ffffffffffff",
    "files": "22222222-2222-4222-8222-222222222222",
    "agent": "44444444-4444-4444-8444-444444444444",
    "failed": "66666666-6666-4666-8666-666666666666",
}
TYPED_PROMPT = "Typed in the terminal UI MARKtyped"
NAMED_TITLE = "Named by the compat scenario"
BASH_COMMAND = "echo OUTWORD$((6*7)) && echo second line"
BASH_OUTPUT_WORD = "OUTWORD42"
JSON_OUT = ["--output-format", "json"]


def _new(session: str) -> list[str]:
    return ["--session-id", SESSION_IDS[session]]


def _resume(session: str) -> list[str]:
    return ["--resume", SESSION_IDS[session]]


# (label, session, folder, args); prompts are the `-p` argument, except the interactive step's
# (INTERACTIVE: typed on a pty).
SCENARIO: list[tuple[str, str, str, list[str]]] = [
    ("one turn", "one", "alpha", [*_new("one"), "-p", "What is in this folder? MARKsolo", *JSON_OUT]),
    ("three turns: 1", "three", "alpha", [*_new("three"), "-p", "Start a plan MARKfirst", *JSON_OUT]),
    ("three turns: 2", "three", "alpha", [*_resume("three"), "-p", "Continue the plan MARKsecond", *JSON_OUT]),
    ("three turns: 3", "three", "alpha", [*_resume("three"), "-p", "Finish the plan MARKthird", *JSON_OUT]),
    ("bash tool call", "bash", "alpha", [*_new("bash"), "--allowedTools", "Bash",
                                         "-p", f"Please RUN: {BASH_COMMAND}", *JSON_OUT]),
    ("compact: 1", "compact", "alpha", [*_new("compact"), "-p", "Remember the colour MARKteal", *JSON_OUT]),
    ("compact: 2", "compact", "alpha", [*_resume("compact"), "-p", "And the shape MARKhexagon", *JSON_OUT]),
    ("compact: /compact", "compact", "alpha", [*_resume("compact"), "-p", "/compact", *JSON_OUT]),
    ("compact: after", "compact", "alpha", [*_resume("compact"), "-p", "What now? MARKaftercompact", *JSON_OUT]),
    ("fork of three", "fork", "alpha", [*_resume("three"), "--fork-session", *_new("fork"),
                                        "-p", "Branch off MARKforked", *JSON_OUT]),
    ("second folder", "beta", "beta", [*_new("beta"), "-p", "Another project MARKbeta", *JSON_OUT]),
    ("named", "named", "beta", [*_new("named"), "-n", NAMED_TITLE, "-p", "A named one MARKnamed", *JSON_OUT]),
    ("interactive", "typed", "beta", _new("typed")),
    ("files: read", "files", "alpha", [*_new("files"), "--allowedTools", "Read", "Write",
                                       "-p", "Please READ: {alpha}/notes.txt MARKread", *JSON_OUT]),
    ("files: write", "files", "alpha", [*_resume("files"), "--allowedTools", "Read", "Write",
                                        "-p", "Now WRITE: {alpha}/written.txt MARKwrite", *JSON_OUT]),
    ("subagent", "agent", "alpha", [*_new("agent"), "--allowedTools", "Agent",
                                    "-p", "Delegate this. AGENT: look around the folder MARKsub", *JSON_OUT]),
    ("api error", "failed", "beta", [*_new("failed"), "-p", "This one will FAIL: MARKfail", *JSON_OUT]),
]
# steps whose client run ends in an error on purpose
FAILING = {"api error"}
INTERACTIVE = {"interactive": TYPED_PROMPT}


@dataclass(slots=True)
class ClaudeStore:
    root: Path
    config_dir: Path
    folders: dict[str, Path]
    ids: dict[str, str]
    folder_of: dict[str, str]
    results: list[StepResult]
    live: LiveClaude

    @property
    def projects(self) -> Path:
        return self.config_dir / "projects"

    def session_file(self, session: str) -> Path:
        return next(self.projects.glob(f"*/{self.ids[session]}.jsonl"))

    def steps_of(self, session: str) -> list[StepResult]:
        return [r for r in self.results if r.step.label and SESSION_OF[r.step.label] == session]


SESSION_OF = {label: session for label, session, _, _ in SCENARIO}


def make_store(binary: Path, root: Path) -> ClaudeStore:
    """Run the scenario into a fresh config dir under `root`; raises AssertionError on a failed step."""
    live = LiveClaude(binary, root)
    folders = {"alpha": root / "work" / "alpha", "beta": root / "work" / "beta"}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    (folders["alpha"] / "notes.txt").write_text("a file for the scenario's folder\n")
    live.trust(*folders.values())
    steps = [Step([arg.format(**folders) for arg in args], folders[folder], label=label,
                  interactive=INTERACTIVE.get(label)) for label, _, folder, args in SCENARIO]
    results = live.run(steps)
    for result in results:
        typed = result.step.interactive is not None
        failed = result.returncode != 0 or result.output.get("is_error") or not result.output
        if result.step.label in FAILING:
            if not failed:
                raise AssertionError(f"a scenario step meant to fail did not: {result.describe()}")
            continue
        if failed or (typed and (result.output.get("exit") != 0 or not result.requests)):
            raise AssertionError(f"a scenario step failed: {result.describe()}")
    return ClaudeStore(root, live.config_dir, folders, dict(SESSION_IDS),
                       {session: folder for _, session, folder, _ in SCENARIO}, results, live)


def make_root() -> Path:
    """A root folder whose path has the same length on every run."""
    return Path(tempfile.mkdtemp(prefix="reprise-claude-", dir="/tmp"))


def remove_root(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":  # a dev run: python -m tests.compat.claude.sessions [ROOT]
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else make_root()
    store = make_store(find_claude_bin() or DEV_BIN, where)
    for step_result in store.results:
        print(step_result.step.label, step_result.returncode, len(step_result.requests),
              step_result.output.get("session_id"), step_result.output.get("result"))
    print(where)
