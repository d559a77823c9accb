"""A session's conversation for people, from the neutral transcript, the same for every agent:
the TUI's Conversation tab and `reprise show`.

Each turn is a block: a heading (`Turn N · status · yesterday 14:05 · 41k tokens · $0.10`, the
turn's id only when asked for), the prompt and the start of the reply (its first lines, then
"… N more lines"), what the agent touched ("read 3 files, changed 1"), the commands it ran and
the error. One turn can be shown whole (the one a search landed on). The full text, thinking
and tool output included, is `full_conversation_lines` (the raw view of a source that has no
rendered summary of its own) and `reprise show ID --json`.

Span styles here are roles (`heading`, `muted`, `you`, `agent`, `ok`, `warning`, `error`), which
the TUI maps to its theme; the CLI prints the plain text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reprise.core.times import parse_time
from reprise.core.transcript import Transcript, Turn

from ..format import duration, human_time, money, short_tokens
from ..text import clipped, safe_line, safe_text, short_line
from . import Line, line

PROMPT_LINES = 6
REPLY_LINES = 4
ERROR_LINES = 3
LINE_CHARS = 240          # of one shown line of a cut text; a paragraph on one line is cut too
WHOLE_CHARS = 20_000      # of a text shown whole (a turn a search landed on)
COMMANDS_SHOWN = 3
COMMAND_CHARS = 120
TOOL_RESULT_CHARS = 2_000
TOOL_INPUT_CHARS = 300

STATUS_WORDS = {"max_iterations": "iteration limit"}
STATUS_ROLES = {"succeeded": "ok", "failed": "error", "interrupted": "warning", "max_iterations": "warning",
                "pending": "warning"}


@dataclass(frozen=True, slots=True)
class TurnBlock:
    """One turn's lines; `number` counts from 1, as search hits and `Turn N` do."""

    number: int
    lines: list[Line]


def cut_text(text: str, max_lines: int, max_chars: int = LINE_CHARS) -> tuple[str, str]:
    """The first `max_lines` lines of a text (each at most `max_chars`), made terminal-safe, and
    what was left out ("12 more lines", "1,234 more characters"; "" when nothing was)."""
    text = text.strip("\n")
    shown: list[str] = []
    start = 0
    while len(shown) < max_lines and start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if end - start > max_chars:
            shown.append(text[start:start + max_chars].rstrip() + "…")
            rest = text[start + max_chars:]
            more_lines = rest.count("\n")
            left = (f"{more_lines:,} more line{'s' if more_lines != 1 else ''}" if more_lines
                    else f"{len(rest):,} more characters")
            return safe_text("\n".join(shown)), left
        shown.append(text[start:end])
        start = end + 1
    if start >= len(text):
        return safe_text("\n".join(shown)), ""
    more = text.count("\n", start) + 1
    return safe_text("\n".join(shown)), f"{more:,} more line{'s' if more != 1 else ''}"


def facts_sentence(read: int, changed: int, commands: int, tool_calls: int = 0) -> str:
    """What a turn touched, in words: "read 3 files, changed 1, ran 2 commands" ("" for nothing)."""
    parts = []
    if read:
        parts.append(f"read {read} file{'s' if read != 1 else ''}")
    if changed:
        parts.append(f"changed {changed}" if read else f"changed {changed} file{'s' if changed != 1 else ''}")
    if commands:
        parts.append(f"ran {commands} command{'s' if commands != 1 else ''}")
    if tool_calls and not parts:
        parts.append(f"{tool_calls} tool call{'s' if tool_calls != 1 else ''}")
    return ", ".join(parts)


def turn_counts(turn: Turn) -> tuple[int, int, int]:
    """(files read, files changed, commands run): the lists where the store keeps them, else the
    agent's own counts."""
    if turn.fact_counts is not None and not turn.detailed:
        return turn.fact_counts
    return len(turn.files_read), len(turn.files_modified), len(turn.commands)


def turn_time(turn: Turn) -> datetime | None:
    return parse_time(turn.started_at) or parse_time(turn.ended_at)


def turn_heading(number: int, turn: Turn, now: datetime, *, show_ids: bool = False) -> Line:
    status = turn.status
    parts: list[str | tuple[str, str]] = [(f"Turn {number}", "heading"), " · ",
                                          (STATUS_WORDS.get(status, status), STATUS_ROLES.get(status, ""))]
    figures = []
    at = turn_time(turn)
    if at is not None:
        figures.append(human_time(at, now))
    usage = turn.usage
    if usage is not None:
        spent = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_creation_tokens
        if spent:
            figures.append(f"{short_tokens(spent)} tokens")
        if usage.cost:
            figures.append(money(usage.cost))
        if usage.duration_ms:
            figures.append(duration(usage.duration_ms / 1000))
    if show_ids:
        figures.append(safe_line(turn.turn_id))
    for figure in figures:
        parts += [" · ", (figure, "muted")]
    return line(*parts)


def _said(label: str, role: str, text: str, max_lines: int, whole: bool) -> list[Line]:
    if whole:
        shown = safe_text(text[:WHOLE_CHARS].strip("\n"))
        left = f"{len(text) - WHOLE_CHARS:,} more characters" if len(text) > WHOLE_CHARS else ""
    else:
        shown, left = cut_text(text, max_lines)
    lines = [line((f"{label}: ", role), shown)]
    if left:
        lines.append(line(f"  … {left}", style="muted"))
    return lines


