"""A session's conversation, turn by turn, from the neutral transcript: what the TUI's Summary tab
and `reprise show` print for a source that has no rendered summary of its own (Claude Code).

Each turn opens with a `Turn N (status)` line (the search jumps to it), then the prompt, the
model's thinking folded to one line (it is never edited; `reprise show ID --json` has it whole),
each tool call with its result cut for display, the reply, and the error. A compaction shows
where it happened."""

from __future__ import annotations

from reprise.core.transcript import Transcript

from ..text import safe_line, safe_text, short_line
from . import Line, line

TOOL_RESULT_CHARS = 2_000
TOOL_INPUT_CHARS = 300


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def conversation_lines(transcript: Transcript, agent: str = "Agent") -> list[Line]:
    compacted = {c.before_turn: c for c in transcript.compactions}
    lines: list[Line] = []
    for index, turn in enumerate(transcript.turns):
        compaction = compacted.get(index)
        if compaction is not None:
            figures = " → ".join(f"{n:,}" for n in (compaction.tokens_before, compaction.tokens_after) if n is not None)
            lines.append(line(f"── context compacted here{f' ({figures} tokens)' if figures else ''} ──", style="dim"))
            lines.append(line())
        lines.append(line((f"Turn {index + 1} ({turn.status})", "bold"),
                          f"  {safe_line(turn.started_at or '')}".rstrip()))
        lines.append(line(f"You: {safe_text(turn.user_message)}"))
        if turn.thinking:
            lines.append(line(f"▸ thinking, {len(turn.thinking):,} characters (folded): "
                              f"{short_line(turn.thinking, 80)}", style="dim"))
        for call in turn.tool_calls:
            lines.append(line(f"⚙ {safe_line(call.name)}: {short_line(call.input, TOOL_INPUT_CHARS)}", style="cyan"))
            if call.result is not None:
                shown = safe_text(_cut(call.result, TOOL_RESULT_CHARS)).replace("\n", "\n    ")
                lines.append(line(f"  {'✗ ' if call.is_error else '→ '}{shown}", style="dim"))
        if turn.reply:
            lines.append(line(f"{agent}: {safe_text(turn.reply)}"))
        if turn.error:
            lines.append(line(f"Error: {safe_text(turn.error)}", style="red"))
        lines.append(line())
    if index_after := compacted.get(len(transcript.turns)):
        lines.append(line(f"── context compacted after the last turn ({index_after.tokens_after or '?'} tokens)",
                          style="dim"))
    return lines
