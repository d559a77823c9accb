"""What the fork trims of agents whose sessions are turn files (Claude Code, Codex) share: which turns
a trim drops (turn numbers as shown, ranges, turn ids; the newest N kept), the steps one plan takes
(the turns dropped, the cap on replies and tool results, the newest turns spared from it), the
`--fit` ladder that picks the first plan whose estimated context is under a target, and the plan
of a trim that changes nothing; `chosen_fork` takes a trim's options through all of them. Each
agent's fork module builds the bytes of a plan's steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from ..errors import UsageError
from ..session_files import digest
from ..trimming import FitOutcome, Original, TrimOptions, TrimPlan, TurnChange, cap_marker

FIT_CAPS = (4000, 2000, 1000, 500)
FIT_KEEPS = (20, 10, 5, 3, 1)


class NamedTurn(Protocol):
    @property
    def turn_id(self) -> str: ...


class NumberedTurn(NamedTurn, Protocol):
    @property
    def number(self) -> int: ...   # as shown, from 1


class Candidate(Protocol):
    """A built plan as the ladder weighs it."""

    @property
    def removed_tokens(self) -> int: ...   # the tokens of what it leaves out or cuts

    @property
    def useful(self) -> bool: ...          # it changes something and keeps a turn

    @property
    def changes(self) -> list[TurnChange]: ...   # what it does to each turn it changes


Built = TypeVar("Built", bound=Candidate)


class ForkState(Protocol):
    removed_tokens: int     # the tokens of what the fork leaves out or cuts
    kept_turns: list[str]   # the ids of the turns it keeps


State = TypeVar("State", bound=ForkState)


@dataclass(slots=True)
class BuiltFork(Generic[State]):
    """The bytes of one plan's fork, what it holds (the agent's own state) and its turns' changes."""

    data: bytes
    state: State
    changes: list[TurnChange]

    @property
    def removed_tokens(self) -> int:
        return self.state.removed_tokens

    @property
    def useful(self) -> bool:
        """It changes something and keeps a turn."""
        return bool(self.changes and self.state.kept_turns)


@dataclass(frozen=True, slots=True)
class Steps:
    """One plan: the turns dropped (indexes), the cap on replies and tool results, the newest spared."""

    drop: frozenset[int]
    cap: int | None
    spare: int

    def label(self, keep: int | None = None) -> str:
        parts = []
        if self.cap is not None:
            parts.append(f"cap replies and tool results at {self.cap:,} characters")
        if keep is not None:
            parts.append(f"keep the newest {keep} turn{'s' if keep != 1 else ''}")
        return " and ".join(parts) or "no change"


def resolve_drop(turns: Sequence[NamedTurn], items: Iterable[str]) -> set[int]:
    """The indexes of the turns `--drop` names: numbers as shown (from 1), ranges such as 2-4, or turn ids."""
    by_id = {turn.turn_id: index for index, turn in enumerate(turns)}
    dropped: set[int] = set()
    for item in items:
        if item in by_id:
            dropped.add(by_id[item])
            continue
        low, dash, high = item.partition("-")
        if low.isdigit() and (not dash or high.isdigit()):
            first, last = int(low), int(high) if dash else int(low)
            if first > last or not 1 <= first or last > len(turns):
                raise UsageError(f"There is no turn {item}; the session has {len(turns)} turns.")
            dropped.update(range(first - 1, last))
            continue
        raise UsageError(f"No turn {item[:60]!r} in this session.", hint="give turn numbers as shown (from 1), "
                         "ranges such as 2-4, or turn ids")
    return dropped


def keep_newest(count: int, dropped: set[int], total: int) -> set[int]:
    """`dropped` and every turn older than the newest `count` of the others."""
    remaining = [index for index in range(total) if index not in dropped]
    return dropped | set(remaining[:max(len(remaining) - count, 0)])


def turn_changes(turns: Sequence[NumberedTurn], drop: frozenset[int], cut_by_turn: dict[int, int]
                 ) -> tuple[list[TurnChange], list[str]]:
    """What a plan does to each turn it changes (dropped; capped, by so many characters: `cut_by_turn`),
    and the ids of the turns it keeps."""
    changes = []
    for index, turn in enumerate(turns):
        if index in drop:
            changes.append(TurnChange(turn.number, turn.turn_id, "dropped"))
        elif index in cut_by_turn:
            changes.append(TurnChange(turn.number, turn.turn_id, "capped", cut_by_turn[index]))
    return changes, [turn.turn_id for index, turn in enumerate(turns) if index not in drop]


