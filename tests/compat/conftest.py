"""The real Fractal, driven in one subprocess per test module (importing it takes seconds).

The Fractal python is $REPRISE_FRACTAL_PYTHON, else `<repo>/.fractal-venv/bin/python`; without
either the compat tests skip. Commands run against the test's own state root (the
FRACTAL_STATE_HOME the autouse fixture sets) unless they name another.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().with_name("fractal_driver.py")
DEFAULT_PYTHON = REPO_ROOT / ".fractal-venv" / "bin" / "python"
SKIP_REASON = "real Fractal not installed (set REPRISE_FRACTAL_PYTHON)"
REPLY_TIMEOUT_S = 180


def find_fractal_python() -> Path | None:
    configured = os.environ.get("REPRISE_FRACTAL_PYTHON")
    for candidate in ([Path(configured)] if configured else []) + [DEFAULT_PYTHON]:
        if candidate.exists():
            return candidate
    return None


class Fractal:
    """A running fractal_driver.py: `run` sends a list of commands and returns their results."""

    def __init__(self, python: Path, scratch: Path):
        scratch.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", HOME=str(scratch / "home"),
                   FRACTAL_STATE_HOME=str(scratch / "unused-state"), PYTHONIOENCODING="utf-8")
        env.pop("XDG_STATE_HOME", None)
        self.stderr_path = scratch / "driver-stderr.txt"
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen([str(python), str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._stderr, env=env, text=True, encoding="utf-8",
                                        cwd=str(scratch))
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        assert self._reply() == {"ready": True}

    def _pump(self) -> None:
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _reply(self):
        try:
            line = self._lines.get(timeout=REPLY_TIMEOUT_S)
        except queue.Empty:
            line = None
        if line is None:
            raise RuntimeError(f"the Fractal driver gave no reply; stderr:\n{self.stderr_tail()}")
        return json.loads(line)

    def stderr_tail(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")[-4000:]

    def run(self, commands: list[dict]) -> list[dict]:
        state_home = os.environ["FRACTAL_STATE_HOME"]
        batch = [{"state_home": state_home, **command} for command in commands]
        self.process.stdin.write(json.dumps(batch) + "\n")
        self.process.stdin.flush()
        results = self._reply()
        assert len(results) == len(batch)
        return results

    def one(self, op: str, **fields) -> dict:
        return self.run([{"op": op, **fields}])[0]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()


@pytest.fixture(scope="session")
def fractal_python() -> Path:
    python = find_fractal_python()
    if python is None:
        if os.environ.get("REPRISE_REQUIRE_COMPAT"):
            pytest.fail(f"{SKIP_REASON}; REPRISE_REQUIRE_COMPAT is set, so this is a failure")
        pytest.skip(SKIP_REASON)
    return python


@pytest.fixture(scope="module")
def fractal(fractal_python, tmp_path_factory) -> Fractal:
    driver = Fractal(fractal_python, tmp_path_factory.mktemp("fractal-driver"))
    yield driver
    driver.close()
