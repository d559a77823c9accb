from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reprise.core.audit import AuditLog
from reprise.core.catalog import Catalog
from reprise.core.errors import UsageError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.retention import PruneOptions, format_age, parse_age, select_prune
from reprise.core.rows import SessionRow
from reprise.core.session_meta import SessionMeta
from reprise.core.sources.base import ListingFields
from reprise.core.sources.fractal.listing import FractalListing
from reprise.core.sources.fractal.liveness import pending_turns
from reprise.core.sources.fractal.store import Store
from reprise.core.sources.fractal.trash import Trash

from .test_trim import BASE, build_state, write

KEY = workspace_key("/home/dev/project")
OTHER = workspace_key("/home/dev/other")
NOW = datetime(2026, 3, 1, tzinfo=UTC).timestamp()
DAY = 86400


def row(n: int, *, days_ago: float | None = 40, key: str = KEY, turns: int = 3, pinned: bool = False,
        pending: bool = False, problem: str | None = None, mtime_days_ago: float = 1) -> SessionRow:
    activity = None if days_ago is None else datetime.fromtimestamp(NOW - days_ago * DAY, UTC).isoformat()
    mtime_ns = int((NOW - mtime_days_ago * DAY) * 1e9)
    file_id = f"{n:032x}"
    fields = ListingFields(session_id=file_id, workspace_key=key, turns=turns, pending=pending, last_activity=activity,
                           activity_source="history" if activity else "mtime", history_count=turns)
    activity_ts = datetime.fromisoformat(activity).timestamp() if activity else mtime_ns / 1e9
    return SessionRow("fractal", key, file_id, 100, mtime_ns, activity_ts, turns, 0, problem, None, None, None, None,
                      None, f"/sessions/{file_id}.json", pinned=pinned, details=fields)


def ids(candidates) -> list[int]:
    return [int(c.ref.session_id, 16) for c in candidates]


@pytest.mark.parametrize("text,seconds", [("90m", 5400), ("12h", 43200), ("30d", 30 * DAY), ("2w", 14 * DAY),
                                          (" 7d ", 7 * DAY)])
def test_ages_are_a_number_and_a_unit(text, seconds):
    assert parse_age(text) == seconds


@pytest.mark.parametrize("text", ["", "30", "d", "1y", "1.5d", "-3d", "0d", "3 days", None])
def test_anything_else_is_a_usage_error_with_the_accepted_forms(text):
    with pytest.raises(UsageError) as info:
        parse_age(text)
    assert "90m, 12h, 30d or 2w" in info.value.hint


def test_ages_print_short():
    assert [format_age(s) for s in (5, 600, 7200, 3 * DAY, 30 * DAY)] == ["5s", "10m", "2h", "3d", "4w"]


def test_older_than_selects_by_the_sessions_own_newest_turn_time():
    rows = [row(1, days_ago=40, mtime_days_ago=1), row(2, days_ago=5, mtime_days_ago=90)]
    selection = select_prune(rows, PruneOptions(older_than=30 * DAY), now=NOW)
    assert ids(selection.selected) == [1] and selection.selected[0].reason == "newest turn 5w ago"


def test_empty_selects_sessions_without_turns():
    rows = [row(1, days_ago=None, turns=0), row(2, days_ago=1)]
    assert ids(select_prune(rows, PruneOptions(empty=True), now=NOW).selected) == [1]


def test_pinned_pending_and_the_newest_per_workspace_are_protected_with_reasons():
    rows = [row(1, days_ago=100, pinned=True), row(2, days_ago=90, pending=True), row(3, days_ago=80),
            row(4, days_ago=70), row(5, days_ago=60, key=OTHER), row(6, days_ago=95)]
    selection = select_prune(rows, PruneOptions(older_than=30 * DAY, keep_last=1), now=NOW)
    assert ids(selection.selected) == [3, 6]
    reasons = {int(c.ref.session_id, 16): c.reason for c in selection.protected}
    assert reasons == {1: "pinned", 2: "has a pending turn", 4: "the newest in its workspace",
                       5: "the newest in its workspace"}
    two = select_prune(rows, PruneOptions(older_than=30 * DAY, keep_last=2), now=NOW)
    assert ids(two.selected) == [6]
    reasons_two = {int(c.ref.session_id, 16): c.reason for c in two.protected}
    assert reasons_two[3] == "among the newest 2 in its workspace"