def choose_fit(base: Steps, total: int, target: int, before: int,
               build: Callable[[Steps], Built]) -> tuple[Built | None, FitOutcome]:
    """The first useful rung (caps, then the newest turns kept with the smallest cap) whose estimated
    context (`before` minus what `build`'s plan removes) is at most `target`, after any drop and
    keep-history."""
    if before <= target and not base.drop:
        return None, FitOutcome(target, f"already fits ({before:,} tokens); nothing changed", True, ())
    tried: list[tuple[str, int]] = []
    rungs: list[tuple[str, Steps]] = []
    if base.drop:
        rungs.append(("drop and keep-history alone", Steps(base.drop, None, base.spare)))
    rungs += [(Steps(base.drop, cap, base.spare).label(), Steps(base.drop, cap, base.spare)) for cap in FIT_CAPS]
    for keep in FIT_KEEPS:
        steps = Steps(frozenset(keep_newest(keep, set(base.drop), total)), FIT_CAPS[-1], base.spare)
        rungs.append((steps.label(keep), steps))
    for label, steps in rungs:
        built = build(steps)
        estimate = max(before - built.removed_tokens, 0)
        tried.append((label, estimate))
        if estimate <= target and built.useful:
            return built, FitOutcome(target, label, True, tuple(tried))
    return None, FitOutcome(target, None, False, tuple(tried))


def unchanged(session_id: str, options: TrimOptions, original: Original, before: int | None,
              fit: FitOutcome | None, notes: list[str]) -> TrimPlan:
    """The plan of a trim that changes nothing."""
    return TrimPlan(session_id, options, original, original.data, None, None, None, [], [], [], before, before, fit,
                    notes)


def chosen_fork(session_id: str, options: TrimOptions, original: Original, turns: Sequence[NamedTurn],
                context_before: int | None, notes: list[str], build: Callable[[Steps], Built]
                ) -> tuple[Built, set[int], FitOutcome | None] | TrimPlan:
    """The fork these options make of a session of these turns (`build` makes the bytes of one plan's
    steps): the turns `--drop` and `--keep-history` leave out, then with `--fit` the ladder's first plan
    that fits: (the built fork, the turns it drops, the ladder's outcome). A trim that changes nothing
    gives its plan (`unchanged`, with `notes` and a note why); UsageError for one that would drop every turn."""
    dropped = resolve_drop(turns, options.drop)
    if options.keep_history is not None:
        dropped = keep_newest(options.keep_history, dropped, len(turns))
    base = Steps(frozenset(dropped), options.cap_replies, options.spare)
    if options.fit is not None:
        if context_before is None:
            raise UsageError("--fit needs the session's measured context, and this session has none yet.")
        chosen, fit = choose_fit(base, len(turns), options.fit, context_before, build)
        if chosen is None:
            note = fit.chosen if fit.fits and fit.chosen else \
                f"no plan on the ladder brings the context to {options.fit:,} tokens or less; nothing changed"
            return unchanged(session_id, options, original, context_before, fit, notes + [note])
        return chosen, dropped, fit
    if turns and len(dropped) == len(turns):
        raise UsageError("That would drop every turn; a fork keeps at least one.")
    built = build(base)
    if not built.changes:
        return unchanged(session_id, options, original, context_before, None,
                         notes + ["nothing to trim with these options"])
    return built, dropped, None


class TextCapper:
    """Cuts texts past `cap` characters, each cut ending with a marker naming the original's SHA-256,
    counting the characters cut and their tokens (`count`); an agent's fork says which texts it cuts."""

    def __init__(self, cap: int, original_sha256: str, count: Callable[[str], int]):
        self.cap, self.sha, self.count = cap, original_sha256, count
        self.cut = 0
        self.tokens = 0

    def text(self, text: str) -> str:
        if len(text) <= self.cap:
            return text
        self.cut += len(text) - self.cap
        self.tokens += self.count(text[self.cap:])
        return text[:self.cap] + cap_marker(len(text) - self.cap, self.sha)


def refuse_options(options: TrimOptions, agent: str) -> None:
    """The options a fork of an agent's session cannot take: `--fold` (it has no summary of Fractal's to
    fold into) and `--keep-history 0`."""
    if options.fold is not None:
        raise UsageError(f"--fold condenses Fractal's summary; a {agent} session has none to fold into.",
                         hint="--keep-history N keeps the newest N turns; --drop removes turns")
    if options.keep_history == 0:
        raise UsageError(f"--keep-history must keep at least one turn of a {agent} session.")


def cut_line_notes(size: int, end: int) -> list[str]:
    """The note of an original whose last line is incomplete (its complete lines end at `end` of `size`)."""
    if end < size:
        return [f"the original's last line ({size - end:,} bytes) is incomplete (being written?); the fork leaves "
                "it out"]
    return []


def compaction_notes(numbers: Sequence[int], agent: str) -> list[str]:
    """The note of dropped turns (their numbers) that came before a compaction the fork keeps."""
    if numbers:
        return [f"turn(s) {', '.join(map(str, numbers))} came before a compaction: {agent}'s summary of it, which "
                "the fork keeps, may still describe them"]
    return []


def fork_plan(session_id: str, options: TrimOptions, original: Original, built: BuiltFork[State],
              context_before: int | None, fit: FitOutcome | None, notes: list[str]) -> TrimPlan:
    """The plan of a fork built: its context after is the original's measured one minus what it removes."""
    after = max(context_before - built.state.removed_tokens, 0) if context_before is not None else None
    return TrimPlan(session_id, options, original, built.data, built.state, built.data, digest(built.data), [],
                    built.changes, [], context_before, after, fit, notes)
