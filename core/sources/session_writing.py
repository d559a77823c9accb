"""What every writer of a new session from a neutral transcript shares (the `SessionWriter` role, the
native way of `reprise continue`): the result it gives, how a tool call the target agent has no tool
for is carried (as text with a visible marker), and the notes on what the target cannot accept.

A writer turns each turn of the transcript into the target agent's own records: the prompt, the
shell commands as the target's shell tool with their output, every other tool call as marked text,
the reply. Thinking and reasoning are left out (an agent accepts only its own, signed or encrypted by
its provider) and said. The writing itself is pure (`bytes` from a transcript, ids and times given);
the source puts the bytes in its store as a new file, never over one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..audit import AuditLog
from ..errors import RepriseError
from ..paths import SessionRef
from ..transcript import ToolCall, Transcript, Turn

MARK = "⟦Reprise⟧"   # what starts every text a conversion put in place of something the target cannot hold


@dataclass(slots=True)
class WrittenSession:
    """A new session written (or, for a dry run, planned) from a transcript."""

    ref: SessionRef
    path: Path
    data: bytes          # the new file's bytes
    turns: int           # the turns it holds
    notes: list[str] = field(default_factory=list)   # what was left out or changed on the way
    written: bool = False
    sha256: str = ""


def tool_call_text(call: ToolCall, agent: str) -> str:
    """A tool call of `agent` the target has no tool for, as the text the target's reply carries:
    the marker, the tool's name and input, then its result."""
    lines = [f"{MARK} {agent} tool call `{call.name}`" + (" (failed)" if call.is_error else "") + ":", call.input]
    if call.result is not None:
        lines += [f"{MARK} its result:", call.result]
    else:
        lines.append(f"{MARK} no result was recorded.")
    return "\n".join(lines)


def left_out_notes(transcript: Transcript, agent: str, target: str) -> list[str]:
    """What no writer carries, said once: thinking, and the compactions the source made."""
    notes = []
    thought = sum(1 for turn in transcript.turns if turn.thinking)
    if thought:
        notes.append(f"the thinking of {thought} turn{'s' if thought != 1 else ''} is left out: {target} accepts "
                     f"only its own model's")
    if transcript.compactions:
        count = len(transcript.compactions)
        notes.append(f"{agent} compacted this session {count} time{'s' if count != 1 else ''}; the whole history "
                     f"is carried, not {agent}'s summary")
    return notes


def without_lone_surrogates(text: str) -> str:
    """`text` with each unpaired UTF-16 surrogate (JSON can carry one, UTF-8 cannot) as U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def counted(count: int, noun: str, rest: str) -> str:
    """"3 turns <rest> are" / "1 turn <rest> is": a note's subject and its verb."""
    return f"{count} {noun}{'s' if count != 1 else ''} {rest} {'are' if count != 1 else 'is'}"


def written_notes(transcript: Transcript, agent: str, target: str, *, undated: int = 0, mended: int = 0,
                  why_mended: str = "a UTF-8 file cannot hold one") -> list[str]:
    """The notes every writer gives: what no writer carries (`left_out_notes`), the tool calls carried
    as marked text, the turns dated now, the texts whose lone surrogates became U+FFFD."""
    notes = left_out_notes(transcript, agent, target)
    as_text = sum(len(turn.tool_calls) - shell_calls(turn.tool_calls) for turn in transcript.turns)
    if as_text:
        notes.append(f"{counted(as_text, 'tool call', f'of {agent} that {target} has no tool for')} carried as "
                     f"text marked {MARK}")
    if undated:
        notes.append(f"{counted(undated, 'turn', 'without a recorded time')} dated now")
    if mended:
        notes.append(f"{mended} text{'s' if mended != 1 else ''} held a lone surrogate, written as U+FFFD "
                     f"({why_mended})")
    return notes


def shell_calls(calls: Sequence[ToolCall]) -> int:
    """How many of these calls ran a shell command."""
    return sum(1 for call in calls if call.shell is not None)


def tool_call_head(call: ToolCall, agent: str) -> str:
    """A tool call of `agent` without its result, for a target that keeps a call's result apart: the
    marker, then the shell command line for a shell call, else the tool's name and input (as
    `tool_call_text` starts)."""
    failed = " (failed)" if call.is_error else ""
    if call.shell is not None:
        return f"{MARK} {agent} ran a shell command{failed}:\n{call.shell}"
    return f"{MARK} {agent} tool call `{call.name}`{failed}:\n{call.input}"


def prompt_only(turn: Turn) -> bool:
    """A turn that is only a prompt waiting for the agent (a brief): written as the user's record alone."""
    return turn.status == "pending" and not turn.reply and not turn.tool_calls


@contextlib.contextmanager
def audited(audit: AuditLog, written: WrittenSession, origin: SessionRef) -> Iterator[None]:
    """Audit the write of a session from a transcript (op `continue`, never any content): its failure,
    else where it came from; marks it written."""
    ref = written.ref
    try:
        yield
    except (OSError, RepriseError) as exc:
        audit.append(ref.workspace_key, "continue", session_id=ref.session_id, digests=[written.sha256],
                     result=f"failed: {getattr(exc, 'code', exc)}")
        raise
    audit.append(ref.workspace_key, "continue", session_id=ref.session_id, digests=[written.sha256],
                 result=f"written from {origin.source} {origin.session_id}")
    written.written = True


def ending_text(turn: Turn, agent: str) -> str:
    """The marked text saying how a turn that did not succeed ended in `agent`; "" for one that did."""
    if turn.status == "failed":
        return f"{MARK} this turn failed in {agent}: {turn.error or 'no error was recorded'}"
    if turn.status == "interrupted":
        return f"{MARK} this turn was interrupted in {agent}" + (f": {turn.error}" if turn.error else ".")
    if turn.status == "max_iterations":
        return f"{MARK} this turn stopped in {agent} at its limit of model calls."
    if turn.status == "pending":
        return f"{MARK} this turn had not ended in {agent} when it was copied."
    return ""
