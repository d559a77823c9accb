"""Fractal's liveness rule: whether a pending turn is still being worked on. Fractal saves a turn
as pending (summary `agent: null`, history `status: "pending"`) before its model call and fills
it in after, so a crash leaves it pending forever. A pending turn's start is its history entry's
`created_at` (its `updated_at` when that is unreadable), or, when the file holds no entry for
it, the copy of the entry that a Reprise trim or history cap archived; a start over a day in the
future counts as none. A pending turn is live:

1. when Reprise started it (its send path holds a run record in `reprise/runs/<session id>/`
   with Reprise's pid, that process's start time, the host and the `[agent] timeout`; a record
   claims the pending turns started after it was written): while that Reprise process is
   alive, however old the turn; once it has ended, or when it ran on another host and cannot
   be checked, while the turn is younger than min(`[agent] timeout`, 24 h);
2. otherwise (Fractal's own TUI, which no Reprise timeout bounds): while it is younger than
   24 h.
3. A pending turn with no start anywhere is dead when a later turn's history entry, or the
   file itself, is older than 24 h (it started before either); else it is live while the file
   is younger than 24 h.

The file's modification time counts in case 3 only, so Reprise's own writes (trim, restore,
rename) and plain copies never make an old pending turn look running, unless nothing but the
file's time dates it at all.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ...archive import Archive
from ...errors import PendingTurnError, RepriseError
from ...liveness import CAP_S, CLOCK_SLACK_S, PendingTurn, RunRecord, run_records
from ...paths import SessionRef
from ...times import parse_time
from .store import Loaded, Store

if TYPE_CHECKING:
    from .models import HistoryTurn, SessionState


class FractalLiveness:
    source = "fractal"

    def judge(self, store: Store, ref: SessionRef, state: SessionState, *, mtime: float | None,
              now: float) -> list[PendingTurn]:
        numbers = {turn.turn_id: number for number, turn in enumerate(state.turns, start=1)}
        pending = [turn.turn_id for turn in state.turns if turn.agent is None]
        pending += [entry.turn_id for entry in state.history
                    if entry.status == "pending" and entry.turn_id not in pending]
        if not pending:
            return []
        runs = run_records(store.paths, ref)
        return [self._judge_one(store, ref, state, turn_id, numbers.get(turn_id), runs, mtime, now)
                for turn_id in pending]

    def _judge_one(self, store: Store, ref: SessionRef, state: SessionState, turn_id: str, number: int | None,
                   runs: list[RunRecord], mtime: float | None, now: float) -> PendingTurn:
        entry = next((h for h in state.history if h.turn_id == turn_id), None)
        created_at = entry.created_at if entry is not None else None
        started = _plausible(_entry_start(entry), now)
        if started is None:
            dead = _older_than_the_cap(state, turn_id, mtime, now)
            if dead is not None:
                return PendingTurn(turn_id, number, None, False, dead)
            archived, created_at = _archived_start(store, ref, turn_id)
            started = _plausible(archived, now)
        if started is None:
            why = "the file's time is unknown" if mtime is None else f"the file changed {_age(now - mtime)} ago"
            return PendingTurn(turn_id, number, None, True,
                               f"no start time and {why}; presumed running for {_age(CAP_S)}")
        age = now - started
        run = _claiming_run(runs, started)
        if run is None:
            return PendingTurn(turn_id, number, created_at, age < CAP_S,
                               f"started {_age(age)} ago by an agent Reprise did not start, "
                               f"presumed running for {_age(CAP_S)}")
        alive = run.process_alive()
        if alive:
            return PendingTurn(turn_id, number, created_at, True, f"Reprise process {run.pid} is running it")
        limit = min(run.timeout, CAP_S)
        whose = "a Reprise process that has ended" if alive is False else f"Reprise on {run.host}"
        return PendingTurn(turn_id, number, created_at, age < limit,
                           f"started {_age(age)} ago by {whose}, presumed running for its {_age(limit)} timeout")


def _older_than_the_cap(state: SessionState, turn_id: str, mtime: float | None, now: float) -> str | None:
    """Why an undated pending turn is surely older than the cap (a later turn, or the file, is), else None."""
    later = _later_bound(state, turn_id)
    if later is not None and now - later >= CAP_S:
        return f"no start time, but a later turn started {_age(now - later)} ago"
    if mtime is not None and now - mtime >= CAP_S:
        return f"no start time, and the file last changed {_age(now - mtime)} ago"
    return None


def _plausible(start: float | None, now: float) -> float | None:
    """A start more than a day in the future is no start (a wrong clock, or a hostile file)."""
    return start if start is not None and start - now <= CAP_S else None


def _entry_start(entry: HistoryTurn | None) -> float | None:
    if entry is None:
        return None
    moment = parse_time(entry.created_at) or parse_time(entry.updated_at)
    return moment.timestamp() if moment is not None else None


def _later_bound(state: SessionState, turn_id: str) -> float | None:
    """The earliest start of a turn recorded after `turn_id` (which therefore started before it)."""
    order = [turn.turn_id for turn in state.turns]
    if turn_id in order:
        later = set(order[order.index(turn_id) + 1:])
    else:
        ids = [entry.turn_id for entry in state.history]
        later = set(ids[ids.index(turn_id) + 1:]) if turn_id in ids else set()
    starts = [start for entry in state.history if entry.turn_id in later
              if (start := _entry_start(entry)) is not None]
    return min(starts) if starts else None


def _archived_start(store: Store, ref: SessionRef, turn_id: str) -> tuple[float | None, str | None]:
    """The start of `turn_id` from a copy of its history entry that a Reprise trim or history cap
    archived (newest first). Whole-file entries are not read: an entry Fractal's own cap evicted
    leaves 20 later, dated entries behind, which date the turn already."""
    archive = Archive(store.paths)
    try:
        entries = archive.entries(ref)
    except (OSError, RepriseError):
        return None, None
    for item in reversed(entries):
        if item.op != "trim" and not (item.op == "evict" and turn_id in item.anchors):
            continue
        try:
            data = json.loads(archive.read(ref, item.digest))
        except (OSError, ValueError, RepriseError):
            continue
        for candidate in _history_entries(data):
            if isinstance(candidate, dict) and candidate.get("turn_id") == turn_id:
                text = candidate.get("created_at") if isinstance(candidate.get("created_at"), str) else None
                moment = parse_time(text) if text else None
                if moment is not None:
                    return moment.timestamp(), text
    return None, None


def _history_entries(data: Any) -> list[object]:
    """History entries in an archived file: a whole session, an eviction, or a trim's records."""
    if not isinstance(data, dict) or not isinstance(data.get("history"), list):
        return []
    history = data["history"]
    return [item["turn"] if isinstance(item, dict) and isinstance(item.get("turn"), dict) else item
            for item in history]


