"""Session fixtures for the live tests, written by Fractal's own code (the driver's
`write_turns`), never by real turns: realistic messages, replies and traces."""

from __future__ import annotations

from pathlib import Path

from tests import factories

AGENTS_MD = ("# Project rules\n\nRun `pytest -q` before you finish. Keep functions small and typed.\n"
             "Never edit files under build/. Prefer the standard library.\n") * 8


def turns(count: int, *, seed: int = 0) -> list[dict]:
    statuses = ["succeeded", "succeeded", "failed", "max_iterations", "succeeded"]
    result = []
    for i in range(count):
        status = statuses[(i + seed) % len(statuses)]
        result.append({
            "message": f"Step {i + 1}: please look at module_{i}.py and " + "tidy the error handling, " * (3 + i % 7),
            "status": status,
            "response": (f"I changed module_{i}.py: " + "the parser now reports the line and column of a bad "
                         "token, and the tests cover it. " * (6 + (i * 7) % 23)),
            "files_read": [f"module_{i}.py", "tests/test_parser.py"], "changed_files": [f"module_{i}.py"],
            "commands_run": ["pytest -q"], "error": "exit status 1" if status == "failed" else None,
            "trace": factories.run_trace(i, steps=2),
        })
    return result


def write(fractal, workspace: Path, count: int, *, seed: int = 0) -> str:
    """A session of `count` turns in `workspace`, written by Fractal; its id."""
    if count == 0:
        import uuid

        session_id = uuid.uuid4().hex
        written = fractal.one("save", workspace=str(workspace), session_id=session_id)
        assert "raised" not in written, written
        return session_id
    written = fractal.one("write_turns", workspace=str(workspace), turns=turns(count, seed=seed))
    assert "raised" not in written, written
    return written["session_id"]
