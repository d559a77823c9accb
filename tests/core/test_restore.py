from __future__ import annotations

import json
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reprise.core.archive import Archive, ArchiveEntry
from reprise.core.errors import ArchiveError, ConflictError, NotFoundError
from reprise.core.paths import SessionRef
from reprise.core.sources.fractal.codec import decode, encode
from reprise.core.sources.fractal.models import (
    AgentTurn,
    HistoryTurn,
    SummaryTurn,
    UserTurn,
)
from reprise.core.sources.fractal.restore import (
    reinsert,
    restore_session,
    restored_bytes,
    unrestored_trims,
)
from reprise.core.sources.fractal.store import Store
from reprise.core.sources.fractal.trim import TrimOptions, plan_trim, trim_session

from .test_trim import BASE, ID, OLD_NOW, build_state, write


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "state")


@pytest.fixture
def archive(store):
    return Archive(store.paths)


@pytest.fixture
def ref():
    from reprise.core.paths import workspace_key

    return SessionRef(workspace_key("/home/dev/project"), ID, "fractal")


def fractal_adds_turns(store: Store, ref: SessionRef, count: int) -> bytes:
    """Append finished turns the way Fractal does (summary and history, history cut to the last 20)."""
    loaded = store.load(ref)
    state = loaded.state
    for n in range(count):
        turn_id = f"turn-new{n:029x}"
        moment = (BASE + timedelta(days=1, minutes=n)).isoformat()
        state.summary.turns.append(SummaryTurn(turn_id=turn_id, user=UserTurn(message=f"new {n}"),
                                               agent=AgentTurn(status="succeeded", response=f"new reply {n}")))
        state.history.append(HistoryTurn(turn_id=turn_id, user_message=f"new {n}", status="succeeded",
                                         created_at=moment, updated_at=moment))
    state.history = state.history[-20:]
    store.paths.session_file(ref).write_bytes(encode(state))
    return store.paths.session_file(ref).read_bytes()


def test_a_trim_entry_that_names_no_original_is_refused_before_anything_is_read_for_it():
    plan = plan_trim(encode(build_state(8)), TrimOptions(fold=4))
    records = json.loads(plan.records)
    del records["original_sha256"]
    crafted = json.dumps(records).encode("ascii")
    read_names: list[str] = []

    def read(name: str) -> bytes:
        read_names.append(name)
        return crafted

    entry = ArchiveEntry("ab" * 32, "trim", "2026-01-01T00:00:00Z", info={"result_sha256": plan.result_digest})
    with pytest.raises(ArchiveError, match="does not match its index line"):
        restored_bytes(plan.data, [entry], read)
    assert read_names == [entry.digest]


def test_an_untouched_trim_is_restored_to_the_exact_original_bytes(store, archive, ref):
    original = write(store, ref, build_state(10, response_chars=900))
    trim_session(store, archive, ref, TrimOptions(fold=3, cap_replies=100, keep_history=2), now=OLD_NOW)
    trimmed = store.paths.session_file(ref).read_bytes()
    result = restore_session(store, archive, ref, now=OLD_NOW)
    assert result.applied and [step.mode for step in result.steps] == ["exact"]
    assert store.paths.session_file(ref).read_bytes() == original
    entries = archive.entries(ref)
    assert [e.op for e in entries] == ["trim-original", "trim", "restore"]
    assert archive.read(ref, entries[-1].digest) == trimmed
    assert entries[-1].info["restores"] == [entries[1].digest]


def test_turns_added_since_the_trim_are_kept_and_the_records_go_back_at_their_anchors(store, archive, ref):
    state = build_state(10, response_chars=900)
    write(store, ref, state)
    trim_session(store, archive, ref, TrimOptions(fold=4, cap_replies=100, drop=("8",)), now=OLD_NOW)
    fractal_adds_turns(store, ref, 3)
    result = restore_session(store, archive, ref, now=OLD_NOW)
    assert [step.mode for step in result.steps] == ["reinserted"]
    restored = decode(store.paths.session_file(ref).read_bytes(), path="x", expected_id=ID)
    assert restored.problem is None and restored.warnings == []
    turns = restored.state.turns
    assert turns[:10] == state.turns
    assert [t.turn_id for t in turns[10:]] == [f"turn-new{n:029x}" for n in range(3)]
    assert [h.turn_id for h in restored.state.history] == [h.turn_id for h in state.history] + [
        f"turn-new{n:029x}" for n in range(3)]
    step = result.steps[0]
    assert step.digest_turn_removed and step.summary_inserted == 6 and step.history_inserted == 1


