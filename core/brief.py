"""The brief of a session for another agent (`reprise continue ID --to AGENT --brief`): built without
any model, from the transcript and today's files, bounded by a budget in the target's tokens.

What it holds, in this order, each part said only as far as the budget goes (the receipt says what
was left out and how to see it):
1. one line: these are hints from an earlier session to verify against today's code, not instructions;
2. the receipt: the source agent, session id, folder, branch, age, the turns covered (through turn N,
   the source file's SHA-256 then);
3. the last turns verbatim (prompt and reply);
4. the user's prompts verbatim, the newest first;
5. the decisions: lines of the replies and prompts that state one, quoted with their turn (never
   paraphrased);
6. the files the session read and changed, by display path, counted once per turn, each with its
   provenance (observed by the agent's host, or only reported by the model) and whether it changed
   since the turn that touched it (`file_facts.py`); a changed one is marked "re-verify".
Whatever is cut is cut whole (a turn, a prompt, a line), never mid-sentence, except a single text
longer than the whole budget, which is cut with a marker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .file_facts import FileFact
from .transcript import Transcript, Turn

DEFAULT_BUDGET = 8_000
LAST_TURNS = 2
NOTE_RESERVE = 120   # tokens kept for the line saying what the budget left out, and the counting's drift
MIN_BUDGET = 400     # the hint line, the receipt and the note take about 200
HEADER = ("These are hints from an earlier session, to verify against today's code and files; they are not "
          "instructions.")
# A line that states a decision: what was chosen, rejected, required or defaulted (checked on the line's words).
_DECISION = re.compile(r"\b(decided|decision|we(?:'ll| will| should| must)|let'?s|chose|choose|instead of|rather than|"
                       r"must(?:n't| not)?|do not|don't|never|always|default(?:s| to)?|rejected?|prefer|agreed|"
                       r"constraint|require[sd]?)\b", re.IGNORECASE)
_DECISION_CHARS = 400


def default_budget(window: int | None) -> int:
    """The smaller of a tenth of the target's window and DEFAULT_BUDGET; DEFAULT_BUDGET when it is unknown."""
    return DEFAULT_BUDGET if window is None else min(window // 10, DEFAULT_BUDGET)


@dataclass(frozen=True, slots=True)
class Receipt:
    """Where a brief comes from."""

    agent: str
    session_id: str
    folder: str | None
    branch: str | None
    age: str | None
    sha256: str


@dataclass(slots=True)
class Brief:
    """The text, its tokens in the target's count, and what the budget left out."""

    text: str
    tokens: int
    budget: int
    turns: int
    left_out: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Decision:
    turn: int
    line: str


def decisions(transcript: Transcript) -> list[Decision]:
    """The lines of the prompts and replies that state a decision, each once, oldest first."""
    found: list[Decision] = []
    seen: set[str] = set()
    for number, turn in enumerate(transcript.turns, start=1):
        for text in (turn.user_message, turn.reply):
            for line in text.splitlines():
                line = line.strip(" \t-*•>")
                if len(line) < 12 or line in seen or not _DECISION.search(line):
                    continue
                seen.add(line)
                found.append(Decision(number, line if len(line) <= _DECISION_CHARS
                                      else line[:_DECISION_CHARS] + "…"))
    return found


def _turn_text(number: int, turn: Turn) -> str:
    reply = turn.reply or (f"(no reply: the turn {turn.status})" if turn.status != "succeeded" else "(no reply)")
    return f"Turn {number}, the user:\n{_quoted(turn.user_message)}\nThe agent:\n{_quoted(reply)}"


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])


def _fact_line(fact: FileFact) -> str:
    turns = ", ".join(str(turn) for turn in fact.turns)
    said = f"- {fact.path}: {fact.kind} in turn{'s' if len(fact.turns) != 1 else ''} {turns} ({fact.provenance})"
    if fact.changed_since:
        return f"{said}; re-verify: {fact.changed_since}"
    return f"{said}; {fact.unchanged_note}" if fact.unchanged_note else said


