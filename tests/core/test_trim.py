from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta

import pytest

from reprise.core.archive import Archive
from reprise.core.audit import AuditLog
from reprise.core.catalog import Catalog
from reprise.core.config import MeterSettings
from reprise.core.errors import (
    ArchiveError,
    ChangedOnDiskError,
    PendingTurnError,
    ProblemFileError,
    UsageError,
)
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.retention import PruneOptions, select_prune
from reprise.core.session_meta import SessionMeta
from reprise.core.sources.fractal.codec import decode, encode
from reprise.core.sources.fractal.listing import FractalListing
from reprise.core.sources.fractal.meter import Meter
from reprise.core.sources.fractal.models import SessionState
from reprise.core.sources.fractal.restore import restore_session
from reprise.core.sources.fractal.store import Store
from reprise.core.sources.fractal.summary import render_summary, turn_block
from reprise.core.sources.fractal.trash import Trash, relink
from reprise.core.sources.fractal.trim import (
    FIT_CAPS,
    TrimMeter,
    TrimOptions,
    apply_trim,
    is_digest_turn,
    plan_trim,
    summary_text,
    trim_session,
)

ID = "0123456789abcdef0123456789abcdef"
BASE = datetime(2026, 1, 1, tzinfo=UTC)
OLD_NOW = (BASE + timedelta(days=30)).timestamp()


def build_state(turns: int = 6, *, response_chars: int = 200, pending_last: bool = False,
                stale_pending: int | None = None, session_id: str = ID, history_limit: int | None = 20,
                unknown: bool = True, secret: str = "") -> SessionState:
    """A Fractal-shaped session: traces, usage, errors, unknown fields (kept after the known ones)."""
    summary, history = [], []
    for i in range(turns):
        turn_id = f"turn-{i:032x}"
        message = f"message {i} {secret} please fix module {i}"
        pending = (pending_last and i == turns - 1) or stale_pending == i
        moment = BASE + timedelta(minutes=i)
        if pending:
            agent = None
            status = "pending"
        else:
            status = ("succeeded", "failed", "max_iterations", "interrupted")[i % 4]
            response = (f"reply {i} {secret} " + "word " * response_chars)[:response_chars] if i % 4 in (0, 2) else ""
            agent = {"status": status, "response": response, "files_read_count": i % 3, "files_changed_count": i % 2,
                     "commands_run_count": 1, "error": None if i % 4 == 0 else f"error {i}",
                     "usage": {"input_tokens": 100 * i, "output_tokens": 10, "cost": 0.25, "duration_ms": 5,
                               "iterations": 2, "context_tokens": 1000 + i, **({"cached": 4} if unknown else {})}}
        summary.append({"turn_id": turn_id, "user": {"message": message}, "agent": agent,
                        **({"x_turn": {"n": i}} if unknown and i == 0 else {})})
        history.append({"turn_id": turn_id, "user_message": message, "status": status,
                        "files_read": [f"src/m{i}.py"], "files_modified": [], "commands_run": ["pytest -q"],
                        "trace": None if pending else {"steps": [{"code": f"print({i})", "output": f"{i} {secret}",
                                                                  "nested": {"a": [1, 2.5, None, True]}}],
                                                       "status": "completed", "unknown_key": "kept"},
                        "error": None, "created_at": moment.isoformat(),
                        "updated_at": (moment + timedelta(seconds=30)).isoformat()})
    if history_limit is not None:
        history = history[-history_limit:] if history_limit else []
    data = {"schema_version": 1, "session_id": session_id, "summary": {"turns": summary}, "history": history}
    if unknown:
        data["x_future"] = {"kept": [1, "two"]}
    return SessionState.model_validate(data)


def char_meter(fixed: int = 1000) -> TrimMeter:
    """A deterministic stand-in for the token meter: a token is four characters of the summary."""
    return TrimMeter(total=lambda state: fixed + len(summary_text(state)) // 4, count=lambda text: len(text) // 4)


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "state")


@pytest.fixture
def archive(store):
    return Archive(store.paths)


