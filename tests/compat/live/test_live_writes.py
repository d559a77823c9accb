"""After every kind of Reprise write, a real Fractal turn continues the session: Fractal loads it
with no warning, runs the turn, and keeps every earlier turn. All the turns of a test run in
one namespace, against the fake model server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reprise.core import config
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.sources.fractal.codec import decode
from reprise.core.sources.fractal.models import SessionState
from reprise.core.trimming import TrimOptions

from . import sessions
from .harness import Turn

pytestmark = [pytest.mark.compat, pytest.mark.slow]

TURNS = 8
TRIMS = {
    "keep-history": TrimOptions(keep_history=3),
    "cap-replies": TrimOptions(cap_replies=120, spare=2),
    "fold": TrimOptions(fold=3),
    "drop": TrimOptions(drop=("2", "5")),
    "fit": TrimOptions(fit=15_500),
}


def state_of(service: Service, ref: SessionRef) -> SessionState:
    return service.sources["fractal"].store.load(ref).state


def assert_continued(fractal, result, service: Service, ref: SessionRef, before: SessionState, label: str) -> None:
    """The turn succeeded on this very session, with no warning, and every earlier turn is intact."""
    assert result.returncode == 0 and result.output.get("status") == "succeeded", f"{label}: {result.describe()}"
    assert result.output["session_id"] == ref.session_id, label
    assert "warning" not in result.stderr.lower(), f"{label}: {result.stderr[-2000:]}"
    path = service.sources["fractal"].store.paths.session_file(ref)
    after = decode(path.read_bytes(), path=str(path), expected_id=ref.session_id).state
    assert len(after.turns) == len(before.turns) + 1, f"{label}: Fractal did not continue the session"
    assert [t.model_dump() for t in after.turns[:-1]] == [t.model_dump() for t in before.turns], label
    new = after.turns[-1]
    assert new.user.message == result.turn.message and new.agent.status == "succeeded", label
    expected_history = [h.turn_id for h in before.history] + [new.turn_id]
    assert [h.turn_id for h in after.history] == expected_history[-20:], label
    loaded = fractal.one("load", workspace=str(result.turn.workspace), session_id=ref.session_id)
    assert loaded["warnings"] == [] and loaded["turns"] == len(after.turns), f"{label}: {loaded}"


def died_long_ago(service: Service, ref: SessionRef) -> None:
    """Date the pending turn two days back: a turn Reprise did not start is live for 24 h from its
    own `created_at` (core/liveness.py), so only an old one is stale."""
    loaded = service.sources["fractal"].store.load(ref)
    when = (datetime.now(UTC) - timedelta(days=2)).isoformat()
    pending = [entry for entry in loaded.state.history if entry.status == "pending"]
    assert pending
    for entry in pending:
        entry.created_at = entry.updated_at = when
    service.sources["fractal"].store.save(ref, loaded.state, expected=loaded.version)


def test_fractal_continues_every_session_reprise_writes(fractal, live, isolated_paths, tmp_path):
    workspace = live.root / "ws-main"
    workspace.mkdir()
    service = Service(config.load(), workspace=workspace)
    key = service.workspace_key

    def fixture(count: int = TURNS, pending: bool = False) -> SessionRef:
        session_id = sessions.write(fractal, workspace, count)
        if pending:
            more = fractal.one("write_turns", workspace=str(workspace), session_id=session_id,
                               turns=[{"message": "a turn whose agent died", "status": None}])
            assert "raised" not in more
        return SessionRef(key, session_id, "fractal")

    targets: dict[str, tuple[SessionRef, object]] = {"new": (service.new_session(title="from reprise"), workspace)}
    for kind, options in TRIMS.items():
        for fork in (False, True):
            result = service.trim(fixture(), options, fork=fork)
            assert result.applied and result.forked == fork, kind
            targets[f"trim {kind}{' --fork' if fork else ''}"] = (result.ref, workspace)
    restored = fixture()
    service.trim(restored, TrimOptions(fold=3))
    service.restore(restored)
    targets["restore"] = (restored, workspace)
    sent = fixture()
    assert service.send_turn(sent, "a turn Reprise records itself", agent="echo").outcome.status == "succeeded"
    targets["send"] = (sent, workspace)
    stale = fixture(pending=True)
    died_long_ago(service, stale)
    assert service.mark_stale_interrupted(stale)
    targets["recover"] = (stale, workspace)
    old, new = live.root / "ws-old", live.root / "ws-new"  # same length: the same fixed prompt text
    old.mkdir()
    moved_id = sessions.write(fractal, old, TURNS)
    old.rename(new)
    relinked = service.relink(str(old), str(new))
    assert moved_id in relinked.sessions
    targets["relink"] = (SessionRef(workspace_key(str(new)), moved_id, "fractal"), new)

    before = {label: state_of(service, ref) for label, (ref, _) in targets.items()}
    assert before["recover"].turns[-1].agent.status == "interrupted"
    turns = [Turn(ws, f"Continue after {label}: summarise where we are.", ref.session_id)
             for label, (ref, ws) in targets.items()]
    results = live.run(turns)
    for (label, (ref, _)), result in zip(targets.items(), results, strict=True):
        assert_continued(fractal, result, service, ref, before[label], label)


def test_a_turn_that_reaches_max_iterations_takes_the_fallback_call_and_is_recorded(fractal, live):
    workspace = live.root / "ws-loop"
    workspace.mkdir()
    session_id = sessions.write(fractal, workspace, 2)
    [result] = live.run([Turn(workspace, "Keep going until you are stopped.", session_id, max_iterations=2)],
                        server_env={"FAKE_MODE": "loop"})
    assert result.returncode == 2, result.describe()  # Fractal's exit status for "max iterations reached"
    assert result.output["status"] == "max_iterations", result.describe()
    assert len(result.requests) == 3  # two action calls, then the fallback extraction
    service = Service(config.load(), workspace=workspace)
    state = service.sources["fractal"].store.load(SessionRef(service.workspace_key, session_id, "fractal")).state
    assert state.turns[-1].agent.status == "max_iterations"
    assert "fallback" in state.turns[-1].agent.error