def turn_lines(number: int, turn: Turn, now: datetime, agent: str = "Agent", *, show_ids: bool = False,
               whole: bool = False) -> list[Line]:
    """One turn for people; `whole` shows its prompt, reply and error uncut."""
    lines = [turn_heading(number, turn, now, show_ids=show_ids)]
    lines += _said("You", "you", turn.user_message, PROMPT_LINES, whole)
    if turn.reply:
        lines += _said(agent, "agent", turn.reply, REPLY_LINES, whole)
    elif turn.status == "pending":
        lines.append(line("No reply yet.", style="muted"))
    read, changed, commands = turn_counts(turn)
    sentence = facts_sentence(read, changed, commands, len(turn.tool_calls))
    if sentence:
        lines.append(line(sentence[0].upper() + sentence[1:], style="muted"))
    if whole:   # the turn a search landed on: its files too (a search matches them)
        lines += [line(f"  read {clipped(touch.path, COMMAND_CHARS)}", style="muted") for touch in turn.files_read]
        lines += [line(f"  changed {clipped(touch.path, COMMAND_CHARS)}", style="muted")
                  for touch in turn.files_modified]
    shown = turn.commands if whole else turn.commands[:COMMANDS_SHOWN]
    for command in shown:
        lines.append(line(f"  $ {short_line(command.command, COMMAND_CHARS)}", style="muted"))
    if len(turn.commands) > len(shown):
        lines.append(line(f"  … {len(turn.commands) - len(shown)} more commands", style="muted"))
    if turn.error:
        lines += _said("Error", "error", turn.error, ERROR_LINES, whole)
    return lines


def conversation_blocks(transcript: Transcript, now: datetime, agent: str = "Agent", *, show_ids: bool = False,
                        whole_turn: int | None = None, first: int = 0) -> list[TurnBlock]:
    """The turns from index `first` on, each a block ending in a blank line; a compaction shows
    where it happened (in the block of the turn after it)."""
    compacted = {c.before_turn: c for c in transcript.compactions}
    blocks = []
    for index in range(first, len(transcript.turns)):
        lines = []
        if (compaction := compacted.get(index)) is not None:
            lines += [_compaction_line(compaction.tokens_before, compaction.tokens_after, "here"), line()]
        lines += turn_lines(index + 1, transcript.turns[index], now, agent, show_ids=show_ids,
                            whole=whole_turn == index + 1)
        lines.append(line())
        blocks.append(TurnBlock(index + 1, lines))
    if (after := compacted.get(len(transcript.turns))) is not None and blocks:
        blocks[-1].lines.append(_compaction_line(after.tokens_before, after.tokens_after, "after the last turn"))
    return blocks


def _compaction_line(before: int | None, after: int | None, where: str) -> Line:
    figures = " → ".join(short_tokens(n) for n in (before, after) if n is not None)
    return line(f"── context compacted {where}{f' ({figures} tokens)' if figures else ''} ──", style="muted")


def conversation_lines(transcript: Transcript, now: datetime, agent: str = "Agent", *,
                       show_ids: bool = False) -> list[Line]:
    """`reprise show`: the transcript's notes, then every turn."""
    lines = [line(safe_line(note), style="muted") for note in transcript.notes]
    if lines:
        lines.append(line())
    if not transcript.turns:
        lines.append(line("No turns yet.", style="muted"))
    for block in conversation_blocks(transcript, now, agent, show_ids=show_ids):
        lines += block.lines
    return lines


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def full_conversation_lines(transcript: Transcript, agent: str = "Agent") -> list[Line]:
    """Everything the transcript holds, turn by turn (the raw view of a source with no rendered
    summary of its own): ids and timestamps, each prompt and reply whole, the thinking folded to
    one line, each tool call with its result cut for display, the error."""
    compacted = {c.before_turn: c for c in transcript.compactions}
    lines: list[Line] = []
    for index, turn in enumerate(transcript.turns):
        compaction = compacted.get(index)
        if compaction is not None:
            figures = " → ".join(f"{n:,}" for n in (compaction.tokens_before, compaction.tokens_after) if n is not None)
            lines.append(line(f"── context compacted here{f' ({figures} tokens)' if figures else ''} ──", style="dim"))
            lines.append(line())
        lines.append(line((f"Turn {index + 1} ({turn.status})", "bold"),
                          f"  {clipped(turn.turn_id, 80)}  {safe_line(turn.started_at or '')}".rstrip()))
        lines.append(line(f"You: {safe_text(turn.user_message)}"))
        if turn.thinking:
            lines.append(line(f"▸ thinking, {len(turn.thinking):,} characters (folded): "
                              f"{short_line(turn.thinking, 80)}", style="dim"))
        for call in turn.tool_calls:
            lines.append(line(f"⚙ {safe_line(call.name)}: {short_line(call.input, TOOL_INPUT_CHARS)}", style="dim"))
            if call.result is not None:
                shown = safe_text(_cut(call.result, TOOL_RESULT_CHARS)).replace("\n", "\n    ")
                lines.append(line(f"  {'✗ ' if call.is_error else '→ '}{shown}", style="dim"))
        if turn.reply:
            lines.append(line(f"{agent}: {safe_text(turn.reply)}"))
        if turn.error:
            lines.append(line(f"Error: {safe_text(turn.error)}", style="bold"))
        lines.append(line())
    if index_after := compacted.get(len(transcript.turns)):
        lines.append(line(f"── context compacted after the last turn ({index_after.tokens_after or '?'} tokens)",
                          style="dim"))
    return lines
