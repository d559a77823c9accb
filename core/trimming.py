"""What a trim asks for and what it gives back, the same for every source that trims: the
options (keep the newest history, cap long replies, fold or drop turns, fit a target), the plan a
preview shows and an apply writes, and the result. Planning is each source's own
(Fractal's: core/sources/fractal/trim.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ChangedOnDiskError, UsageError
from .paths import SessionRef
from .session_files import digest
from .transcript import Transcript, Turn

DEFAULT_SPARE = 3


def cap_marker(chars_cut: int, records_digest: str) -> str:
    return f"\n[reprise: {chars_cut:,} characters cut; archive {records_digest}]"


@dataclass(frozen=True, slots=True)
class TrimOptions:
    keep_history: int | None = None
    cap_replies: int | None = None
    spare: int = DEFAULT_SPARE
    fold: int | None = None
    drop: tuple[str, ...] = ()
    fit: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "drop", tuple(str(item).strip() for item in self.drop if str(item).strip()))
        if self.keep_history is None and self.cap_replies is None and self.fold is None and not self.drop \
                and self.fit is None:
            raise UsageError("Nothing to trim.", hint="--keep-history, --cap-replies, --fold, --drop or --fit")
        for name, low in (("keep_history", 0), ("cap_replies", 1), ("spare", 0), ("fold", 0), ("fit", 1)):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
                raise UsageError(f"--{name.replace('_', '-')} must be a whole number of at least {low}.")
        if self.fit is not None and (self.cap_replies is not None or self.fold is not None):
            raise UsageError("--fit chooses the cap and the fold itself; drop --cap-replies and --fold.")

    @classmethod
    def parse_drop(cls, text: str) -> tuple[str, ...]:
        """`--drop 3,7,turn-ab12...` as a tuple of turn numbers and ids."""
        return tuple(item.strip() for item in text.split(",") if item.strip())

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.keep_history is not None:
            data["keep_history"] = self.keep_history
        if self.cap_replies is not None:
            data["cap_replies"] = self.cap_replies
            data["spare"] = self.spare
        if self.fold is not None:
            data["fold"] = self.fold
        if self.drop:
            data["drop"] = list(self.drop)
        if self.fit is not None:
            data["fit"] = self.fit
            data["spare"] = self.spare
        return data


@dataclass(frozen=True, slots=True)
class Original:
    """The file a trim is planned from: its size and SHA-256, and its bytes when they are held
    (None when it is planned from a loaded state and the file stays on disk: applying copies the
    file itself into the archive, checked by this digest)."""

    size: int
    sha256: str
    data: bytes | None = None

    @classmethod
    def of(cls, data: bytes) -> Original:
        return cls(len(data), digest(data), data)


@dataclass(frozen=True, slots=True)
class TurnChange:
    number: int
    turn_id: str
    change: str
    chars_cut: int = 0


@dataclass(frozen=True, slots=True)
class FitOutcome:
    target: int
    chosen: str | None
    fits: bool
    tried: tuple[tuple[str, int], ...]


@dataclass(slots=True)
class TrimPlan:
    """Everything a preview shows and an apply writes; `data` is `original` when nothing changes
    (None then, when the original's bytes are not held). `state` is the trimmed state (once
    `trim_session` has applied the plan, without its history traces: they are in `data`)."""

    session_id: str
    options: TrimOptions
    source: Original
    data: bytes | None
    state: Any   # the trimmed session in its source's own model
    records: bytes | None
    records_digest: str | None
    anchors: list[str]
    turns: list[TurnChange]
    history_removed: list[str]
    meter_before: int | None = None
    meter_after: int | None = None
    fit: FitOutcome | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.records is not None

    @property
    def original(self) -> bytes | None:
        """The original file's bytes, when the plan holds them (see `Original`)."""
        return self.source.data

    @property
    def size_before(self) -> int:
        return self.source.size

    @property
    def size_after(self) -> int:
        return len(self.data) if self.data is not None else self.source.size

    @property
    def original_digest(self) -> str:
        return self.source.sha256

    @property
    def result_digest(self) -> str:
        return digest(self.data) if self.data is not None else self.source.sha256

    def counts(self) -> dict[str, int]:
        count = {"capped": 0, "folded": 0, "dropped": 0}
        for change in self.turns:
            count[change.change] += 1
        count["history_removed"] = len(self.history_removed)
        return count


@dataclass(slots=True)
class TrimResult:
    plan: TrimPlan
    source: SessionRef
    ref: SessionRef
    applied: bool
    dry_run: bool
    forked: bool
    archived: list[str] = field(default_factory=list)


# --- choosing turns to remove ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TurnSize:
    """One turn as it is offered for removal: its number (from 1, as `drop` takes it), the start of
    its prompt, the UTF-8 size of its text (prompt, reply, tool calls) and that text's tokens."""

    number: int
    turn_id: str
    prompt: str
    size: int
    tokens: int


