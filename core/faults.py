"""Named fault points in the write path, reachable only from tests.

`REPRISE_FAULTS` holds `name=action` pairs separated by commas. Actions: `kill` (SIGKILL
this process at that point) and `wait:<file>` (create `<file>.reached`, then block until
`<file>` exists, so a test can interleave another writer at an exact moment). With the
variable unset, `point()` is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

ENV = "REPRISE_FAULTS"

WRITE_PATH_POINTS = (  # a session rewritten (trim, restore, a turn), its archive entry first
    "before_archive",
    "after_archive",
    "after_temp_write",
    "after_fsync",
    "before_replace",
    "after_replace",
    "after_index_append",
)
PURGE_POINTS = ("after_tombstone",)  # a trashed session renamed into its tombstone, not yet deleted
# a Claude Code (or Codex) session's verified copies recorded in Reprise's trash, the original
# not yet removed; then the original taken off its path (a hidden name beside it), not yet compared
CLAUDE_TRASH_POINTS = ("claude_trash_before_unlink", "claude_trash_set_aside")
POINTS = WRITE_PATH_POINTS + PURGE_POINTS + CLAUDE_TRASH_POINTS


def point(name: str) -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    for item in spec.split(","):
        key, _, action = item.partition("=")
        if key.strip() != name:
            continue
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action.startswith("wait:"):
            gate = Path(action[5:])
            Path(f"{gate}.reached").touch()
            deadline = time.monotonic() + 30
            while not gate.exists() and time.monotonic() < deadline:
                time.sleep(0.005)