def _claiming_run(runs: list[RunRecord], started: float | None) -> RunRecord | None:
    """The newest run record written before the turn started (the run that made the turn)."""
    if started is None:
        return None
    claiming = [run for run in runs if run.started_ts - CLOCK_SLACK_S <= started]
    return max(claiming, key=lambda run: run.started_ts) if claiming else None


def _age(seconds: float) -> str:
    """A short duration: 45s, 12m, 5h, 24h, 3d."""
    seconds = max(0.0, seconds)
    for unit, size, least in (("d", 86400, 2 * 86400), ("h", 3600, 3600), ("m", 60, 60)):
        if seconds >= least:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


# --- what the guards call ----------------------------------------------------------------------------

FRACTAL = FractalLiveness()


def pending_turns(store: Store, ref: SessionRef, state: SessionState, *, mtime: float | None,
                  now: float) -> list[PendingTurn]:
    return FRACTAL.judge(store, ref, state, mtime=mtime, now=now)


def judged(store: Store, loaded: Loaded, *, now: float) -> list[PendingTurn]:
    """The pending turns of a loaded session, judged."""
    return pending_turns(store, loaded.ref, loaded.state, mtime=loaded.version.mtime_ns / 1e9, now=now)


def running_turn(store: Store, loaded: Loaded, *, now: float) -> PendingTurn | None:
    """The first live pending turn, if any: its agent is probably still writing the session."""
    return next((turn for turn in judged(store, loaded, now=now) if turn.live), None)


def stale_turns(store: Store, loaded: Loaded, *, now: float) -> list[PendingTurn]:
    """Pending summary turns whose agent is gone: what recover may mark interrupted."""
    return [turn for turn in judged(store, loaded, now=now) if not turn.live and turn.number is not None]


def check_not_running(store: Store, loaded: Loaded, *, now: float, force: bool, action: str) -> None:
    """Raise PendingTurnError when an agent is probably writing this session, unless forced."""
    if force:
        return
    turn = running_turn(store, loaded, now=now)
    if turn is not None:
        raise PendingTurnError(
            f"Session {loaded.ref.session_id} has a pending turn ({turn.turn_id}: {turn.why}); an agent is "
            f"probably still running, so it was not {action}.",
            hint="wait for the turn to finish, or pass --force", path=loaded.path)
