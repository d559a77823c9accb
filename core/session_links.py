"""The links between sessions of different agents that Reprise shows: a continuation Reprise wrote
(`continued_from` and `continued_in` in its metadata, core/continuation.py) and an import an agent
made itself (Codex's ledger of the Claude Code sessions it imported, read by its source)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from .session_meta import SessionMeta


Direction = Literal["from", "in"]
How = Literal["continued", "imported"]


@dataclass(frozen=True, slots=True)
class SessionLink:
    """One continuation a session's metadata records: `from` the session it was written from, or
    `in` a session written from it."""

    direction: Direction
    source: str
    session_id: str
    through_turn: int | None
    how: How = "continued"

    def line(self, label: str) -> str:
        """How people read it, `label` naming the other session's agent."""
        through = f" (through turn {self.through_turn})" if self.through_turn is not None else ""
        if self.how == "imported":
            return (f"Imported by its agent from {label} ← {self.session_id}" if self.direction == "from"
                    else f"Imported into {label} → {self.session_id}")
        arrow = "from" if self.direction == "from" else "in"
        return f"Continued {arrow} {label} {'←' if arrow == 'from' else '→'} {self.session_id}{through}"


def links_of(meta: SessionMeta) -> list[SessionLink]:
    """The continuations Reprise's metadata of a session records (entries not of that form are passed over)."""
    extra = meta.model_extra or {}
    continued_in = extra.get("continued_in")
    entries: list[tuple[Direction, object]] = [("from", extra.get("continued_from"))]
    entries += [("in", entry) for entry in (continued_in if isinstance(continued_in, list) else [])]
    links = []
    for direction, entry in entries:
        if not isinstance(entry, dict):
            continue
        source, session_id, through = entry.get("source"), entry.get("session_id"), entry.get("through_turn")
        if isinstance(source, str) and isinstance(session_id, str):
            counted = through if isinstance(through, int) and not isinstance(through, bool) else None
            links.append(SessionLink(direction, source, session_id, counted))
    return links


def described(link: SessionLink) -> str:
    """A link as people read it, the other session's agent named by its label."""
    from .sources.registry import registry

    labels = {spec.name: spec.label for spec in registry().specs}
    return link.line(labels.get(link.source, link.source))
