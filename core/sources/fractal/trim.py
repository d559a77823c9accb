"""Trimming a session: pure planning (file bytes + options -> the new bytes, the archived
records and the preview figures), then one apply step that archives before it writes.

Planning has no clock and no randomness, so the same file and options always give the same
bytes. The records a trim removes or replaces are serialised first; their SHA-256 names the
archive entry and appears in the cap markers and in the digest turn, so every trimmed file
points at the exact bytes that restore it. Operations, in the order they apply:
drop -> fold -> cap -> keep-history (`fit` picks a cap/fold rung by the meter).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...archive import Archive
from ...audit import AuditLog, iso_time
from ...errors import ChangedOnDiskError, ProblemFileError, RepriseError, UsageError
from ...meter import spec_for
from ...paths import SessionRef
from ...session_meta import SessionMeta
from ...trimming import (
    DEFAULT_SPARE,
    FitOutcome,
    Original,
    TrimOptions,
    TrimPlan,
    TrimResult,
    TurnChange,
    cap_marker,
)
from .codec import decode, encode, join_ascii, json_view
from .liveness import check_not_running, running_turn
from .meter import Meter, as_instructions
from .models import AgentTurn, SessionState, SummaryTurn, UserTurn
from .store import Loaded, Store, digest
from .summary import EMPTY_SUMMARY, SUMMARY_HEADER, render_summary, turn_block

RECORDS_FORMAT = "reprise.trim-records/1"
FIT_CAPS = (4000, 2000, 1000, 500)
FIT_FOLDS = (20, 10, 5, 3, 1)
DIGEST_PREFIX = "[reprise] Condensed turn"
# Stands in for the records digest while estimating; hex like a real one, so it counts alike.
_PLACEHOLDER = hashlib.sha256(b"reprise: records digest placeholder").hexdigest()
_DIGEST_MESSAGE = re.compile(r"\A\[reprise\] Condensed turns? \d+(?:-\d+)? \(archive ([0-9a-f]{64})\)")
_MARKER = re.compile(r"\n\[reprise: [\d,]+ characters cut; archive [0-9a-f]{64}\]\Z")
_LINE_NUMBER = re.compile(r"\A\d+\. ")


# --- options -------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Steps:
    """Resolved operations: turn indices to drop, then fold/cap/keep-history figures."""

    drop: frozenset[int] = frozenset()
    drop_history: frozenset[int] = frozenset()
    fold: int | None = None
    cap: int | None = None
    spare: int = DEFAULT_SPARE
    keep_history: int | None = None

    def label(self) -> str:
        parts = []
        if self.cap is not None:
            parts.append(f"cap replies at {self.cap:,} characters")
        if self.fold is not None:
            parts.append(f"fold keeping {self.fold} turn{'s' if self.fold != 1 else ''}")
        return " and ".join(parts) or "no change"

    def as_dict(self) -> dict[str, Any]:
        return {"drop": sorted(self.drop), "drop_history": sorted(self.drop_history), "fold": self.fold,
                "cap": self.cap, "spare": self.spare, "keep_history": self.keep_history}


# --- meter access ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TrimMeter:
    """How planning measures: `total` is the meter total of a state (no message); `count`
    counts one text (cached), used to estimate `--fit`'s ladder rung by rung."""

    total: Callable[[SessionState], int]
    count: Callable[[str], int]

    @classmethod
    def from_meter(cls, meter: Meter, workspace: Path | None, *, model: str | None = None) -> TrimMeter:
        name, _ = meter.resolve_model(workspace, model)
        encoding = spec_for(name, meter.settings.models).encoding
        return cls(total=lambda state: meter.prepare(state, workspace, model=model).base_total,
                   count=lambda text: meter.count(text, encoding))


# --- the plan ---------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Selection:
    """Which original turns each step touches (indices into the summary and the history)."""

    dropped: list[int]
    folded: list[int]
    kept: list[int]
    capped: dict[int, int]
    history_removed: list[int]

    @property
    def empty(self) -> bool:
        return not (self.dropped or self.folded or self.capped or self.history_removed)


