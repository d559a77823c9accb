"""The real Fractal running real turns, offline, against the fake model server.

Every batch of turns runs in one fresh namespace: `unshare -n -p -f --mount-proc` (only
loopback, brought up by launch.py; the launcher is pid 1, so nothing outlives it), with the
fake server (fake_server.py) on 127.0.0.1 inside it and the `sbx` stand-in (sbx.py) first on
PATH. Fractal reaches the server through its provider config (`custom-openai-compatible`,
`base_url`, `api_key_env`). The sandbox's Python is a small venv with websockets<16, pydantic
and pandas, built before any namespace is entered (`ensure_sandbox_python`).

Workspaces live under a root of fixed length (`/tmp/reprise-live-XXXXXXXX`) and every turn runs
with the same `--max-iterations`, so the fixed part of the prompt is the same on every run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]
PORT = 18080
MAX_ITERATIONS = 30
MODEL = "gpt-5"
SANDBOX_PACKAGES = ("websockets<16", "pydantic", "pandas")
DEFAULT_SANDBOX_VENV = REPO_ROOT / ".sandbox-venv"


class LiveUnavailable(RuntimeError):
    """What stops the live harness on this machine (the tests skip, or fail under CI)."""


def ensure_sandbox_python(base_python: Path) -> Path:
    """The sandbox venv's python: $REPRISE_SANDBOX_PYTHON, else <repo>/.sandbox-venv, built
    with pip from the registry when missing (outside any namespace: inside, nothing installs)."""
    configured = os.environ.get("REPRISE_SANDBOX_PYTHON")
    if configured:
        python = Path(configured)
        if not python.exists():
            raise LiveUnavailable(f"REPRISE_SANDBOX_PYTHON={configured} does not exist")
        return python
    python = DEFAULT_SANDBOX_VENV / "bin" / "python"
    check = [str(python), "-c",
             "import websockets, pydantic, pandas; assert int(websockets.__version__.split('.')[0]) < 16"]
    if python.exists() and subprocess.run(check, check=False, capture_output=True).returncode == 0:
        return python
    for step in ([str(base_python), "-m", "venv", str(DEFAULT_SANDBOX_VENV)],
                 [str(python), "-m", "pip", "install", "--quiet", *SANDBOX_PACKAGES], check):
        done = subprocess.run(step, check=False, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise LiveUnavailable(f"cannot build the sandbox venv ({' '.join(step[:4])}): {done.stderr[-500:]}")
    return python


def prepare(fractal_python: Path | None) -> Path:
    """Everything a live run needs before its namespace: the real Fractal, namespaces, the
    sandbox venv (returned: its python). Raises LiveUnavailable with what is missing."""
    if fractal_python is None:
        raise LiveUnavailable("the real Fractal is not installed (set REPRISE_FRACTAL_PYTHON)")
    check_namespaces()
    return ensure_sandbox_python(fractal_python)


def check_namespaces() -> None:
    done = subprocess.run(["unshare", "-n", "-p", "-f", "--mount-proc", "true"], check=False,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise LiveUnavailable(f"cannot create a network namespace (unshare -n -p -f): {done.stderr.strip()}")


@dataclass(slots=True)
class Turn:
    """One headless Fractal turn: `fractal --workspace W [--resume ID] -p - --json --quiet`."""

    workspace: Path
    message: str
    session_id: str | None = None
    max_iterations: int = MAX_ITERATIONS


@dataclass(slots=True)
class TurnResult:
    turn: Turn
    returncode: int
    stdout: str
    stderr: str
    requests: list[dict] = field(default_factory=list)

    @property
    def output(self) -> dict:
        try:
            return json.loads(self.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            return {}

    def describe(self) -> str:
        return f"exit {self.returncode}; stdout: {self.stdout[-1500:]}; stderr: {self.stderr[-3000:]}"


class LiveFractal:
    """Runs batches of real Fractal turns, each batch in its own namespace."""

    def __init__(self, fractal_python: Path, sandbox_python: Path, state_home: Path, root: Path):
        self.fractal = fractal_python.parent / "fractal"
        self.sandbox_bin = sandbox_python.parent
        self.state_home = state_home
        self.root = root
        self.home = root / ".home"
        (self.home / ".config" / "fractal").mkdir(parents=True, exist_ok=True)
        (self.home / ".config" / "fractal" / "config.toml").write_text(
            'schema_version = 1\nactive_provider = "custom-openai-compatible"\n'
            f'active_model = "{MODEL}"\n\n[providers.custom-openai-compatible]\nauth_source = "env"\n'
            f'api_key_env = "FAKE_API_KEY"\nbase_url = "http://127.0.0.1:{PORT}/v1"\n')
        self.bin = root / ".bin"
        self.bin.mkdir(exist_ok=True)
        sbx = self.bin / "sbx"
        sbx.write_text(f'#!/bin/sh\nexec "{sandbox_python}" "{HERE / "sbx.py"}" "$@"\n')
        sbx.chmod(0o755)
        self.batches = 0

    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config"),
                "FRACTAL_STATE_HOME": str(self.state_home), "FAKE_API_KEY": "sk-fake-offline",
                "PATH": os.pathsep.join([str(self.bin), str(self.fractal.parent), "/usr/sbin", "/usr/bin", "/bin"]),
                "SBX_STANDIN_STATE": str(self.root / ".sbx"), "SBX_STANDIN_BIN": str(self.sandbox_bin),
                "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1"}

    def run(self, turns: list[Turn], *, server_env: dict[str, str] | None = None) -> list[TurnResult]:
        self.batches += 1
        workdir = self.root / f".batch-{self.batches}"
        record = workdir / "requests"
        record.mkdir(parents=True)
        runs = []
        for turn in turns:
            argv = [str(self.fractal), "--workspace", str(turn.workspace), "--max-iterations", str(turn.max_iterations)]
            if turn.session_id:
                argv += ["--resume", turn.session_id]
            runs.append({"argv": [*argv, "-p", "-", "--json", "--quiet"], "stdin": turn.message, "env": self.env(),
                         "cwd": str(turn.workspace), "timeout": 300})
        spec = workdir / "spec.json"
        spec.write_text(json.dumps({"port": PORT, "record": str(record), "workdir": str(workdir), "runs": runs,
                                    "server_env": {"LITELLM_LOCAL_MODEL_COST_MAP": "True", **(server_env or {})}}))
        done = subprocess.run(["unshare", "-n", "-p", "-f", "--mount-proc", sys.executable, str(HERE / "launch.py"),
                               str(spec)], check=False, capture_output=True, text=True, timeout=300 * len(turns) + 60)
        results_path = workdir / "results.json"
        if done.returncode != 0 or not results_path.exists():
            raise AssertionError(f"the namespace launcher failed ({done.returncode}): {done.stderr[-3000:]}")
        results = []
        seen = 0
        for turn, raw in zip(turns, json.loads(results_path.read_text()), strict=True):
            files = sorted(record.glob("*.json"))
            mine = files[seen:raw["requests"]]
            seen = raw["requests"]
            results.append(TurnResult(turn, raw["returncode"], raw["stdout"], raw["stderr"],
                                      [json.loads(path.read_text()) for path in mine]))
        return results


def make_root() -> Path:
    """A root folder whose path has the same length on every run."""
    return Path(tempfile.mkdtemp(prefix="reprise-live-", dir="/tmp"))


def remove_root(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)


def chat_tokens(request: dict, encoding: str = "o200k_base") -> int:
    """A chat request's prompt size as OpenAI counts it: per message 3 tokens, its role and its
    content; 3 more to start the reply."""
    from reprise.core import tokens

    total = 3
    for message in request["messages"]:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        total += 3 + tokens.count_tokens(message["role"], encoding) + tokens.count_tokens(content, encoding)
    return total
