"""The terminal handed to an agent: this process replaced by the agent in the session's folder."""

from __future__ import annotations

import os


def exec_handoff(argv: list[str], cwd: str) -> None:
    """Replace this process with the agent, in the session's workspace."""
    os.chdir(cwd)
    os.execvp(argv[0], argv)