@dataclass(slots=True)
class _Realized:
    selection: _Selection
    records: bytes
    digest: str
    state: SessionState
    total: int | None   # None when realized without a meter

    def counted(self) -> int:
        """The meter total, for a state realized with a meter (as `--fit` does)."""
        if self.total is None:
            raise ValueError("this trim was realized without a meter, so it has no total")
        return self.total


# --- planning ----------------------------------------------------------------------------------------

def plan_trim(source: bytes | SessionState | Original, options: TrimOptions, meter: TrimMeter | None = None, *,
              fork_id: str | None = None, state: SessionState | None = None) -> TrimPlan:
    """The trim of this file (or state) with these options; pure and deterministic.

    With `fork_id` the new bytes carry that session id (the original's id everywhere else).
    `state`, with file bytes or an `Original`: the state the store decoded from exactly that
    file, so that a large file is not decoded (and held) twice; with an `Original` without its
    bytes, the plan does not hold them at all.
    """
    if isinstance(source, SessionState):
        state, original = source, Original.of(encode(source))
    elif isinstance(source, Original):
        if state is None:
            raise ValueError("planning from a file's size and digest needs the state decoded from it")
        original = source
    elif state is not None:
        original = Original.of(source)
    else:
        decoded = decode(source, path="(trim input)", expected_id=None)
        if decoded.state is None:
            raise ProblemFileError(decoded.failure())
        state, original = decoded.state, Original.of(source)
        del decoded
    base = _resolve(state, options)
    before = meter.total(state) if meter is not None else None
    fit = None
    realized = None
    if options.fit is not None:
        if meter is None:
            raise UsageError("--fit needs the meter to count tokens.")
        assert before is not None   # counted above, with the meter
        realized, fit = _choose_fit(state, original, base, options.fit, meter, before)
        if realized is None:
            if fit.fits:
                assert fit.chosen is not None   # a fit without a trim says why: the file already fits
                note = fit.chosen
            else:
                note = f"no plan on the ladder brings the total to {options.fit:,} tokens or less; nothing changed"
            return _unchanged(state, options, original, before, fit, note)
    else:
        selection = _select(state, base)
        if selection.empty:
            return _unchanged(state, options, original, before, fit, "nothing to trim with these options")
        realized = _realize(state, original, base, selection, meter)
    if fork_id is not None:
        realized.state = realized.state.model_copy(update={"session_id": fork_id})
    selection = realized.selection
    session_id, anchors, changes = state.session_id, _anchors(state, selection), _turn_changes(state, selection)
    history_removed = [state.history[i].turn_id for i in selection.history_removed]
    # The original state is not needed to encode the new one: when this was its only holder
    # (trim_session), what the trim removed is freed before the new bytes are built.
    del state, source
    return TrimPlan(session_id, options, original, encode(realized.state), realized.state, realized.records,
                    realized.digest, anchors, changes, history_removed, before, realized.total, fit, [])


def _unchanged(state: SessionState, options: TrimOptions, original: Original, before: int | None,
               fit: FitOutcome | None, note: str) -> TrimPlan:
    return TrimPlan(state.session_id, options, original, original.data, state, None, None, [], [], [], before,
                    before, fit, [note])


def _realize(state: SessionState, original: Original, steps: _Steps, selection: _Selection,
             meter: TrimMeter | None) -> _Realized:
    """The records (and so the digest) first, then the new state that names them, and its meter total."""
    records = _records(state, original, steps, selection)
    records_digest = digest(records)
    new_state = _build(state, selection, records_digest, state.session_id)
    return _Realized(selection, records, records_digest, new_state,
                     meter.total(new_state) if meter is not None else None)