@pytest.fixture
def ref():
    return SessionRef(workspace_key("/home/dev/project"), ID, "fractal")


def write(store: Store, ref: SessionRef, state: SessionState) -> bytes:
    store.save(ref, state, expected=None)
    return store.paths.session_file(ref).read_bytes()


def assert_fractal_clean(data: bytes, session_id: str = ID) -> SessionState:
    """Decodes with no problem and no warning, and re-encodes to the same bytes."""
    decoded = decode(data, path="x", expected_id=session_id)
    assert decoded.problem is None and decoded.warnings == []
    assert encode(decoded.state) == data
    return decoded.state


# --- pure planning ----------------------------------------------------------------------------------

def test_keep_history_keeps_the_newest_entries_and_leaves_the_summary_alone():
    state = build_state(8)
    plan = plan_trim(encode(state), TrimOptions(keep_history=3))
    new = assert_fractal_clean(plan.data)
    assert [h.turn_id for h in new.history] == [h.turn_id for h in state.history[-3:]]
    assert new.summary == state.summary
    assert plan.history_removed == [h.turn_id for h in state.history[:5]]
    records = json.loads(plan.records)
    assert [r["turn"]["turn_id"] for r in records["history"]] == plan.history_removed
    assert records["history"][0]["anchor"] is None and records["history"][1]["anchor"] == plan.history_removed[0]
    assert plan.size_after < plan.size_before


def test_keep_history_never_drops_a_pending_newest_entry():
    plan = plan_trim(encode(build_state(4, pending_last=True)), TrimOptions(keep_history=0))
    assert [h.status for h in plan.state.history] == ["pending"]


def test_cap_cuts_long_replies_except_the_newest_spare_ones_and_names_the_archive():
    state = build_state(10, response_chars=3000)
    plan = plan_trim(encode(state), TrimOptions(cap_replies=100, spare=3))
    assert plan.records_digest == hashlib.sha256(plan.records).hexdigest()
    new = assert_fractal_clean(plan.data)
    for index, (old, turn) in enumerate(zip(state.turns, new.turns, strict=True)):
        if index >= 7 or not old.agent.response:
            assert turn == old
            continue
        body, marker = turn.agent.response.split("\n")
        assert body == old.agent.response[:100]
        assert marker == f"[reprise: 2,900 characters cut; archive {plan.records_digest}]"
    assert [c.number for c in plan.turns] == [1, 3, 5, 7]
    assert all(c.change == "capped" and c.chars_cut == 2900 for c in plan.turns)


def test_capping_again_at_the_same_length_changes_nothing_and_a_smaller_cap_replaces_the_marker():
    first = plan_trim(encode(build_state(6, response_chars=500)), TrimOptions(cap_replies=100, spare=0))
    again = plan_trim(first.data, TrimOptions(cap_replies=100, spare=0))
    assert not again.changed and again.data == first.data
    smaller = plan_trim(first.data, TrimOptions(cap_replies=40, spare=0))
    response = smaller.state.turns[0].agent.response
    assert response.count("[reprise:") == 1 and response.startswith(first.state.turns[0].agent.response[:40] + "\n")
    assert "60 characters cut" in response and smaller.records_digest in response


def test_fold_replaces_older_turns_with_one_digest_turn_at_the_front():
    state = build_state(10)
    plan = plan_trim(encode(state), TrimOptions(fold=4))
    new = assert_fractal_clean(plan.data)
    digest_turn = new.turns[0]
    assert digest_turn.turn_id == "turn-" + plan.records_digest[:32]
    assert is_digest_turn(digest_turn)
    assert digest_turn.user.message.startswith(f"[reprise] Condensed turns 1-6 (archive {plan.records_digest})")
    agent = digest_turn.agent
    assert agent.status == "succeeded" and agent.usage is None and agent.error is None
    lines = agent.response.split("\n")
    assert len(lines) == 6
    assert lines[0].startswith("1. [succeeded] message 0") and " -> reply 0" in lines[0]
    assert lines[1].startswith("2. [failed] message 1") and "->" not in lines[1]
    assert agent.files_read_count == sum(t.agent.files_read_count for t in state.turns[:6])
    assert agent.commands_run_count == 6
    assert new.turns[1:] == state.turns[6:]
    assert new.history == state.history
    assert [c.change for c in plan.turns] == ["folded"] * 6


