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
from datetime import UTC, datetime
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
    """The facts with whether each file changed since the newest turn that touched it (git asked twice
    for the whole work tree, never once a file)."""
    root = Path(folder) if folder else None
    checked: list[tuple[FileFact, Path, float]] = []
    for fact in facts:
        turn = transcript.turns[fact.turn - 1]
        moment = parse_time(turn.ended_at or turn.started_at or "")
        path = Path(fact.path) if os.path.isabs(fact.path) else (root / fact.path if root is not None else None)
        if path is None or moment is None:
            fact.unchanged_note = "not checked (no folder or no turn time)"
        elif root is not None and not _inside(path, root):
            fact.unchanged_note = "not checked (outside the session's folder)"
        else:
            checked.append((fact, path, moment.timestamp()))
    history = _WorkTree.of(root, min((at for _, _, at in checked), default=0.0)) if root is not None else None
    for fact, path, at in checked:
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            fact.changed_since = f"the file is gone since turn {fact.turn}"
            continue
        except OSError as exc:
            fact.unchanged_note = f"not checked ({exc.strerror or exc})"
            continue
        reasons = [f"modified after turn {fact.turn}"] if mtime > at + SLACK_S else []
        if history is not None:
            reasons.extend(history.changes(path, at))
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


@dataclass(slots=True)
class _WorkTree:
    """What git says of a work tree since a moment: each file's commits (short hash, commit time) and
    the files with uncommitted changes, by real path."""

    commits: dict[str, list[tuple[str, float]]]
    dirty: set[str]

    @classmethod
    def of(cls, root: Path, since: float) -> _WorkTree | None:
        top = (_git(root, "rev-parse", "--show-toplevel") or "").strip()
        if not top:
            return None   # not a git work tree (or no git)
        moment = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        log = _git(root, "log", f"--since={moment}", "--format=%x00%h %ct", "--name-only", "--no-renames") or ""
        commits: dict[str, list[tuple[str, float]]] = {}
        for entry in log.split("\0")[1:]:
            head, _, names = entry.partition("\n")
            short, _, when = head.partition(" ")
            for name in filter(None, names.splitlines()):
                commits.setdefault(os.path.realpath(os.path.join(top, name)), []).append((short, float(when or 0)))
        status = _git(root, "status", "--porcelain", "-z", "--untracked-files=no") or ""
        dirty = {os.path.realpath(os.path.join(top, item[3:])) for item in status.split("\0") if len(item) > 3}
        return cls(commits, dirty)

    def changes(self, path: Path, since: float) -> list[str]:
        """The commits touching `path` after `since`, and whether it has uncommitted changes."""
        real = os.path.realpath(path)
        said = []
        after = [short for short, when in self.commits.get(real, []) if when > since]
        if after:
            said.append(f"{len(after)} commit{'s' if len(after) != 1 else ''} since ({', '.join(after[:3])})")
        if real in self.dirty:
            said.append("uncommitted changes")
        return said