def test_force_lifts_the_pending_protection_but_not_the_pin():
    rows = [row(1, pinned=True, pending=True), row(2, pending=True)]
    selection = select_prune(rows, PruneOptions(older_than=DAY, force=True), now=NOW)
    assert ids(selection.selected) == [2] and ids(selection.protected) == [1]


def test_sessions_without_a_turn_time_are_skipped_unless_included_then_judged_by_file_time():
    rows = [row(1, days_ago=None, mtime_days_ago=50), row(2, days_ago=None, mtime_days_ago=2)]
    skipped = select_prune(rows, PruneOptions(older_than=30 * DAY), now=NOW)
    assert skipped.selected == [] and ids(skipped.skipped) == [1] and "no turn time" in skipped.skipped[0].reason
    included = select_prune(rows, PruneOptions(older_than=30 * DAY, include_undated=True), now=NOW)
    assert ids(included.selected) == [1]


def test_unreadable_files_are_skipped_not_pruned():
    selection = select_prune([row(1, problem="invalid_json")], PruneOptions(older_than=DAY), now=NOW)
    assert selection.selected == [] and selection.skipped[0].reason == "unreadable file (invalid_json)"


def test_prune_needs_a_criterion():
    with pytest.raises(UsageError):
        PruneOptions()


def test_prune_without_confirmation_only_lists_and_with_it_moves_to_the_trash(tmp_path):
    store = Store(tmp_path / "state")
    old = SessionRef(KEY, "a" * 32, "fractal")
    recent = SessionRef(KEY, "b" * 32, "fractal")
    write(store, old, build_state(3, session_id=old.session_id))
    fresh = build_state(3, session_id=recent.session_id)
    for entry in fresh.history:
        entry.updated_at = datetime.fromtimestamp(NOW - DAY, UTC).isoformat()
    write(store, recent, fresh)
    store.write_meta(old, SessionMeta(title="old one"))
    catalog = Catalog([FractalListing(store)], tmp_path / "cache")
    rows = catalog.refresh([KEY])
    catalog.load_details(rows)
    selection = select_prune(rows, PruneOptions(older_than=30 * DAY), now=NOW)
    assert [c.ref for c in selection.selected] == [old]
    trash = Trash(store)
    listed = trash.prune(selection, confirmed=False, now=NOW)
    assert not listed.applied and store.exists(old)
    done = trash.prune(selection, confirmed=True, now=NOW)
    assert done.moved == [old] and not store.exists(old) and store.exists(recent)
    assert store.paths.trash_file(old).exists()
    (line,) = AuditLog(store.paths).read([KEY])
    assert line.op == "prune" and line.sessions == [old.session_id] and line.counts["moved"] == 1


def live(state, *, mtime, now, tmp_path) -> list[str]:
    store = Store(tmp_path / "state")
    ref = SessionRef(KEY, state.session_id, "fractal")
    return [turn.turn_id for turn in pending_turns(store, ref, state, mtime=mtime, now=now) if turn.live]


def test_a_pending_turn_not_started_by_reprise_counts_as_running_for_24_hours_after_it_started(tmp_path):
    state = build_state(3, pending_last=True)
    created = (BASE + timedelta(minutes=2)).timestamp()
    assert live(state, mtime=None, now=created + DAY - 1, tmp_path=tmp_path) == [state.turns[-1].turn_id]
    assert live(state, mtime=None, now=created + DAY + 1, tmp_path=tmp_path) == []


def test_a_pending_turn_without_a_history_time_falls_back_to_the_file_time(tmp_path):
    state = build_state(3, pending_last=True, history_limit=0)
    assert live(state, mtime=NOW - 60, now=NOW, tmp_path=tmp_path) != []
    assert live(state, mtime=NOW - DAY - 1, now=NOW, tmp_path=tmp_path) == []
    assert live(build_state(3), mtime=NOW, now=NOW, tmp_path=tmp_path) == []