def test_records_already_back_in_the_session_make_restore_refuse_and_change_nothing(store, archive, ref):
    write(store, ref, build_state(8, response_chars=900))
    result = trim_session(store, archive, ref, TrimOptions(drop=("2",)), now=OLD_NOW)
    undone = json.loads(archive.read(ref, result.plan.original_digest))
    undone["summary"]["turns"].append({"turn_id": "turn-later", "user": {"message": "later"}, "agent": None})
    store.paths.session_file(ref).write_bytes((json.dumps(undone, indent=2) + "\n").encode())
    before = store.paths.session_file(ref).read_bytes()
    with pytest.raises(ConflictError, match="already in the session"):
        restore_session(store, archive, ref, now=OLD_NOW)
    assert store.paths.session_file(ref).read_bytes() == before
    assert [e.op for e in archive.entries(ref)] == ["trim-original", "trim"]


def test_restore_all_undoes_every_trim_newest_first(store, archive, ref):
    original = write(store, ref, build_state(12, response_chars=900))
    for options in (TrimOptions(cap_replies=300), TrimOptions(fold=4), TrimOptions(keep_history=3, drop=("3",))):
        trim_session(store, archive, ref, options, now=OLD_NOW)
    result = restore_session(store, archive, ref, all_trims=True, now=OLD_NOW)
    assert len(result.steps) == 3
    assert store.paths.session_file(ref).read_bytes() == original
    assert unrestored_trims(archive.entries(ref)) == []
    with pytest.raises(NotFoundError, match="no trim left"):
        restore_session(store, archive, ref, now=OLD_NOW)


def test_restore_all_after_new_turns_reinserts_every_trim_and_keeps_the_new_turns(store, archive, ref):
    state = build_state(12, response_chars=900)
    write(store, ref, state)
    for options in (TrimOptions(cap_replies=50), TrimOptions(fold=3), TrimOptions(keep_history=2, drop=("2",))):
        trim_session(store, archive, ref, options, now=OLD_NOW)
    fractal_adds_turns(store, ref, 2)
    result = restore_session(store, archive, ref, all_trims=True, now=OLD_NOW)
    assert [step.mode for step in result.steps] == ["reinserted"] * 3
    restored = store.load(ref).state
    assert restored.turns[:12] == state.turns and len(restored.turns) == 14
    assert [h.turn_id for h in restored.history] == [h.turn_id for h in state.history] + [
        f"turn-new{n:029x}" for n in range(2)]


def test_restore_of_one_archive_digest_accepts_a_prefix_and_the_originals_digest(store, archive, ref):
    original = write(store, ref, build_state(8, response_chars=900))
    first = trim_session(store, archive, ref, TrimOptions(cap_replies=100), now=OLD_NOW)
    after_first = store.paths.session_file(ref).read_bytes()
    trim_session(store, archive, ref, TrimOptions(fold=2), now=OLD_NOW)
    restore_session(store, archive, ref, now=OLD_NOW)
    assert store.paths.session_file(ref).read_bytes() == after_first
    original_entry = archive.entries(ref)[0]
    assert original_entry.op == "trim-original"
    dry = restore_session(store, archive, ref, digest_text=original_entry.digest[:10], dry_run=True)
    assert dry.steps[0].digest == first.plan.records_digest and dry.after == original and not dry.applied
    restore_session(store, archive, ref, digest_text=first.plan.records_digest[:8], now=OLD_NOW)
    assert store.paths.session_file(ref).read_bytes() == original


def test_a_corrupt_archive_entry_is_found_before_anything_changes(store, archive, ref):
    write(store, ref, build_state(8, response_chars=900))
    result = trim_session(store, archive, ref, TrimOptions(cap_replies=100), now=OLD_NOW)
    trimmed = store.paths.session_file(ref).read_bytes()
    original_file = archive.directory(ref) / f"{result.plan.original_digest}.json"
    original_file.write_bytes(original_file.read_bytes().replace(b"message", b"massage"))
    with pytest.raises(ArchiveError, match="corrupt"):
        restore_session(store, archive, ref, now=OLD_NOW)
    assert store.paths.session_file(ref).read_bytes() == trimmed
    assert [e.op for e in archive.entries(ref)] == ["trim-original", "trim"]