def test_folding_a_session_with_a_digest_turn_merges_it_into_the_new_one():
    first = plan_trim(encode(build_state(12)), TrimOptions(fold=6))
    second = plan_trim(first.data, TrimOptions(fold=2))
    digests = [t for t in second.state.turns if is_digest_turn(t)]
    assert digests == [second.state.turns[0]]
    lines = digests[0].agent.response.split("\n")
    assert [line.split(".")[0] for line in lines] == [str(n) for n in range(1, 11)]
    assert "Condensed turns 1-10" in digests[0].user.message
    assert [t.turn_id for t in second.state.turns[1:]] == [f"turn-{i:032x}" for i in (10, 11)]


def test_folding_a_hand_edited_digest_turn_without_a_reply_folds_it_as_an_ordinary_turn():
    first = plan_trim(encode(build_state(12)), TrimOptions(fold=6))
    edited = first.state.model_copy(deep=True)
    edited.turns[0].agent = None   # a digest turn whose reply was removed by hand
    second = plan_trim(encode(edited), TrimOptions(fold=2))
    assert second.changed
    lines = second.state.turns[0].agent.response.split("\n")
    assert lines[0].startswith("1. [pending] [reprise] Condensed turns 1-6")
    assert [line.split(".")[0] for line in lines] == [str(n) for n in range(1, len(lines) + 1)]


def test_folding_when_only_a_digest_turn_would_fold_changes_nothing():
    first = plan_trim(encode(build_state(8)), TrimOptions(fold=5))
    assert not plan_trim(first.data, TrimOptions(fold=5)).changed


def test_a_stale_pending_turn_folds_and_shows_as_pending_in_the_digest():
    state = build_state(8, stale_pending=2)
    plan = plan_trim(encode(state), TrimOptions(fold=3))
    lines = plan.state.turns[0].agent.response.split("\n")
    assert lines[2] == "3. [pending] message 2 please fix module 2"


def test_a_pending_newest_turn_is_never_folded_capped_or_dropped():
    state = build_state(6, pending_last=True, response_chars=500)
    folded = plan_trim(encode(state), TrimOptions(fold=0, cap_replies=10, spare=0))
    assert folded.state.turns[-1] == state.turns[-1] and len(folded.state.turns) == 2
    with pytest.raises(UsageError, match="pending"):
        plan_trim(encode(state), TrimOptions(drop=("6",)))


def test_drop_removes_turns_by_number_or_id_from_summary_and_history():
    state = build_state(6)
    plan = plan_trim(encode(state), TrimOptions(drop=("2", "turn-" + f"{4:032x}")))
    ids = [t.turn_id for t in plan.state.turns]
    assert ids == [f"turn-{i:032x}" for i in (0, 2, 3, 5)]
    assert [h.turn_id for h in plan.state.history] == ids
    assert [(c.number, c.change) for c in plan.turns] == [(2, "dropped"), (5, "dropped")]


@pytest.mark.parametrize("item", ["0", "7", "turn-nope"])
def test_drop_of_a_turn_that_does_not_exist_is_a_usage_error(item):
    with pytest.raises(UsageError):
        plan_trim(encode(build_state(6)), TrimOptions(drop=(item,)))


@pytest.mark.parametrize("options", [{}, {"cap_replies": 0}, {"fold": -1}, {"fit": 100, "fold": 3},
                                     {"keep_history": True}])
def test_invalid_option_combinations_are_usage_errors(options):
    with pytest.raises(UsageError):
        TrimOptions(**options)


