"""One rule for "is this turn still running" (core/liveness.py), asked by every guard.

A months-old pending turn never looks running again because Reprise rewrote the file (trim,
restore), renamed the session or someone copied the file; a pending turn Fractal's own TUI
started an hour ago is live for every guard (no Reprise timeout bounds it); a turn Reprise
itself runs is live exactly while its process is, then for its timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reprise.core import config, contract, liveness
from reprise.core.errors import PendingTurnError
from reprise.core.paths import SessionRef
from reprise.core.retention import PruneOptions
from reprise.core.service import Service
from reprise.core.sources.fractal import liveness as fractal_liveness
from reprise.core.sources.fractal.codec import encode
from reprise.core.sources.fractal.models import SessionState
from reprise.core.trimming import TrimOptions

from ..tui.conftest import build_app, settle

DAY = 86400
SIX_MONTHS = 182 * DAY
SLEEPER = textwrap.dedent("""
    import sys, time
    sys.stdin.read()
    time.sleep(float(sys.argv[1]))
    print("woke up")
""")


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def fractal_state(session_id: str, *, turns: int, pending: int, started: float) -> SessionState:
    """Fractal's shape: turn `pending` (from 0) never finished; turn i started `started` + i minutes."""
    summary, history = [], []
    for i in range(turns):
        turn_id = f"turn-{i:032x}"
        moment = started + i * 60
        done = i != pending
        summary.append({"turn_id": turn_id, "user": {"message": f"message {i}"},
                        "agent": {"status": "succeeded", "response": f"reply {i} " + "word " * 60,
                                  "files_read_count": 0, "files_changed_count": 0, "commands_run_count": 0,
                                  "error": None, "usage": None} if done else None})
        history.append({"turn_id": turn_id, "user_message": f"message {i}",
                        "status": "succeeded" if done else "pending",
                        "files_read": [], "files_modified": [], "commands_run": [], "trace": None, "error": None,
                        "created_at": iso(moment), "updated_at": iso(moment + (30 if done else 0))})
    return SessionState.model_validate({"schema_version": 1, "session_id": session_id,
                                        "summary": {"turns": summary}, "history": history})


def make_service(tmp_path: Path, toml: str = "") -> Service:
    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    (tmp_path / "config.toml").write_text(toml)
    return Service(config.load(state_dir=str(tmp_path / "state")), workspace=folder)


def put(service: Service, state: SessionState, *, mtime: float) -> SessionRef:
    ref = SessionRef(service.workspace_key, state.session_id, "fractal")
    path = service.sources["fractal"].store.paths.session_file(ref)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(state))
    os.utime(path, (mtime, mtime))
    service.sources["fractal"].store.record_workspace(ref.workspace_key, service.workspace)
    return ref


def months_old(service: Service, session_id: str = "a" * 32) -> SessionRef:
    """A session whose turn 3 of 8 was left pending by a crash six months ago."""
    started = time.time() - SIX_MONTHS
    return put(service, fractal_state(session_id, turns=8, pending=2, started=started), mtime=started + 3600)


PENDING_ID = f"turn-{2:032x}"


def stale_ids(service: Service, ref: SessionRef) -> list[str]:
    return [turn_id for _, turn_id, _ in service.stale_pending(ref)]


# --- a months-old pending turn stays dead -------------------------------------------------------------

def copy_in_place(service: Service, ref: SessionRef) -> None:
    path = service.sources["fractal"].store.paths.session_file(ref)
    spare = path.with_name("copy.bak")
    shutil.copyfile(path, spare)  # a plain copy: the file's time is now
    shutil.copyfile(spare, path)
    spare.unlink()


AFTER = {
    "restore": lambda service, ref: service.restore(ref),
    "trim": lambda service, ref: service.trim(ref, TrimOptions(cap_replies=40, spare=0)),
    "rename": lambda service, ref: service.rename(ref, "renamed"),
    "copy": copy_in_place,
}


@pytest.mark.parametrize("keep_history", [2, 0], ids=["a-later-turn-dates-it", "only-the-archive-dates-it"])
@pytest.mark.parametrize("operation", sorted(AFTER))
def test_a_months_old_pending_turn_is_not_live_after_reprise_rewrites_renames_or_a_copy(
        tmp_path, operation, keep_history):
    service = make_service(tmp_path)
    ref = months_old(service)
    service.trim(ref, TrimOptions(keep_history=keep_history))  # drops the pending turn's history entry
    assert PENDING_ID not in {entry.turn_id for entry in service.sources["fractal"].store.load(ref).state.history}
    AFTER[operation](service, ref)
    store = service.sources["fractal"].store
    assert time.time() - store.load(ref).version.mtime_ns / 1e9 < 3600, "the file is freshly written"
    result = service.trim(ref, TrimOptions(cap_replies=10, spare=0))  # not refused
    assert result.applied
    assert stale_ids(service, ref) == [PENDING_ID]
    verdicts = fractal_liveness.judged(store, store.load(ref), now=time.time())
    assert [(turn.turn_id, turn.live) for turn in verdicts] == [(PENDING_ID, False)], verdicts