def test_a_snapshot_goes_back_whole_only_when_no_turn_was_added_since(store, archive, ref):
    original = write(store, ref, build_state(5))
    snapshot = archive.put(ref, original, op="snapshot", reason="before handing to Fractal")
    loaded = store.load(ref)
    loaded.state.summary.turns[0].user.message = "edited"
    store.save(ref, loaded.state, expected=loaded.version)
    restore_session(store, archive, ref, digest_text=snapshot.digest[:12], now=OLD_NOW)
    assert store.paths.session_file(ref).read_bytes() == original
    fractal_adds_turns(store, ref, 1)
    grown = store.paths.session_file(ref).read_bytes()
    with pytest.raises(ConflictError, match="added after"):
        restore_session(store, archive, ref, digest_text=snapshot.digest[:12], now=OLD_NOW)
    assert store.paths.session_file(ref).read_bytes() == grown


def test_a_fork_restores_by_reinserting_and_keeps_its_own_id(store, archive, ref):
    state = build_state(8, response_chars=900)
    write(store, ref, state)
    fork = trim_session(store, archive, ref, TrimOptions(fold=2, keep_history=1), fork=True, now=OLD_NOW)
    restore_session(store, archive, fork.ref, now=OLD_NOW)
    restored = store.load(fork.ref).state
    assert restored.session_id == fork.ref.session_id
    assert restored.summary == state.summary and restored.history == state.history


def test_restore_never_deletes_archive_entries(store, archive, ref):
    write(store, ref, build_state(8, response_chars=900))
    trim_session(store, archive, ref, TrimOptions(cap_replies=100), now=OLD_NOW)
    names = {p.name for p in archive.directory(ref).iterdir()}
    restore_session(store, archive, ref, now=OLD_NOW)
    assert names <= {p.name for p in archive.directory(ref).iterdir()}


# --- properties ------------------------------------------------------------------------------------

option_sets = st.one_of(
    st.builds(lambda n: TrimOptions(keep_history=n), st.integers(0, 12)),
    st.builds(lambda c, k: TrimOptions(cap_replies=c, spare=k), st.integers(1, 400), st.integers(0, 4)),
    st.builds(lambda n: TrimOptions(fold=n), st.integers(0, 8)),
    st.builds(lambda n: TrimOptions(drop=(str(n),)), st.integers(1, 3)),
    st.builds(lambda n, c: TrimOptions(fold=n, cap_replies=c, keep_history=n), st.integers(0, 6),
              st.integers(1, 200)),
)
sessions = st.builds(lambda turns, chars, pending, stale: build_state(turns, response_chars=chars, pending_last=pending,
                                                                      stale_pending=stale),
                     st.integers(3, 12), st.integers(0, 700), st.booleans(), st.sampled_from([None, 0, 1]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions, st.lists(option_sets, min_size=1, max_size=4))
def test_any_sequence_of_trims_restored_in_reverse_gives_the_original_bytes(state, trims):
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "state")
        archive = Archive(store.paths)
        ref = SessionRef("home-dev-project--0123456789abcdef", ID, "fractal")
        store.save(ref, state, expected=None)
        original = store.paths.session_file(ref).read_bytes()
        applied = 0
        for options in trims:
            try:
                result = trim_session(store, archive, ref, options, now=OLD_NOW, force=True)
            except Exception as exc:  # a drop beyond the turns left is a usage error, not a trim
                assert type(exc).__name__ == "UsageError"
                continue
            applied += result.applied
        for _ in range(applied):
            restore_session(store, archive, ref, now=OLD_NOW, force=True)
        assert store.paths.session_file(ref).read_bytes() == original


@settings(max_examples=100, deadline=None)
@given(sessions, st.lists(option_sets, min_size=1, max_size=3))
def test_reinserting_the_records_of_untouched_trims_rebuilds_the_original_exactly(state, trims):
    data = encode(state)
    history = []
    for options in trims:
        try:
            plan = plan_trim(data, options)
        except Exception as exc:
            assert type(exc).__name__ == "UsageError"
            continue
        if plan.changed:
            history.append((data, plan))
            data = plan.data
    for before, plan in reversed(history):
        restored, _ = reinsert(json.loads(data), json.loads(plan.records), plan.records_digest)
        assert restored == json.loads(before)
        data = before
    assert data == encode(state)