def test_fit_takes_the_first_ladder_rung_that_fits_and_matches_the_explicit_plan():
    state = build_state(30, response_chars=6000)
    meter = char_meter()
    totals = {}
    for cap in FIT_CAPS:
        totals[cap] = plan_trim(state, TrimOptions(cap_replies=cap), meter).meter_after
    target = totals[1000] + 5
    assert totals[2000] > target
    plan = plan_trim(state, TrimOptions(fit=target), meter)
    assert plan.fit.chosen == "cap replies at 1,000 characters" and plan.fit.fits
    assert plan.meter_after <= target < plan.meter_before
    assert plan.data == plan_trim(state, TrimOptions(cap_replies=1000), meter).data


def test_fit_folds_when_capping_alone_is_not_enough():
    state = build_state(40, response_chars=3000)
    meter = char_meter()
    target = plan_trim(state, TrimOptions(cap_replies=500, fold=5), meter).meter_after
    plan = plan_trim(state, TrimOptions(fit=target), meter)
    assert plan.fit.chosen == "cap replies at 500 characters and fold keeping 5 turns"
    assert plan.meter_after <= target
    assert [label for label, _ in plan.fit.tried][-1] == plan.fit.chosen


def test_fit_that_nothing_reaches_changes_nothing_and_says_so():
    state = build_state(10, response_chars=3000)
    plan = plan_trim(state, TrimOptions(fit=10), char_meter())
    assert not plan.changed and plan.data == encode(state)
    assert plan.fit.chosen is None and not plan.fit.fits and len(plan.fit.tried) == 9
    assert "no plan on the ladder" in plan.notes[0]


def test_fit_on_a_session_that_already_fits_changes_nothing():
    plan = plan_trim(build_state(3), TrimOptions(fit=10**6), char_meter())
    assert not plan.changed and plan.fit.fits and "already fits" in plan.fit.chosen


def test_fit_with_the_real_meter_reports_the_real_total_of_the_chosen_plan(tmp_path):
    meter = Meter(MeterSettings())
    trim_meter = TrimMeter.from_meter(meter, tmp_path)
    state = build_state(20, response_chars=8000)
    before = meter.measure(state, tmp_path).total
    plan = plan_trim(state, TrimOptions(fit=before - 15_000), trim_meter)
    assert plan.fit.fits and plan.meter_before == before
    assert plan.meter_after == meter.measure(plan.state, tmp_path).total <= before - 15_000


def test_turn_blocks_joined_are_exactly_fractals_rendered_summary():
    state = plan_trim(build_state(7, stale_pending=3), TrimOptions(fold=2)).state
    joined = "## Session Summary" + "".join("\n\n" + turn_block(i + 1, t) for i, t in enumerate(state.turns))
    assert joined == render_summary(state.summary)


def test_same_file_and_options_give_the_same_bytes_and_a_fork_differs_only_in_its_id():
    data = encode(build_state(12, response_chars=900))
    options = TrimOptions(fold=4, cap_replies=100, keep_history=5, drop=("2",))
    first, second = plan_trim(data, options), plan_trim(data, options)
    assert first.data == second.data and first.records == second.records
    fork = plan_trim(data, options, fork_id="f" * 32)
    assert fork.records == first.records
    assert fork.data == first.data.replace(ID.encode(), b"f" * 32)


def test_trimmed_files_keep_unknown_fields_and_traces_untouched():
    state = build_state(10, response_chars=400)
    plan = plan_trim(encode(state), TrimOptions(fold=3, cap_replies=50, keep_history=4))
    new = json.loads(plan.data)
    old = json.loads(encode(state))
    assert new["x_future"] == old["x_future"]
    assert new["history"] == old["history"][-4:]
    assert new["summary"]["turns"][-1]["agent"]["usage"]["cached"] == 4


def test_preview_reports_sizes_meter_totals_and_turns_affected(tmp_path):
    meter = TrimMeter.from_meter(Meter(MeterSettings()), tmp_path)
    plan = plan_trim(build_state(10, response_chars=2000), TrimOptions(cap_replies=200), meter)
    assert plan.size_before == len(plan.original) > plan.size_after == len(plan.data)
    assert plan.meter_before > plan.meter_after > 0
    assert plan.counts() == {"capped": 4, "folded": 0, "dropped": 0, "history_removed": 0}
    assert plan.records_digest is not None


