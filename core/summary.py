"""Fractal's rendered session summary, character for character: the text that enters every
prompt of the next turn."""

from __future__ import annotations

from .models import SessionSummary

EMPTY_SUMMARY = "No prior Fractal session context."


def render_summary(summary: SessionSummary) -> str:
    if not summary.turns:
        return EMPTY_SUMMARY
    lines = ["## Session Summary"]
    for index, turn in enumerate(summary.turns, start=1):
        lines.append("")
        lines.append(f"Turn {index} ({turn.turn_id})")
        lines.append(f"User: {turn.user.message}")
        agent = turn.agent
        if agent is None:
            lines.append("Agent status: pending")
            continue
        lines.append(f"Agent status: {agent.status}")
        if agent.response:
            lines.append(f"Agent response: {agent.response}")
        lines.append(f"files_read_count: {agent.files_read_count}")
        lines.append(f"files_changed_count: {agent.files_changed_count}")
        lines.append(f"commands_run_count: {agent.commands_run_count}")
        if agent.error:
            lines.append(f"Error: {agent.error}")
    return "\n".join(lines)
