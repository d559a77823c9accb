"""A session's history, from the neutral transcript (`core/transcript.py`), for any source:
the TUI's History tab (every detail, each fact with its provenance, and the transcript's notes)
and the bounded digest `reprise show` prints (one line per fact, each cut to a width). Times are
relative to `now` ("yesterday 14:05", how long the turn took); ISO stays in `--json`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from reprise.core.times import parse_time
from reprise.core.transcript import (
    Command,
    FileTouch,
    Provenance,
    Transcript,
    Turn,
    Usage,
)

from ..format import counted, duration, human_time, money
from ..text import clipped, safe_line, safe_text, short_line
from . import Line, line
from .conversation import REPLY_LINES, STATUS_WORDS, cut_text

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


def when(turn: Turn, now: datetime) -> str:
    """When a turn started and how long it ran: "yesterday 14:05, 2 min"."""
    started, ended = parse_time(turn.started_at), parse_time(turn.ended_at)
    if started is None and ended is None:
        return "time not recorded"
    shown = human_time(started or ended, now)
    if started is not None and ended is not None and ended > started:
        shown += f", {duration(ended - started)}"
    return shown


def history_lines(transcript: Transcript, now: datetime, *, show_ids: bool = False) -> list[Line]:
    """The History tab: turn by turn, what the user asked, what the agent replied, touched and
    ran (and whether the host observed it or the model reported it), errors and usage.

    An agent that keeps a history apart from the summary its model is sent (`history_apart`: Fractal)
    has that history shown whole. Another agent's file is one conversation, already on the
    Conversation tab: its History is the record of what each turn did (the prompt's first line, no reply)."""
    record_only = not transcript.history_apart
    kept = kept_turns(transcript)
    numbers = {id(turn): number for number, turn in enumerate(transcript.turns, start=1)}
    head = (f"{counted(len(kept), 'turn')} kept in the file (the summary has {len(transcript.turns)})."
            if len(kept) < len(transcript.turns) or transcript.history_apart
            else f"{counted(len(kept), 'turn')}.")
    lines = [line(head)]
    lines += [line(safe_line(note), style="dim") for note in transcript.notes]
    for turn in kept:
        lines.append(line())
        number = numbers.get(id(turn))
        name = f"Turn {number}" if number is not None else "A turn the summary no longer has"
        lines.append(line((f"── {name}", "bold"), f"  [{safe_line(STATUS_WORDS.get(turn.status, turn.status))}]  "
                          f"{when(turn, now)}" + (f"  {safe_line(turn.turn_id)}" if show_ids else "")))
        if record_only:
            asked = turn.user_message.strip().splitlines()
            lines.append(line(f"Asked: {safe_line(asked[0]) if asked else '(no prompt)'}", style="dim"))
        else:
            lines.append(line(f"User: {safe_text(turn.user_message)}"))
        if turn.reply and not record_only:
            reply, left = cut_text(turn.reply, REPLY_LINES)
            lines.append(line(f"Reply: {reply}" + (f"\n  … {left}" if left else "")))
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
        parts.append(counted(usage.iterations, "iteration"))
    if usage.duration_ms is not None:
        parts.append(f"{usage.duration_ms / 1000:.1f} s")
    if usage.cost is not None:
        parts.append(f"cost {money(usage.cost)}")
    return ", ".join(parts)


def history_digest_lines(transcript: Transcript) -> list[Line]:
    """`reprise show --raw`'s history: a line per turn (its id, status and ISO end) and per kind of
    fact, none longer than it needs."""
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
