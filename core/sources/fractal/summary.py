"""Fractal's rendered session summary, character for character: the text that enters every
prompt of the next turn."""

from __future__ import annotations

from .models import SessionSummary, SummaryTurn

EMPTY_SUMMARY = "No prior Fractal session context."
SUMMARY_HEADER = "## Session Summary"


def turn_block(number: int, turn: SummaryTurn) -> str:
    """One turn as Fractal renders it; the summary is the header plus "\n\n" + each block."""
    return "".join(_block_parts(number, turn))


def _block_parts(number: int, turn: SummaryTurn) -> list[str]:
    """A turn block in pieces that reference the turn's own strings, so that joining the whole
    summary copies a long reply once (not once per line, block and summary)."""
    parts = [f"Turn {number} ({turn.turn_id})", "\nUser: ", turn.user.message]
    agent = turn.agent
    if agent is None:
        parts.append("\nAgent status: pending")
        return parts
    parts.append(f"\nAgent status: {agent.status}")
    if agent.response:
        parts += ["\nAgent response: ", agent.response]
    parts.append(f"\nfiles_read_count: {agent.files_read_count}")
    parts.append(f"\nfiles_changed_count: {agent.files_changed_count}")
    parts.append(f"\ncommands_run_count: {agent.commands_run_count}")
    if agent.error:
        parts += ["\nError: ", agent.error]
    return parts


def render_summary(summary: SessionSummary) -> str:
    return render_summary_head(summary) if summary.turns else EMPTY_SUMMARY


def render_summary_head(summary: SessionSummary) -> str:
    """The header and every turn block, but never the empty-session sentence: the text a new
    turn's block is appended to (after a blank line)."""
    return "".join(summary_head_parts(summary))


def summary_head_parts(summary: SessionSummary) -> list[str]:
    """`render_summary_head` as pieces to join; the long ones are the turns' own strings, so a
    huge summary is copied once, when it is joined."""
    parts = [SUMMARY_HEADER]
    for number, turn in enumerate(summary.turns, start=1):
        parts.append("\n\n")
        parts += _block_parts(number, turn)
    return parts


def pending_block(number: int, turn_id: str, message: str) -> str:
    """The block of a turn just added by Fractal's `add_user_message`: no agent yet."""
    return f"Turn {number} ({turn_id})\nUser: {message}\nAgent status: pending"
