"""Named fault points in the write path, reachable only from tests.

`REPRISE_FAULTS` holds `name=action` pairs separated by commas. Actions: `kill` (SIGKILL
this process at that point), `wait:<file>` (create `<file>.reached`, then block until
`<file>` exists, so a test can interleave another writer at an exact moment; 30 s at most)
and `hold:<file>` (the same without the 30 s: a thread kept busy there for as long as the
test needs, however the process is asked to end). With the variable unset, `point()` is one
dictionary lookup.
"""

from __future__ import annotations

import os
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
# the TUI's workers, busy: listing the rows, reading the preview, counting the meter, searching (indexing);
# and `reprise` with its first frame on the terminal, Textual not imported yet
TUI_POINTS = ("tui_load_rows", "tui_load_detail", "tui_measure", "tui_search", "tui_first_frame")
# the search index built after a search's answer, a batch written (its worker processes running)
SEARCH_POINTS = ("search_index_batch",)
POINTS = WRITE_PATH_POINTS + PURGE_POINTS + CLAUDE_TRASH_POINTS + TUI_POINTS + SEARCH_POINTS


def point(name: str) -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    for item in spec.split(","):
        key, _, action = item.partition("=")
        if key.strip() != name:
            continue
        if action == "kill":
            import signal  # only when a fault point is armed: not on every command's start

            os.kill(os.getpid(), signal.SIGKILL)
        elif action.startswith(("wait:", "hold:")):
            gate = Path(action[5:])
            Path(f"{gate}.reached").touch()
            deadline = time.monotonic() + 30 if action.startswith("wait:") else float("inf")
            while not gate.exists() and time.monotonic() < deadline:
                time.sleep(0.005)
