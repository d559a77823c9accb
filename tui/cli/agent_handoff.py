"""The terminal handed to an agent: what Reprise has to say is said first, where it can be read, then
this process is replaced by the agent in the session's folder.

An agent's terminal UI clears the screen as it starts (Claude Code's and Codex's both do), so a note
printed just before the exec would be gone before anyone read it. On a terminal, a resume with notes
waits for Enter, as `git rebase -i` or a package manager's "Proceed?" waits before it goes on: the
notes stay above the prompt, and they are in the terminal's scrollback when the agent ends. Into a
pipe, or from a script (stdin not a terminal), nothing waits."""

from __future__ import annotations

import os
import sys

from reprise.core import scan_pool

from .output import is_terminal, note

PROMPT = "Press Enter to start {program} (ctrl+d or ctrl+c: not now) "


def read_before_start(notes: list[str], program: str) -> bool:
    """Say the notes on stderr; on a terminal (stdin and stderr both), with notes to read, wait for Enter
    before `program` starts. False when the user chose not to start it (the end of input, ctrl+c)."""
    for each in notes:
        note(each)
    if not notes or not (is_terminal(sys.stdin) and is_terminal(sys.stderr)):
        return True
    sys.stderr.write(PROMPT.format(program=program))
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except KeyboardInterrupt:
        answer = ""
    if not answer:
        sys.stderr.write("\n")
        note(f"{program} was not started.")
        return False
    return True


def exec_handoff(argv: list[str], cwd: str) -> None:
    """Replace this process with the agent, in the session's workspace: the scan's worker processes
    end first (the agent keeps this pid, so they would not see their parent go)."""
    scan_pool.shutdown()
    os.chdir(cwd)
    os.execvp(argv[0], argv)