def test_every_guard_lets_a_months_old_pending_turn_through_after_a_reprise_trim(tmp_path):
    service = make_service(tmp_path)
    ref = months_old(service)
    service.trim(ref, TrimOptions(keep_history=2))
    service.check_sendable(ref, "next message")  # send
    assert service.trim(ref, TrimOptions(cap_replies=10, spare=0)).applied  # trim
    assert service.restore(ref).applied  # restore
    pruned = service.prune(PruneOptions(older_than=30 * DAY), confirmed=True)  # prune
    assert pruned.moved == [ref], contract.dump(contract.prune(pruned))
    service.trash_restore(ref)
    service.remove(ref)  # rm
    service.trash_restore(ref)
    assert service.mark_stale_interrupted(ref) == [PENDING_ID]  # recover / the TUI's x
    assert service.sources["fractal"].store.load(ref).state.turns[2].agent.status == "interrupted"


# --- a pending turn Fractal's own TUI started an hour ago is live ----------------------------------

def an_hour_old(service: Service, session_id: str = "b" * 32) -> SessionRef:
    started = time.time() - 3600 - 7 * 60
    return put(service, fractal_state(session_id, turns=8, pending=7, started=started), mtime=time.time() - 3600)


def test_every_guard_treats_a_pending_turn_fractal_started_an_hour_ago_as_running(tmp_path):
    service = make_service(tmp_path)
    ref = an_hour_old(service)
    other = months_old(service, "c" * 32)
    before = service.sources["fractal"].store.paths.session_file(ref).read_bytes()
    with pytest.raises(PendingTurnError):
        service.check_sendable(ref, "next message")  # send
    with pytest.raises(PendingTurnError):
        service.send_turn(ref, "next message", agent="echo")
    assert service.stale_pending(ref) == [] and service.mark_stale_interrupted(ref) == []  # recover / x
    with pytest.raises(PendingTurnError, match="Reprise did not start"):
        service.trim(ref, TrimOptions(cap_replies=10, spare=0))  # trim
    preview = service.trim(ref, TrimOptions(cap_replies=10, spare=0), dry_run=True)
    assert any("--force" in note for note in preview.plan.notes)
    with pytest.raises(PendingTurnError):
        service.remove(ref)  # rm
    pruned = service.prune(PruneOptions(older_than=60), confirmed=True)  # prune
    assert ref not in pruned.moved and other in pruned.moved
    (protected,) = [c for c in pruned.selection.protected if c.ref == ref]
    assert "live pending turn" in protected.reason
    with pytest.raises(PendingTurnError):
        service.relink(str(service.workspace), str(tmp_path))  # relink
    assert service.sources["fractal"].store.paths.session_file(ref).read_bytes() == before
    assert service.trim(ref, TrimOptions(cap_replies=10, spare=0), force=True).applied
    with pytest.raises(PendingTurnError):
        service.restore(ref)  # restore


def test_the_same_turn_is_live_for_24_hours_from_its_own_start_and_not_after(tmp_path):
    service = make_service(tmp_path, "[agent]\ntimeout = 60\n")
    ref = an_hour_old(service)
    loaded = service.sources["fractal"].store.load(ref)
    started = datetime.fromisoformat(loaded.state.history[-1].created_at).timestamp()
    store = service.sources["fractal"].store
    assert [t.live for t in fractal_liveness.judged(store, loaded, now=started + DAY - 60)] == [True]
    assert [t.live for t in fractal_liveness.judged(store, loaded, now=started + DAY + 60)] == [False]


async def test_the_tui_neither_calls_an_hour_old_fractal_turn_gone_nor_marks_it_with_x(tmp_path):
    service = make_service(tmp_path)
    ref = an_hour_old(service)
    app = build_app(service, clock=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.screen.detail is not None and app.screen.detail.ref == ref
        assert "agent is gone" not in str(app.screen.query_one("#detail-banner").render())
        await app.screen.run_action("recover")
        await settle(pilot)
    assert service.sources["fractal"].store.load(ref).state.turns[-1].agent is None


# --- a turn Reprise runs is live while its process is -----------------------------------------------

@pytest.fixture
def sleeping_agent(tmp_path):
    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER)
    return (f'[agent]\nbackend = "command"\ntimeout = 30\n'
            f'turn = ["{sys.executable}", "{script}", "25"]\n')


