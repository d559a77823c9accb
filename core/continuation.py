"""Continuing a session in another agent (`reprise continue ID --to AGENT`): the session read as the
neutral transcript by its own source, written as a new session of the target agent by the target's
`SessionWriter`, in the target's own store and byte form: its whole history (the native way), or one
first message holding its brief (`brief.py`). One reader into and one writer out of the transcript
per agent: no converter knows two formats.

The source's files are never touched. Both sessions carry the link in Reprise's metadata: the new
one `continued_from` (agent, id, the turns it covers, the source file's SHA-256 then), the source
`continued_in` (each continuation, newest last). A continuation repeated later writes another new
session, never into one the target agent owns. The new session is a fork Reprise wrote, so undo
moves it to the trash.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .audit import iso_time
from .brief import Brief
from .errors import RepriseError, UsageError
from .paths import SessionRef
from .session_meta import SessionMeta
from .sources.base import OpenedSession, SessionSource
from .sources.roles import SessionWriter
from .sources.session_writing import WrittenSession
from .transcript import Transcript, Turn

TITLE_CHARS = 60
_FROM = re.compile(r" \((?:brief )?from [^()]+\)$")


@dataclass(slots=True)
class Continuation:
    """A session continued (or, dry, planned) in another agent: its history (native), or a brief."""

    source: SessionRef
    source_label: str
    target_label: str
    written: WrittenSession
    source_sha256: str
    brief: Brief | None = None
    resume_argv: list[str] = field(default_factory=list)
    context_tokens: int | None = None   # the target's meter of the new session's next turn
    context_window: int | None = None
    meter_note: str | None = None

    @property
    def over_window(self) -> bool:
        return (self.context_tokens is not None and self.context_window is not None
                and self.context_tokens > self.context_window)


def continued_title(title: str | None, session_id: str, agent: str, *, brief: bool = False) -> str:
    """The new session's title: the source's (one line, at most TITLE_CHARS), and where it came from."""
    text = _FROM.sub("", " ".join((title or f"session {session_id[:8]}").split()))   # one "(from …)": the newest
    text = text if len(text) <= TITLE_CHARS else text[:TITLE_CHARS - 1] + "…"
    return f"{text} ({'brief ' if brief else ''}from {agent})"


@dataclass(frozen=True, slots=True)
class Earlier:
    """The newest continuation of the same source in the same agent that is still there: a repeated
    continuation is written on top of it, with only the source's turns since (`through`)."""

    opened: OpenedSession
    through: int


def brief_transcript(opened: OpenedSession, brief: Brief, now: str) -> Transcript:
    """A new session whose one record is the brief, as the user's first message, waiting for the agent."""
    return Transcript(opened.transcript.source, opened.ref.session_id,
                      turns=[Turn("brief", brief.text, "pending", started_at=now, ended_at=now)])


def continue_session(source: SessionSource, opened: OpenedSession, target: SessionSource, folder: Path, *,
                     title: str | None, model: str | None, dry_run: bool, brief: Brief | None = None,
                     earlier: Earlier | None = None) -> Continuation:
    """Write the opened session of `source` as a new session of `target` in `folder` (its history, or
    with `brief` a session whose first message is the brief), and link the two. After an `earlier`
    continuation, the new session is that one's turns (the target's own since included) and then the
    source's turns since it (or the brief of them)."""
    ref = opened.ref
    if target.name == source.name:
        raise UsageError(f"Session {ref.session_id} is already a {source.label} session.",
                         hint=f"to start again from it in {source.label}, trim it as a fork: "
                              f"reprise trim {ref.session_id} --fork ...")
    if SessionWriter not in target.roles:
        from .sources.roles import missing_role

        raise missing_role(target, SessionWriter)
    writer: SessionWriter = target   # type: ignore[assignment]  # the role is among its bases (checked above)
    through = len(opened.transcript.turns)
    since = earlier.through if earlier is not None else 0
    if earlier is not None and through <= since:
        raise UsageError(f"Session {ref.session_id} has no turn since its continuation in {target.label} "
                         f"({earlier.opened.ref.session_id}, through turn {since}).",
                         hint=f"resume that one, or write the whole history again: reprise continue "
                              f"{ref.session_id} --to {target.name} --fresh")
    origin: dict[str, object] = {"source": source.name, "session_id": ref.session_id, "through_turn": through,
                                 "sha256": opened.sha256}
    if brief is not None:
        origin.update(brief=True, brief_tokens=brief.tokens, brief_budget=brief.budget)
    if earlier is not None:
        origin.update(after=earlier.opened.ref.session_id, from_turn=since + 1)
    created = iso_time(time.time())
    meta = SessionMeta.model_validate({"title": continued_title(title, ref.session_id, source.label,
                                                                brief=brief is not None),
                                       "created_at": created, "continued_from": origin})
    transcript = opened.transcript if brief is None else brief_transcript(opened, brief, created)
    if earlier is not None:   # the earlier continuation's turns, then only what is new
        added = opened.transcript.turns[since:] if brief is None else transcript.turns
        transcript = Transcript(opened.transcript.source, ref.session_id,
                                turns=[*earlier.opened.transcript.turns, *added])
    written = writer.write_session(transcript, folder, meta, origin=ref, agent=source.label,
                                   model=model if brief is None else None, dry_run=dry_run)
    if written.written:
        link = {"source": target.name, "session_id": written.ref.session_id, "through_turn": through,
                "at": meta.created_at}

        def linked(kept: SessionMeta) -> None:
            extra = kept.model_extra if kept.model_extra is not None else {}
            earlier = extra.get("continued_in")
            extra["continued_in"] = [*(earlier if isinstance(earlier, list) else []), link]

        try:
            source.update_meta(ref, linked)
        except (OSError, RepriseError) as exc:
            written.notes.append(f"the link on {ref.session_id} could not be recorded ({exc}); the new session "
                                 "records where it came from")
    if earlier is not None:
        written.notes.insert(0, f"written on top of the earlier continuation {earlier.opened.ref.session_id} "
                                f"(its {len(earlier.opened.transcript.turns)} turns), with turns {since + 1}–{through} "
                                f"of {source.label}'s session")
    return Continuation(ref, source.label, target.label, written, opened.sha256, brief)