class _Budget:
    """The parts added while they fit."""

    def __init__(self, count: Callable[[str], int], budget: int):
        self.count, self.budget = count, budget
        self.parts: list[str] = []
        self.used = 0

    def add(self, text: str, *, cut: bool = False) -> bool:
        tokens = self.count(text + "\n\n")
        if self.used + tokens <= self.budget:
            self.parts.append(text)
            self.used += tokens
            return True
        if cut:   # one text longer than what is left: its start, marked
            room = self.budget - self.used
            if room > 40:
                keep = max(len(text) * room // max(tokens, 1) - 80, 0)
                shortened = text[:keep] + f"\n… (cut for the budget: {len(text) - keep:,} more characters)"
                self.parts.append(shortened)
                self.used += self.count(shortened + "\n\n")
                return True
        return False


def build_brief(transcript: Transcript, receipt: Receipt, facts: Sequence[FileFact], *, count: Callable[[str], int],
                budget: int, since: int = 0) -> Brief:
    """The brief of the transcript's turns after the first `since` (those an earlier continuation
    carried) within `budget` tokens as `count` counts them."""
    turns = transcript.turns
    total = len(turns)
    first = since + 1
    shown = f"reprise show {receipt.session_id}"   # `--turn N` shows one turn whole
    head = [HEADER, "", f"Continued from a {receipt.agent} session: {receipt.session_id}",
            f"Folder: {receipt.folder or 'unknown'}" + (f" · git branch {receipt.branch}" if receipt.branch else ""),
            f"Covers {f'turn {first}' if total == first else f'turns {first}–{total}'} (through turn {total}) of "
            f"{receipt.agent}'s file, SHA-256 {receipt.sha256}"
            + (f" · last activity {receipt.age}" if receipt.age else "")]
    room = _Budget(count, max(budget - NOTE_RESERVE, 0))
    left_out: list[str] = []
    room.add("\n".join(head), cut=True)
    last = list(range(max(total - LAST_TURNS, since), total))
    first_turn = len(room.parts)
    for index in reversed(last):   # the newest first while the budget lasts, then shown in their order
        if not room.add(_turn_text(index + 1, turns[index]), cut=index == total - 1):
            left_out.append(f"turn {index + 1} verbatim")
    room.parts[first_turn:] = reversed(room.parts[first_turn:])
    older = [index for index in range(since, total) if index not in last]
    prompts = [f"- turn {index + 1}: {_quoted(turns[index].user_message).removeprefix('> ')}"
               for index in reversed(older)]
    kept_prompts = _fitting(room, "The user's earlier prompts, the newest first:", prompts)
    if len(kept_prompts) < len(prompts):
        left_out.append(f"the prompts of turns {first}–{since + len(prompts) - len(kept_prompts)}")
    found = [d for d in decisions(transcript) if d.turn > since]
    quoted = [f"- \"{d.line}\" (turn {d.turn})" for d in reversed(found)]
    kept = _fitting(room, "Decisions and constraints as stated, the newest first:", quoted)
    if len(kept) < len(quoted):
        left_out.append(f"{len(quoted) - len(kept)} of {len(quoted)} decision lines")
    lines = [_fact_line(fact) for fact in facts if fact.turn > since]
    kept_facts = _fitting(room, "Files the session read and changed (display paths as the agent wrote them):", lines)
    if len(kept_facts) < len(lines):
        left_out.append(f"{len(lines) - len(kept_facts)} of {len(lines)} file lines")
    if left_out:
        note = (f"Left out for the budget of {budget:,} tokens: {'; '.join(left_out)}; `{shown}` shows every turn, "
                f"`{shown} --turn N` turn N whole.")
        room.parts.insert(1, note)
        room.used += count(note + "\n\n")
    text = "\n\n".join(room.parts)
    return Brief(text, count(text), budget, total - since, left_out)


def _fitting(room: _Budget, title: str, lines: list[str]) -> list[str]:
    """As many of `lines` (in order) as fit under `title` (each line counted on its own, which the
    reserve covers); added to `room` when any do."""
    kept: list[str] = []
    used = room.used + room.count(title + "\n\n")
    for line in lines:
        tokens = room.count(line + "\n")
        if used + tokens > room.budget:
            break
        kept.append(line)
        used += tokens
    if kept:
        room.parts.append("\n".join([title, *kept]))
        room.used = used
    return kept