def _resolve(state: SessionState, options: TrimOptions) -> _Steps:
    """Options to indices: `--drop` items are turn numbers as rendered (from 1) or turn ids."""
    turns = state.turns
    by_id = {turn.turn_id: index for index, turn in enumerate(turns)}
    history_by_id = {entry.turn_id: index for index, entry in enumerate(state.history)}
    drop, drop_history = set(), set()
    for item in options.drop:
        if item.isdigit():
            number = int(item)
            if not 1 <= number <= len(turns):
                raise UsageError(f"There is no turn {number}; the session has {len(turns)} turns.")
            index = number - 1
        elif item in by_id:
            index = by_id[item]
        elif item in history_by_id:
            index = history_by_id[item]
            if index == len(state.history) - 1 and state.history[index].status == "pending":
                raise UsageError(f"History turn {item[:60]} is the newest and still pending; it is never dropped.")
            drop_history.add(index)
            continue
        else:
            raise UsageError(f"No turn {item[:60]!r} in session {state.session_id}.",
                             hint="give turn numbers as shown (from 1) or turn ids")
        if _pending_newest(state, index):
            raise UsageError(f"Turn {index + 1} is the newest turn and still pending; it is never dropped.")
        drop.add(index)
        if turns[index].turn_id in history_by_id:
            drop_history.add(history_by_id[turns[index].turn_id])
    return _Steps(frozenset(drop), frozenset(drop_history), options.fold, options.cap_replies, options.spare,
                  options.keep_history)


def _pending_newest(state: SessionState, index: int) -> bool:
    return index == len(state.turns) - 1 and state.turns[index].agent is None


def is_digest_turn(turn: SummaryTurn) -> bool:
    """A turn Reprise's fold wrote: its id is `turn-` + the first 32 hex of the digest its message names."""
    match = _DIGEST_MESSAGE.match(turn.user.message)
    return match is not None and turn.turn_id == f"turn-{match.group(1)[:32]}"


def _select(state: SessionState, steps: _Steps) -> _Selection:
    turns = state.turns
    remaining = [index for index in range(len(turns)) if index not in steps.drop]
    folded: list[int] = []
    if steps.fold is not None:
        candidates = remaining[:max(len(remaining) - steps.fold, 0)]
        if candidates and _pending_newest(state, candidates[-1]):
            candidates.pop()
        if any(not is_digest_turn(turns[index]) for index in candidates):
            folded = candidates
    folded_set = set(folded)
    kept = [index for index in remaining if index not in folded_set]
    capped: dict[int, int] = {}
    if steps.cap is not None:
        capable = kept[:max(len(kept) - steps.spare, 0)]
        for index in capable:
            agent = turns[index].agent
            if agent is None or is_digest_turn(turns[index]):
                continue
            body = _MARKER.sub("", agent.response)
            if len(body) > steps.cap:
                capped[index] = steps.cap
    history = state.history
    removed = set(steps.drop_history)
    if steps.keep_history is not None:
        surviving = [index for index in range(len(history)) if index not in removed]
        cut = surviving[:max(len(surviving) - steps.keep_history, 0)]
        if cut and cut[-1] == len(history) - 1 and history[-1].status == "pending":
            cut.pop()
        removed.update(cut)
    return _Selection(sorted(steps.drop), folded, kept, capped, sorted(removed))


