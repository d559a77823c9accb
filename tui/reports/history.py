"""A session's history, from the neutral transcript (`core/transcript.py`), for any source:
the TUI's History tab (every detail, each fact with its provenance, and the transcript's notes)
and the bounded digest `reprise show` prints (one line per fact, each cut to a width)."""

from __future__ import annotations

from collections.abc import Sequence

from reprise.core.transcript import (
    Command,
    FileTouch,
    Provenance,
    Transcript,
    Turn,
    Usage,
)

from ..text import clipped, safe_line, safe_text, short_line
from . import Line, line

PROVENANCE: dict[Provenance, str] = {"observed": "observed", "reported": "reported by the model"}
DIGEST_WIDTH = 100


def kept_turns(transcript: Transcript) -> list[Turn]:
    """The turns whose details (files, commands, times) the store keeps."""
    return [turn for turn in transcript.turns if turn.detailed]


def _facts(turn: Turn) -> tuple[tuple[str, str, Sequence[FileTouch | Command]], ...]:
    """(the digest's label, the full view's label, the facts) for files read, files modified, commands."""
    return (("read", "Files read", turn.files_read), ("modified", "Files modified", turn.files_modified),
            ("commands", "Commands", turn.commands))


def _text(fact: FileTouch | Command) -> str:
    return fact.path if isinstance(fact, FileTouch) else fact.command


def history_lines(transcript: Transcript) -> list[Line]:
    """The History tab: turn by turn, what the user asked, what the agent touched and ran (and
    whether the host observed it or the model reported it), errors and usage."""
    kept = kept_turns(transcript)
    counted = (f"{len(kept)} turn(s) kept in the file (the summary has {len(transcript.turns)})."
               if len(kept) < len(transcript.turns) or transcript.source == "fractal"
               else f"{len(kept)} turn{'s' if len(kept) != 1 else ''}.")
    lines = [line(counted)]
    lines += [line(safe_line(note), style="dim") for note in transcript.notes]
    for turn in kept:
        lines.append(line())
        lines.append(line((f"── {safe_line(turn.turn_id)}", "bold"), f"  [{safe_line(turn.status)}]  "
                          f"{safe_line(turn.started_at or '?')} → {safe_line(turn.ended_at or '?')}"))
        lines.append(line(f"User: {safe_text(turn.user_message)}"))
        for _, label, facts in _facts(turn):
            for provenance, told in PROVENANCE.items():
                shown = [_text(fact) for fact in facts if fact.provenance == provenance]
                if shown:
                    lines.append(line(f"{label} ({len(shown)}, {told}):"))
                    lines += [line(f"  {safe_line(text)}") for text in shown]
        if turn.error:
            lines.append(line(f"Error: {safe_text(turn.error)}", style="red"))
        if turn.usage is not None:
            lines.append(line(f"Usage: {usage_text(turn.usage)}", style="dim"))
    return lines


def usage_text(usage: Usage) -> str:
    """A turn's figures, each one the source recorded."""
    parts = [f"{usage.input_tokens:,} in", f"{usage.output_tokens:,} out"]
    if usage.cache_read_tokens or usage.cache_creation_tokens:
        parts.append(f"cache {usage.cache_read_tokens:,} read, {usage.cache_creation_tokens:,} written")
    if usage.context_tokens is not None:
        parts.append(f"context {usage.context_tokens:,}")
    if usage.iterations is not None:
        parts.append(f"{usage.iterations} iterations")
    if usage.duration_ms is not None:
        parts.append(f"{usage.duration_ms / 1000:.1f} s")
    if usage.cost is not None:
        parts.append(f"cost {usage.cost:.4f}")
    return ", ".join(parts)


def history_digest_lines(transcript: Transcript) -> list[Line]:
    """`reprise show`'s history: a line per turn and per kind of fact, none longer than it needs."""
    kept = kept_turns(transcript)
    lines = [line(f"History (last {len(kept)} turns kept in the file):")]
    for turn in kept:
        ended = turn.ended_at if turn.ended_at is not None else "-"
        lines.append(line(f"- {clipped(turn.turn_id, 60)} [{clipped(turn.status, 20)}] {clipped(ended, 40)}"))
        lines.append(line(f"  user: {short_line(turn.user_message, DIGEST_WIDTH)}"))
        for label, _, facts in _facts(turn):
            if facts:
                lines.append(line(f"  {label}: {clipped(', '.join(safe_line(_text(f)) for f in facts), DIGEST_WIDTH)}"))
        if turn.error:
            lines.append(line(f"  error: {short_line(turn.error, DIGEST_WIDTH)}"))
    return lines