def turn_text(turn: Turn) -> str:
    """What a turn puts in the context, as one text: the prompt, the reply, the tool calls and results."""
    parts = [turn.user_message, turn.reply, turn.error or ""]
    for call in turn.tool_calls:
        parts += [call.input, call.result or ""]
    return "\n".join(part for part in parts if part)


def turn_sizes(transcript: Transcript, count: Callable[[str], int]) -> list[TurnSize]:
    sizes = []
    for number, turn in enumerate(transcript.turns, start=1):
        text = turn_text(turn)
        sizes.append(TurnSize(number, turn.turn_id, turn.user_message, len(text.encode("utf-8", "surrogatepass")),
                              count(text) if text else 0))
    return sizes


def parse_turn_ranges(text: str, turns: int) -> list[int]:
    """`5-23, 30` (commas or spaces between items) as the sorted turn numbers it names, each checked
    against the session's `turns`; raises UsageError on anything else."""
    numbers: set[int] = set()
    for item in text.replace(",", " ").split():
        first, dash, last = item.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise UsageError(f"{item[:20]!r} is not a turn number or a range like 5-23.")
        low, high = int(first), int(last) if dash else int(first)
        if low > high:
            raise UsageError(f"The range {item[:20]} runs backwards; write it as {high}-{low}.")
        if low < 1 or high > turns:
            raise UsageError(f"There is no turn {high if high > turns else low}; the session has {turns} turns.")
        numbers.update(range(low, high + 1))
    return sorted(numbers)


def turn_ranges(numbers: Iterable[int]) -> str:
    """Turn numbers written back as ranges: [5, 6, 7, 30] -> `5-7, 30`."""
    ordered = sorted(set(numbers))
    spans: list[str] = []
    start = 0
    for index in range(1, len(ordered) + 1):
        if index == len(ordered) or ordered[index] != ordered[index - 1] + 1:
            low, high = ordered[start], ordered[index - 1]
            spans.append(str(low) if low == high else f"{low}-{high}")
            start = index
    return ", ".join(spans)


# --- undoing trims -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RestoreStep:
    """One archive entry put back: `exact` (the original bytes) or `reinserted` (records at anchors)."""

    digest: str
    op: str
    mode: str
    summary_inserted: int = 0
    summary_replaced: int = 0
    history_inserted: int = 0
    digest_turn_removed: bool = False


@dataclass(slots=True)
class RestoreResult:
    ref: SessionRef
    before: bytes
    after: bytes
    steps: list[RestoreStep]
    applied: bool
    dry_run: bool
    archived: str | None = None
    notes: list[str] = field(default_factory=list)
    beyond_fractal: HistoryBeyondFractal | None = None

    @property
    def size_before(self) -> int:
        return len(self.before)

    @property
    def size_after(self) -> int:
        return len(self.after)

    def counts(self) -> dict[str, int]:
        return {"entries": len(self.steps),
                "summary_inserted": sum(step.summary_inserted for step in self.steps),
                "summary_replaced": sum(step.summary_replaced for step in self.steps),
                "history_inserted": sum(step.history_inserted for step in self.steps)}


@dataclass(slots=True)
class HistoryBeyondFractal:
    """A restored file with more history entries than Fractal keeps: its next save drops the oldest,
    which stay in the archive entry `kept_in` (a copy of the restored file, written before it)."""

    entries: int
    dropped: list[str]
    keeps: int   # how many history entries the agent keeps
    kept_in: Path | None = None
    archive_digest: str | None = None

    def note(self) -> str:
        span = self.dropped[0] if len(self.dropped) == 1 else f"{self.dropped[0]} to {self.dropped[-1]}"
        said = (f"the session now holds {self.entries} history entries; Fractal keeps the newest "
                f"{self.keeps} on its next save and drops the {len(self.dropped)} oldest ({span})")
        if self.kept_in is None:
            return said.replace("now holds", "would hold") + "; applying copies the restored file to the archive first"
        return f"{said}; they are kept in the archive at {self.kept_in} (entry {(self.archive_digest or '')[:12]})"


# --- which entries ------------------------------------------------------------------------------------


def fork_to_trash(ref: SessionRef, data: bytes, step: RestoreStep, notes: list[str], changed: str | None, *,
                  dry_run: bool, force: bool, path: Path | str) -> RestoreResult | None:
    """What every source decides before undoing a fork by moving it to the trash: a preview's result
    (`dry_run`), a refusal for a fork `changed` since Reprise wrote it (why, e.g. its agent added
    turns) unless `force`, or None to go ahead (the change then noted)."""
    if changed is not None:
        if not force:
            if dry_run:
                notes.append(f"{changed}; undoing needs --force")
                return RestoreResult(ref, data, b"", [step], False, True, None, notes)
            raise ChangedOnDiskError(f"{changed[0].upper()}{changed[1:]}; nothing was moved.",
                                     hint="--force moves it to the trash anyway (its new turns go with it)", path=path)
        notes.append(changed)
    return RestoreResult(ref, data, b"", [step], False, True, None, notes) if dry_run else None