def _records(state: SessionState, original: Original, steps: _Steps, selection: _Selection) -> bytes:
    """The archived records: every summary and history turn the trim removes or replaces, with
    its anchor (the turn id it followed, null at the start) and the original orders."""
    turns = state.turns
    # JSON records: each holds its turn as a model, then as that model's JSON view (`json_view`).
    summary_records: list[dict[str, Any]] = []
    changes = {index: "removed" for index in (*selection.dropped, *selection.folded)}
    changes.update({index: "capped" for index in selection.capped})
    for index in sorted(changes):
        summary_records.append({"index": index, "anchor": turns[index - 1].turn_id if index else None,
                                "change": changes[index], "turn": turns[index]})
    history = state.history
    history_records: list[dict[str, Any]] = [{"index": index, "anchor": history[index - 1].turn_id if index else None,
                        "turn": history[index]} for index in selection.history_removed]
    payload = {
        "format": RECORDS_FORMAT,
        "session_id": state.session_id,
        "original_sha256": original.sha256,
        "steps": steps.as_dict(),
        "digest_turn": bool(selection.folded),
        "summary_order": [turn.turn_id for turn in turns],
        "history_order": [entry.turn_id for entry in history],
        "summary": summary_records,
        "history": history_records,
    }
    for record in (*summary_records, *history_records):
        record["turn"] = json_view(record["turn"])
    try:
        # The turns' values referenced, not copied, and encoded as a stream; the same text as
        # their JSON dump unless a value is a non-finite float, which pydantic's JSON dump writes
        # as null.
        return join_ascii(json.JSONEncoder(separators=(",", ":"), allow_nan=False).iterencode(payload), end="\n")
    except (ValueError, RecursionError):
        for record, index in zip(summary_records, sorted(changes), strict=True):
            record["turn"] = turns[index].model_dump(mode="json")
        for record, index in zip(history_records, selection.history_removed, strict=True):
            record["turn"] = history[index].model_dump(mode="json")
        return (json.dumps(payload, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")


def _anchors(state: SessionState, selection: _Selection) -> list[str]:
    """The turn ids after which archived records go back (the index line's `anchors`)."""
    anchors: list[str] = []
    touched = sorted({*selection.dropped, *selection.folded, *selection.capped})
    for index in touched:
        if index and state.turns[index - 1].turn_id not in anchors:
            anchors.append(state.turns[index - 1].turn_id)
    for index in selection.history_removed:
        if index and state.history[index - 1].turn_id not in anchors:
            anchors.append(state.history[index - 1].turn_id)
    return anchors


def _turn_changes(state: SessionState, selection: _Selection) -> list[TurnChange]:
    changes = []
    for index in range(len(state.turns)):
        turn_id = state.turns[index].turn_id
        if index in selection.dropped:
            changes.append(TurnChange(index + 1, turn_id, "dropped"))
        elif index in selection.folded:
            changes.append(TurnChange(index + 1, turn_id, "folded"))
        elif index in selection.capped:
            agent = state.turns[index].agent
            assert agent is not None   # only turns with a reply are capped (`_select`)
            body = _MARKER.sub("", agent.response)
            changes.append(TurnChange(index + 1, turn_id, "capped", len(body) - selection.capped[index]))
    return changes


# --- building the new state ----------------------------------------------------------------------------

def _build(state: SessionState, selection: _Selection, records_digest: str, session_id: str) -> SessionState:
    turns = state.turns
    new_turns = [digest_turn(turns, selection.folded, records_digest)] if selection.folded else []
    for index in selection.kept:
        turn = turns[index]
        if index in selection.capped:
            turn = capped_turn(turn, selection.capped[index], records_digest)
        new_turns.append(turn)
    removed = set(selection.history_removed)
    history = [entry for index, entry in enumerate(state.history) if index not in removed]
    summary = state.summary.model_copy(update={"turns": new_turns})
    return state.model_copy(update={"session_id": session_id, "summary": summary, "history": history})


def capped_turn(turn: SummaryTurn, cap: int, records_digest: str) -> SummaryTurn:
    """The turn with its response cut to `cap` characters plus the marker (a previous marker is replaced)."""
    agent = turn.agent
    if agent is None:
        raise ValueError(f"turn {turn.turn_id} has no reply to cap")
    body = _MARKER.sub("", agent.response)
    response = body[:cap] + cap_marker(len(body) - cap, records_digest)
    return turn.model_copy(update={"agent": agent.model_copy(update={"response": response})})


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _digest_span(turn: SummaryTurn) -> int:
    """How many rendered turns an earlier digest turn stands for (the number of its last line)."""
    lines = [line for line in (turn.agent.response if turn.agent else "").splitlines() if line.strip()]
    match = _LINE_NUMBER.match(lines[-1]) if lines else None
    return int(match.group(0)[:-2]) if match else max(len(lines), 1)


def digest_turn(turns: list[SummaryTurn], folded: list[int], records_digest: str) -> SummaryTurn:
    """One turn standing for `turns[i] for i in folded`: a line per condensed turn, numbered as
    rendered before the trim (an earlier digest turn's lines are carried over), counts summed."""
    lines: list[str] = []
    read = changed = commands = 0
    folded_set = set(folded)
    shift = 0
    for index, turn in enumerate(turns[:max(folded) + 1]):
        digest_like = is_digest_turn(turn)
        agent = turn.agent
        if index in folded_set:
            if agent is not None:
                read += agent.files_read_count
                changed += agent.files_changed_count
                commands += agent.commands_run_count
            if digest_like and agent is not None:
                lines.extend(line for line in agent.response.splitlines() if line.strip())
            else:
                line = f"{index + 1 + shift}. [{turn.status}] {_one_line(turn.user.message, 60)}"
                if agent is not None and agent.response:
                    line += f" -> {_one_line(_MARKER.sub('', agent.response), 80)}"
                lines.append(line)
        if digest_like:
            shift += _digest_span(turn) - 1
    numbers = [int(match.group(0)[:-2]) for match in map(_LINE_NUMBER.match, (lines[0], lines[-1])) if match]
    first, last = (numbers[0], numbers[-1]) if len(numbers) == 2 else (1, len(lines))
    span = f"turn {first}" if first == last else f"turns {first}-{last}"
    message = (f"{DIGEST_PREFIX}{span[4:]} (archive {records_digest})\n"
               f"Reprise folded {span} of this session into this one to shorten the summary; "
               "the full turns are in Reprise's archive of the session (`reprise restore`).")
    agent = AgentTurn(status="succeeded", response="\n".join(lines), files_read_count=read,
                      files_changed_count=changed, commands_run_count=commands, error=None, usage=None)
    return SummaryTurn(turn_id=f"turn-{records_digest[:32]}", user=UserTurn(message=message), agent=agent)


# --- fit ----------------------------------------------------------------------------------------------------

def summary_text(state: SessionState) -> str:
    """The summary part as the meter counts it."""
    return render_summary(state.summary).strip() or EMPTY_SUMMARY


def _ladder(spare: int, base: _Steps) -> list[_Steps]:
    rungs = [replace(base, cap=cap, spare=spare) for cap in FIT_CAPS]
    rungs += [replace(base, cap=FIT_CAPS[-1], fold=keep, spare=spare) for keep in FIT_FOLDS]
    return rungs


def _choose_fit(state: SessionState, original: Original, base: _Steps, target: int, meter: TrimMeter,
                before: int) -> tuple[_Realized | None, FitOutcome]:
    """The first ladder rung whose meter total is at most `target` (after any drop/keep-history).

    Rungs are estimated by counting only the turn blocks a rung changes (the summary is the
    blocks joined, and a join counts about the sum of its parts). A rung estimated within a
    small margin of the target is built for real (records, digest, new state) and counted in
    full; it is taken only if that real total fits.
    """
    has_base = bool(base.drop or base.drop_history or base.keep_history is not None)
    if before <= target and not has_base:
        return None, FitOutcome(target, f"already fits ({before:,} tokens); nothing changed", True, ())
    tried: list[tuple[str, int]] = []
    start, start_total = state, before
    if has_base:
        realized = _realize(state, original, base, _select(state, base), meter)
        total = realized.counted()
        tried.append(("drop and keep-history alone", total))
        if total <= target:
            return realized, FitOutcome(target, "drop and keep-history alone", True, tuple(tried))
        start, start_total = _build(state, realized.selection, _PLACEHOLDER, state.session_id), total
    estimator = _Estimator(start, meter, start_total)
    margin = max(64, target * 3 // 100)
    for rung in _ladder(base.spare, _Steps(spare=base.spare)):
        estimate = estimator.total(rung)
        tried.append((rung.label(), estimate))
        if estimate > target + margin:
            continue
        combined = replace(base, cap=rung.cap, fold=rung.fold)
        realized = _realize(state, original, combined, _select(state, combined), meter)
        total = realized.counted()
        tried[-1] = (rung.label(), total)
        if total <= target:
            return realized, FitOutcome(target, rung.label(), True, tuple(tried))
    return None, FitOutcome(target, None, False, tuple(tried))


class _Estimator:
    """Meter totals of ladder rungs from per-block counts of one starting state."""

    def __init__(self, state: SessionState, meter: TrimMeter, total: int):
        self.state = state
        self.meter = meter
        self.blocks = [self._count(turn_block(i + 1, t)) for i, t in enumerate(state.turns)]
        self.header = meter.count(as_instructions(SUMMARY_HEADER)) if state.turns else 0
        self.unchanged = self.header + sum(self.blocks)
        self.offset = total - self.unchanged

    def _count(self, block: str) -> int:
        """A turn block as it stands in the prompt: after a blank line, every line indented."""
        return self.meter.count("\n" + as_instructions("\n" + block))

    def total(self, steps: _Steps) -> int:
        turns = self.state.turns
        selection = _select(self.state, steps)
        tokens = self.header
        number = 1
        if selection.folded:
            tokens += self._count(turn_block(1, digest_turn(turns, selection.folded, _PLACEHOLDER)))
            number = 2
        for index in selection.kept:
            if index in selection.capped:
                turn = capped_turn(turns[index], selection.capped[index], _PLACEHOLDER)
                tokens += self._count(turn_block(number, turn))
            else:
                tokens += self.blocks[index]
            number += 1
        return self.offset + tokens


# --- applying -----------------------------------------------------------------------------------------------

def trim_session(store: Store, archive: Archive, ref: SessionRef, options: TrimOptions, *,
                 meter: TrimMeter | None = None, dry_run: bool = False, fork: bool = False, force: bool = False,
                 audit: AuditLog | None = None, now: float | None = None, fork_id: str | None = None) -> TrimResult:
    """Load, plan, and (unless `dry_run`) archive then write: in place, or as a new session with `fork`.

    Refused without `force`: files with codec warnings (a rewrite would change values) and
    sessions whose agent is probably running (liveness.py's rule). A dry run is never refused;
    its notes say what applying would need.
    """
    # Without the file's bytes: applying copies the file itself into the archive, checked by digest.
    loaded = store.load(ref, keep_data=False)
    now = time.time() if now is None else now
    target_id = (fork_id or uuid.uuid4().hex) if fork else None
    original = Original(loaded.version.size, loaded.version.sha256, loaded.data)
    plan = plan_trim(original, options, meter, fork_id=target_id, state=_hand_over(loaded))
    if not dry_run and plan.changed:
        # Its bytes are in plan.data: the traces' objects are freed before the writes.
        plan.state = without_traces(plan.state)
        return apply_trim(store, archive, loaded, plan, fork_id=target_id, force=force, audit=audit, now=now)
    if plan.changed and not force:
        if loaded.warnings:
            plan.notes.append("the file has warnings (a rewrite would change values); applying needs --force")
        running = running_turn(store, loaded, now=now)
        if running is not None:
            plan.notes.append(f"pending turn {running.turn_id} may still be running ({running.why}); "
                              "applying needs --force")
    target = SessionRef(ref.workspace_key, target_id, "fractal") if target_id else ref
    return TrimResult(plan, ref, target, False, dry_run, fork)


def without_traces(state: SessionState) -> SessionState:
    """The state with every history trace left out: what the checks before and after a write
    read (turns, statuses, times, ids), without the bulk of a large session."""
    return state.model_copy(update={"history": [entry.model_copy(update={"trace": None})
                                                for entry in state.history]})


def _hand_over(loaded: Loaded) -> SessionState:
    """The loaded state, for planning to be its only holder; `loaded` keeps it without traces."""
    state = loaded.state
    loaded.state = without_traces(state)
    return state


def apply_trim(store: Store, archive: Archive, loaded: Loaded, plan: TrimPlan, *, fork_id: str | None = None,
               force: bool = False, audit: AuditLog | None = None, now: float | None = None) -> TrimResult:
    """Write a plan made from `loaded`: archive the original bytes and the records, then the file.

    If the archive cannot be written, nothing else happens. A fork (`fork_id`, which the plan
    must have been made with) gets its own archive, file and meta; the original is untouched.
    When the plan does not hold the original's bytes, the file is copied into the archive a chunk
    at a time and must still have the digest it was planned from.
    """
    ref = loaded.ref
    now = time.time() if now is None else now
    if plan.original_digest != loaded.version.sha256 or plan.size_before != loaded.version.size:
        raise RepriseError("This trim plan was made from other bytes than the loaded session.")
    if fork_id and plan.state.session_id != fork_id:
        raise RepriseError("A fork must be planned with its new session id.")
    if loaded.warnings and not force:
        raise ProblemFileError(loaded.warnings[0], hint="a rewrite would change values Fractal reads; "
                                                        "--force trims anyway (the original is archived)")
    check_not_running(store, loaded, now=now, force=force, action="trimmed")
    if not plan.changed:
        return TrimResult(plan, ref, ref, False, False, fork_id is not None)
    # A changed plan (`changed` is `records is not None`) holds its records, their digest and the new bytes.
    assert plan.records is not None and plan.records_digest is not None and plan.data is not None
    target = SessionRef(ref.workspace_key, fork_id, "fractal") if fork_id else ref
    audit = audit or AuditLog(store.paths)
    options = {**plan.options.as_dict(), "fork": fork_id, "force": force}
    digests = [plan.records_digest, plan.original_digest]
    info: dict[str, Any] = {"options": plan.options.as_dict(), "counts": plan.counts()}
    if fork_id:
        info["forked_from"] = ref.session_id
    try:
        with store.lock(target):
            if fork_id is None and store.current_version(loaded.path) != loaded.version:
                raise ChangedOnDiskError(
                    f"Session {ref.session_id} changed on disk since Reprise read it; nothing was archived "
                    "or written.", hint="reload and try again", path=loaded.path)
            _archive_original(store, archive, loaded, target, plan)
            archive.put(target, plan.records, op="trim", anchors=plan.anchors,
                        original_sha256=plan.original_digest, result_sha256=plan.result_digest, **info)
            store.save_bytes(target, plan.data, expected=None if fork_id else loaded.version, locked=True,
                             encoded_from=plan.state)
    except RepriseError as exc:
        audit.append(ref.workspace_key, "trim", session_id=ref.session_id, options=options, digests=digests,
                     counts=plan.counts(), result=f"failed: {exc.code}", now=now)
        raise
    if fork_id:
        title = fork_title(loaded.state, store.read_meta(ref).title)
        store.write_meta(target, SessionMeta(title=f"{title} (trimmed)", created_at=iso_time(now)))
    audit.append(ref.workspace_key, "trim", session_id=ref.session_id, options=options, digests=digests,
                 counts=plan.counts(), result=f"forked to {fork_id}" if fork_id else "ok", now=now)
    return TrimResult(plan, ref, target, True, False, fork_id is not None, digests)


def _archive_original(store: Store, archive: Archive, loaded: Loaded, target: SessionRef, plan: TrimPlan) -> None:
    if plan.original is not None:
        archive.put(target, plan.original, op="trim-original", records=plan.records_digest,
                    source_session_id=loaded.ref.session_id)
        return
    try:
        with store.chunks(loaded.path) as chunks:
            archive.put_copy(target, plan.original_digest, chunks, op="trim-original", records=plan.records_digest,
                             source_session_id=loaded.ref.session_id)
    except FileNotFoundError:
        raise ChangedOnDiskError(f"Session {loaded.ref.session_id} was removed since Reprise read it; nothing was "
                                 "archived or written.", hint="reload and try again", path=loaded.path) from None


def fork_title(state: SessionState, title: str | None) -> str:
    """The title a fork starts from: the session's own, else its first message's first line."""
    if title:
        return title
    for turn in state.turns:
        if not is_digest_turn(turn) and turn.user.message.strip():
            return _one_line(turn.user.message.strip().splitlines()[0], 60)
    return f"session {state.session_id[:8]}"