# --- applying --------------------------------------------------------------------------------------

def test_apply_archives_the_original_and_the_records_before_writing(store, archive, ref):
    original = write(store, ref, build_state(8, response_chars=600))
    result = trim_session(store, archive, ref, TrimOptions(fold=3, cap_replies=100), now=OLD_NOW)
    assert result.applied
    on_disk = store.paths.session_file(ref).read_bytes()
    assert on_disk == result.plan.data
    entries = archive.entries(ref)
    assert [e.op for e in entries] == ["trim-original", "trim"]
    assert archive.read(ref, entries[0].digest) == original
    assert archive.read(ref, entries[1].digest) == result.plan.records
    assert entries[1].digest == result.plan.records_digest
    assert entries[1].info["result_sha256"] == hashlib.sha256(on_disk).hexdigest()
    assert entries[1].info["original_sha256"] == entries[0].digest
    assert entries[1].anchors == [f"turn-{i:032x}" for i in range(4)]


def test_a_failing_archive_leaves_the_session_untouched(store, archive, ref):
    original = write(store, ref, build_state(6, response_chars=600))
    blocker = archive.directory(ref)
    blocker.parent.mkdir(parents=True)
    blocker.write_text("not a directory")
    with pytest.raises(ArchiveError):
        trim_session(store, archive, ref, TrimOptions(cap_replies=10, spare=0), now=OLD_NOW)
    assert store.paths.session_file(ref).read_bytes() == original
    lines = AuditLog(store.paths).read([ref.workspace_key])
    assert [(line.op, line.result) for line in lines] == [("trim", "failed: archive")]


def test_killed_after_the_first_archive_entry_leaves_the_session_untouched(store, archive, ref):
    original = write(store, ref, build_state(6, response_chars=600))
    child = textwrap.dedent(f"""
        from pathlib import Path
        from reprise.core.archive import Archive
        from reprise.core.paths import SessionRef
        from reprise.core.sources.fractal.store import Store
        from reprise.core.sources.fractal.trim import TrimOptions, trim_session
        store = Store(Path({str(store.root)!r}))
        ref = SessionRef({ref.workspace_key!r}, {ref.session_id!r}, "fractal")
        trim_session(store, Archive(store.paths), ref, TrimOptions(cap_replies=10, spare=0), now={OLD_NOW})
    """)
    env = {**os.environ, "REPRISE_FAULTS": "after_archive=kill"}
    assert subprocess.run([sys.executable, "-c", child], env=env).returncode == -9
    assert store.paths.session_file(ref).read_bytes() == original
    assert [e.op for e in archive.entries(ref)] == ["trim-original"]


def test_dry_run_writes_nothing(store, archive, ref):
    original = write(store, ref, build_state(6, response_chars=600))
    result = trim_session(store, archive, ref, TrimOptions(cap_replies=10, spare=0), dry_run=True, now=OLD_NOW)
    assert result.plan.changed and not result.applied and result.dry_run
    assert store.paths.session_file(ref).read_bytes() == original
    assert not archive.directory(ref).exists()
    assert AuditLog(store.paths).read([ref.workspace_key]) == []


def test_fork_writes_a_new_trimmed_session_and_leaves_the_original_alone(store, archive, ref):
    original = write(store, ref, build_state(8, response_chars=600))
    store.write_meta(ref, SessionMeta(title="Login bug"))
    result = trim_session(store, archive, ref, TrimOptions(fold=2), fork=True, now=OLD_NOW)
    assert result.forked and result.ref != ref and result.ref.workspace_key == ref.workspace_key
    assert store.paths.session_file(ref).read_bytes() == original
    assert archive.entries(ref) == []
    fork_bytes = store.paths.session_file(result.ref).read_bytes()
    assert_fractal_clean(fork_bytes, result.ref.session_id)
    assert fork_bytes == result.plan.data
    assert store.read_meta(result.ref).title == "Login bug (trimmed)"
    assert [e.op for e in archive.entries(result.ref)] == ["trim-original", "trim"]


