"""The files a session read and changed, and whether each changed since: what a brief says of them.

A path is a display path, as the agent's tool was called with it (two spellings may be one file; a
path names no machine): it is looked up under the session's folder now, never claimed to be the file
the agent saw. Each path is said once, with the turns that read or changed it (counted once per
turn) and its provenance (`observed` by the agent's host, `reported` by the model only). Whether it
changed since the newest turn that touched it: its mtime against that turn's time, and in a git work
tree the commits touching it since then and any uncommitted change (`git log`, `git status`, run
locally with a short timeout). A file gone, or changed, is "re-verify"; one outside the folder or
without a turn time is said not checked.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .times import parse_time
from .transcript import Transcript

GIT_TIMEOUT_S = 5.0
SLACK_S = 2.0   # an mtime this close after the turn is the turn's own write


@dataclass(slots=True)
class FileFact:
    path: str
    kind: str                      # "changed" when any turn changed it, else "read"
    turns: list[int] = field(default_factory=list)
    provenance: str = "observed"   # "reported" when only the model said so
    changed_since: str | None = None   # why to re-verify it; None: unchanged, or not checked
    unchanged_note: str | None = None  # "unchanged since turn N", or why it was not checked

    @property
    def turn(self) -> int:
        return self.turns[-1]


def touched_files(transcript: Transcript) -> list[FileFact]:
    """Each path the turns read or changed, once, in the order first touched."""
    facts: dict[str, FileFact] = {}
    observed: set[str] = set()
    for number, turn in enumerate(transcript.turns, start=1):
        for kind, touches in (("read", turn.files_read), ("changed", turn.files_modified)):
            for touch in touches:
                fact = facts.setdefault(touch.path, FileFact(touch.path, kind))
                if kind == "changed":
                    fact.kind = "changed"
                if not fact.turns or fact.turns[-1] != number:
                    fact.turns.append(number)
                if touch.provenance == "observed":
                    observed.add(touch.path)
    for path, fact in facts.items():
        fact.provenance = "observed" if path in observed else "reported"
    return list(facts.values())


def check_files(facts: Sequence[FileFact], transcript: Transcript, folder: str | None) -> list[FileFact]:
    """The facts with whether each file changed since the newest turn that touched it."""
    root = Path(folder) if folder else None
    git = root is not None and _in_work_tree(root)
    for fact in facts:
        turn = transcript.turns[fact.turn - 1]
        moment = parse_time(turn.ended_at or turn.started_at or "")
        path = Path(fact.path) if os.path.isabs(fact.path) else (root / fact.path if root is not None else None)
        if path is None or moment is None:
            fact.unchanged_note = "not checked (no folder or no turn time)"
            continue
        if root is not None and not _inside(path, root):
            fact.unchanged_note = "not checked (outside the session's folder)"
            continue
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            fact.changed_since = f"the file is gone since turn {fact.turn}"
            continue
        except OSError as exc:
            fact.unchanged_note = f"not checked ({exc.strerror or exc})"
            continue
        reasons = []
        if mtime > moment.timestamp() + SLACK_S:
            reasons.append(f"modified after turn {fact.turn}")
        if git and root is not None:
            reasons.extend(_git_changes(root, path, moment.isoformat()))
        if reasons:
            fact.changed_since = "; ".join(reasons)
        else:
            fact.unchanged_note = f"unchanged since turn {fact.turn}"
    return list(facts)


def _inside(path: Path, root: Path) -> bool:
    try:
        return os.path.realpath(path).startswith(os.path.realpath(root) + os.sep)
    except (OSError, ValueError):
        return False


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S,
                              check=False, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _in_work_tree(root: Path) -> bool:
    return root.is_dir() and (_git(root, "rev-parse", "--is-inside-work-tree") or "").strip() == "true"


def _git_changes(root: Path, path: Path, since: str) -> list[str]:
    """The commits touching `path` since `since`, and whether it has uncommitted changes."""
    said = []
    commits = (_git(root, "log", f"--since={since}", "--format=%h", "--", str(path)) or "").split()
    if commits:
        said.append(f"{len(commits)} commit{'s' if len(commits) != 1 else ''} since ({', '.join(commits[:3])})")
    if (_git(root, "status", "--porcelain", "--", str(path)) or "").strip():
        said.append("uncommitted changes")
    return said