def test_a_turn_reprise_runs_is_live_while_its_process_lives_then_for_its_timeout(tmp_path, sleeping_agent):
    service = make_service(tmp_path, sleeping_agent)
    ref = service.new_session("running")
    env = {**os.environ, "REPRISE_CONFIG": str(tmp_path / "config.toml")}
    child = subprocess.Popen([sys.executable, "-m", "reprise.tui.cli", "--state-dir", str(service.state_root),
                              "--workspace", str(service.workspace), "send", ref.session_id, "--message", "work"],
                             env=env, cwd=service.workspace, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not service.sources["fractal"].store.load(ref).state.turns and time.monotonic() < deadline:
            time.sleep(0.05)
        loaded = service.sources["fractal"].store.load(ref)
        assert loaded.state.turns[-1].agent is None
        far = time.time() + 3 * DAY  # past the timeout and the 24 h cap: the process still runs it
        (verdict,) = fractal_liveness.judged(service.sources["fractal"].store, loaded, now=far)
        assert verdict.live and f"Reprise process {child.pid}" in verdict.why
        assert service.stale_pending(ref) == []
        with pytest.raises(PendingTurnError):
            service.remove(ref)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    loaded = service.sources["fractal"].store.load(ref)
    assert loaded.state.turns[-1].agent is None  # left pending by the killed Reprise
    (young,) = fractal_liveness.judged(service.sources["fractal"].store, loaded, now=time.time())
    assert young.live and "ended" in young.why  # its agent may linger until the timeout
    (late,) = fractal_liveness.judged(service.sources["fractal"].store, loaded, now=time.time() + 31)
    assert not late.live


def test_a_run_record_whose_pid_now_belongs_to_another_process_does_not_keep_a_turn_live(tmp_path):
    record = liveness.RunRecord(os.getpid(), socket.gethostname(), None, -1, time.time(), 30.0)
    assert record.process_alive() is False  # same pid, another start time: the pid was reused
    assert liveness.RunRecord(os.getpid(), socket.gethostname(), None, None, time.time(), 30).process_alive()
    assert liveness.RunRecord(os.getpid(), "another-host", None, None, time.time(), 30).process_alive() is None


def test_a_hostile_run_record_is_ignored(tmp_path):
    service = make_service(tmp_path)
    ref = an_hour_old(service)
    runs = service.sources["fractal"].store.paths.runs_dir(ref)
    runs.mkdir(parents=True)
    (runs / "1-x.json").write_text('{"format": "reprise.run/1", "pid": 0, "started_ts": 1, "timeout": 1}')
    (runs / "2-x.json").write_text("{torn")
    (runs / "5-x.json").write_text(json.dumps({"format": "reprise.run/1", "pid": 1 << 40, "host": socket.gethostname(),
                                               "started_ts": time.time() - 2 * 3600, "timeout": 30}))
    (runs / "3-x.json").symlink_to("/etc/passwd")
    os.mkfifo(runs / "4-x.json")
    assert liveness.run_records(service.sources["fractal"].store.paths, ref) == []
    store = service.sources["fractal"].store
    (verdict,) = fractal_liveness.judged(store, store.load(ref), now=time.time())
    assert verdict.live and "Reprise did not start" in verdict.why


def test_a_runs_folder_leading_out_of_the_state_root_is_neither_read_nor_written(tmp_path):
    service = make_service(tmp_path)
    ref = an_hour_old(service)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "1-old.json"
    victim.write_text(json.dumps({"format": "reprise.run/1", "pid": 4194303, "host": socket.gethostname(),
                                  "started_ts": 1, "timeout": 1}))  # long dead: Reprise would tidy it away
    runs = service.sources["fractal"].store.paths.runs_dir(ref)
    runs.parent.mkdir(parents=True)
    runs.symlink_to(outside)
    assert liveness.run_records(service.sources["fractal"].store.paths, ref) == []
    with liveness.reprise_run(service.sources["fractal"].store.paths, ref, timeout=30):
        assert sorted(p.name for p in outside.iterdir()) == ["1-old.json"]
    assert victim.exists()


def test_a_pending_turn_dated_in_the_far_future_is_judged_by_the_other_evidence(tmp_path):
    service = make_service(tmp_path)
    started = time.time() - SIX_MONTHS
    state = fractal_state("e" * 32, turns=3, pending=2, started=started)
    state.history[-1].created_at = state.history[-1].updated_at = "9999-01-01T00:00:00+00:00"
    ref = put(service, state, mtime=started + 3600)
    store = service.sources["fractal"].store
    (verdict,) = fractal_liveness.judged(store, store.load(ref), now=time.time())
    assert not verdict.live and "the file last changed" in verdict.why
    assert service.trim(ref, TrimOptions(cap_replies=10, spare=0)).applied  # not refused until the year 9999