def test_files_with_codec_warnings_are_refused_unless_forced(store, archive, ref):
    data = encode(build_state(6, response_chars=600)).replace(b'"schema_version": 1', b'"schema_version": 1.0')
    path = store.paths.session_file(ref)
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    with pytest.raises(ProblemFileError):
        trim_session(store, archive, ref, TrimOptions(cap_replies=10, spare=0), now=OLD_NOW)
    assert path.read_bytes() == data
    forced = trim_session(store, archive, ref, TrimOptions(cap_replies=10, spare=0), force=True, now=OLD_NOW)
    assert forced.applied and archive.read(ref, archive.entries(ref)[0].digest) == data


def test_a_recent_pending_turn_blocks_the_trim_unless_forced(store, archive, ref):
    original = write(store, ref, build_state(6, pending_last=True, response_chars=600))
    just_after = (BASE + timedelta(minutes=5, seconds=31)).timestamp() + 60
    with pytest.raises(PendingTurnError, match="pending turn"):
        trim_session(store, archive, ref, TrimOptions(cap_replies=10), now=just_after)
    assert store.paths.session_file(ref).read_bytes() == original
    assert trim_session(store, archive, ref, TrimOptions(cap_replies=10), now=just_after, force=True).applied


def test_a_change_on_disk_after_loading_stops_the_trim_before_archiving(store, archive, ref):
    write(store, ref, build_state(6, response_chars=600))
    loaded = store.load(ref)
    plan = plan_trim(loaded.data, TrimOptions(cap_replies=10, spare=0))
    changed = encode(build_state(7))
    store.paths.session_file(ref).write_bytes(changed)
    with pytest.raises(ChangedOnDiskError):
        apply_trim(store, archive, loaded, plan, now=OLD_NOW)
    assert store.paths.session_file(ref).read_bytes() == changed
    assert archive.entries(ref) == []


def test_audit_lines_carry_options_digests_and_counts_but_no_message_text(store, archive, ref):
    secret = "SECRET-c0ffee-TEXT"
    write(store, ref, build_state(8, response_chars=600, secret=secret))
    store.write_meta(ref, SessionMeta(title=f"title {secret}"))
    trim_session(store, archive, ref, TrimOptions(fold=2, cap_replies=50, keep_history=3), now=OLD_NOW)
    fork = trim_session(store, archive, ref, TrimOptions(drop=("1",)), fork=True, now=OLD_NOW)

    restore_session(store, archive, ref, now=OLD_NOW)
    trash = Trash(store)
    trash.remove(fork.ref, now=OLD_NOW)
    trash.restore(fork.ref, now=OLD_NOW)
    trash.remove(fork.ref, now=OLD_NOW)
    trash.purge([ref.workspace_key], confirmed=True, now=OLD_NOW)
    catalog = Catalog([FractalListing(store)], store.root.parent / "cache")
    rows = catalog.refresh([ref.workspace_key])
    catalog.load_details(rows)
    trash.prune(select_prune(rows, PruneOptions(older_than=3600), now=OLD_NOW), confirmed=True, now=OLD_NOW)
    trash.restore(ref, now=OLD_NOW)
    records_digest = archive.entries(ref)[1].digest
    moved = relink(store, ref.workspace_key, store.root.parent / "moved", now=OLD_NOW)
    raw = store.paths.audit_file(ref.workspace_key).read_text()
    raw_new = store.paths.audit_file(moved.new_key).read_text()
    for text in (raw, raw_new):
        assert secret not in text and "message" not in text and "reply" not in text and "title" not in text
    lines = [json.loads(line) for line in raw.splitlines()]
    assert [line["op"] for line in lines] == ["trim", "trim", "restore", "rm", "trash-restore", "rm", "purge",
                                              "prune", "trash-restore", "relink"]
    first = lines[0]
    assert set(first) >= {"time", "op", "session_id", "options", "digests", "counts", "result"}
    assert first["options"]["fold"] == 2 and first["result"] == "ok"
    assert first["digests"][0] == records_digest
    assert first["counts"]["folded"] == 6 and first["counts"]["history_removed"] == 5


