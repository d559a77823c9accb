"""What an agent did in one turn, as the backend that ran it reports it, before a source records it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

INTERRUPTED_ERROR = "Turn interrupted by user."


@dataclass(slots=True)
class TurnOutcome:
    """What an agent did in one turn."""

    status: str
    response: str = ""
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    commands_run: list[str] = field(default_factory=list)
    error: str | None = None
    usage: dict[str, Any] | None = None   # the usage figures as the agent reported them
    notes: list[str] = field(default_factory=list)
    output: Any = None  # the whole reply when it was over the cap (a processes.CapturedOutput), to archive
    unread: bool = False  # the agent's printed result was not read (over the cap): take the turn it saved


def cut_reply(head: str, chars_cut: int, archive_digest: str | None, why_not_archived: str | None = None) -> str:
    """A reply cut at the cap, with the marker trims leave; without an archive entry, the marker says why."""
    from .trimming import cap_marker

    if archive_digest is not None:
        return head + cap_marker(chars_cut, archive_digest)
    return head + (f"\n[reprise: {chars_cut:,} characters cut; the whole output could not be archived: "
                   f"{why_not_archived}]")


def left_running_note(processes: list[str]) -> str:
    """The note on a turn whose agent exited while processes it started still held its output."""
    held = ", ".join(processes) if processes else "a process it started"
    return (f"The agent exited, but {held} still held its output; Reprise stopped reading "
            "and left it running.")
