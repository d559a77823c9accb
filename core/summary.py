"""Fractal's rendered session summary, character for character: the text that enters every
prompt of the next turn."""

from __future__ import annotations

from .models import SessionSummary, SummaryTurn

EMPTY_SUMMARY = "No prior Fractal session context."
SUMMARY_HEADER = "## Session Summary"


def turn_block(number: int, turn: SummaryTurn) -> str:
    """One turn as Fractal renders it; the summary is the header plus "\n\n" + each block."""
    lines = [f"Turn {number} ({turn.turn_id})", f"User: {turn.user.message}"]
    agent = turn.agent
    if agent is None:
        lines.append("Agent status: pending")
        return "\n".join(lines)
    lines.append(f"Agent status: {agent.status}")
    if agent.response:
        lines.append(f"Agent response: {agent.response}")
    lines.append(f"files_read_count: {agent.files_read_count}")
    lines.append(f"files_changed_count: {agent.files_changed_count}")
    lines.append(f"commands_run_count: {agent.commands_run_count}")
    if agent.error:
        lines.append(f"Error: {agent.error}")
    return "\n".join(lines)


def render_summary(summary: SessionSummary) -> str:
    return render_summary_head(summary) if summary.turns else EMPTY_SUMMARY


def render_summary_head(summary: SessionSummary) -> str:
    """The header and every turn block, but never the empty-session sentence: the text a new
    turn's block is appended to (after a blank line)."""
    return SUMMARY_HEADER + "".join("\n\n" + turn_block(number, turn)
                                    for number, turn in enumerate(summary.turns, start=1))


def pending_block(number: int, turn_id: str, message: str) -> str:
    """The block of a turn just added by Fractal's `add_user_message`: no agent yet."""
    return f"Turn {number} ({turn_id})\nUser: {message}\nAgent status: pending"