def test_usage_figures_of_kept_turns_survive_a_cap():
    state = build_state(6, response_chars=900)
    plan = plan_trim(state, TrimOptions(cap_replies=10, spare=0))
    assert [t.agent.usage for t in plan.state.turns if t.agent] == [t.agent.usage for t in state.turns if t.agent]


def test_a_dry_run_is_never_refused_but_says_what_applying_needs(store, archive, ref):
    write(store, ref, build_state(6, pending_last=True, response_chars=600))
    soon = (BASE + timedelta(minutes=6)).timestamp()
    result = trim_session(store, archive, ref, TrimOptions(cap_replies=10), dry_run=True, now=soon)
    assert not result.applied and any("--force" in note for note in result.plan.notes)


# --- large files: the original is copied into the archive, never held --------------------------------

def test_a_trim_does_not_hold_the_files_bytes_and_archives_the_file_itself(store, archive, ref):
    original = write(store, ref, build_state(8, response_chars=600))
    result = trim_session(store, archive, ref, TrimOptions(cap_replies=100, spare=0), dry_run=True, now=OLD_NOW)
    assert result.plan.original is None
    assert result.plan.size_before == len(original)
    assert result.plan.original_digest == hashlib.sha256(original).hexdigest()
    applied = trim_session(store, archive, ref, TrimOptions(cap_replies=100, spare=0), now=OLD_NOW)
    assert applied.plan.data == result.plan.data and applied.plan.records == result.plan.records
    assert archive.read(ref, archive.entries(ref)[0].digest) == original


def test_a_session_file_changed_while_it_is_copied_into_the_archive_stops_the_trim(store, archive, ref, monkeypatch):
    """Another writer replaces the file between the version check and the archive copy: the copy does
    not have the digest the plan was made from, so nothing is archived or written."""
    write(store, ref, build_state(8, response_chars=600))
    changed = encode(build_state(9, response_chars=600))
    checked = store.current_version

    def then_changed(path):
        version = checked(path)
        store.paths.session_file(ref).write_bytes(changed)
        monkeypatch.setattr(store, "current_version", checked)
        return version

    monkeypatch.setattr(store, "current_version", then_changed)
    with pytest.raises(ChangedOnDiskError, match="changed on disk while Reprise archived it"):
        trim_session(store, archive, ref, TrimOptions(cap_replies=100, spare=0), now=OLD_NOW)
    assert store.paths.session_file(ref).read_bytes() == changed
    assert archive.entries(ref) == []
    assert [p.name for p in archive.directory(ref).iterdir()] == []   # no entry, no temp file
    lines = AuditLog(store.paths).read([ref.workspace_key])
    assert [(line.op, line.result) for line in lines] == [("trim", "failed: changed_on_disk")]


def test_a_fork_of_a_session_removed_after_loading_is_refused_with_nothing_written(store, archive, ref, monkeypatch):
    write(store, ref, build_state(8, response_chars=600))
    load = store.load

    def then_removed(*args, **kwargs):
        loaded = load(*args, **kwargs)
        store.paths.session_file(ref).unlink()
        return loaded

    monkeypatch.setattr(store, "load", then_removed)
    with pytest.raises(ChangedOnDiskError, match="was removed since Reprise read it"):
        trim_session(store, archive, ref, TrimOptions(fold=2), fork=True, fork_id="f" * 32, now=OLD_NOW)
    fork = SessionRef(ref.workspace_key, "f" * 32, "fractal")
    assert not store.exists(fork) and archive.entries(fork) == []


def test_a_session_file_linked_inside_the_state_root_is_archived_through_its_link(store, archive, ref):
    original = write(store, ref, build_state(8, response_chars=600))
    path = store.paths.session_file(ref)
    real = path.parent / "elsewhere" / "real.json"
    real.parent.mkdir()
    path.rename(real)
    path.symlink_to(real)
    trim_session(store, archive, ref, TrimOptions(cap_replies=100, spare=0), now=OLD_NOW)
    assert archive.read(ref, archive.entries(ref)[0].digest) == original
