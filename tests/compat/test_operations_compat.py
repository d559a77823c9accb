"""Every file Reprise's operations write loads in the real Fractal with no warning: trims of
each kind, forks, restores, turns Reprise records itself (with history evictions), and
sessions moved back from the trash. Fractal's own re-save of each gives the same bytes."""

from __future__ import annotations

import pytest

from reprise.core import config
from reprise.core.paths import SessionRef
from reprise.core.service import Service
from reprise.core.sources.fractal.codec import decode
from reprise.core.sources.fractal.summary import render_summary
from reprise.core.trimming import TrimOptions
from tests import factories

pytestmark = pytest.mark.compat


@pytest.fixture
def setup(fractal, tmp_path, isolated_paths):
    workspace = tmp_path / "project"
    workspace.mkdir()
    statuses = ["succeeded", "failed", "max_iterations", "interrupted"]
    turns = [{"message": f"step {i}: " + "please do the thing " * 20, "status": statuses[i % 4],
              "response": "I did a long thing. " * (40 + i), "files_read": ["a.py", "b.py"],
              "changed_files": ["a.py"] if i % 2 else [], "commands_run": ["pytest -q"],
              "error": "boom" if statuses[i % 4] == "failed" else None,
              "trace": factories.run_trace(i, steps=1)} for i in range(24)]
    written = fractal.one("write_turns", workspace=str(workspace), turns=turns)
    assert "raised" not in written
    service = Service(config.load(state_dir=str(isolated_paths)), workspace=workspace)
    return service, SessionRef(service.workspace_key, written["session_id"], "fractal"), workspace


def assert_fractal_loads_it_cleanly(fractal, service: Service, ref: SessionRef, workspace) -> None:
    data = service.sources["fractal"].store.paths.session_file(ref).read_bytes()
    loaded = fractal.one("load", workspace=str(workspace), session_id=ref.session_id)
    assert "raised" not in loaded, loaded.get("traceback")
    assert loaded["warnings"] == []
    state = decode(data, path="x", expected_id=ref.session_id).state
    assert loaded["turns"] == len(state.turns)
    if len(state.history) <= 20:
        assert loaded["dump"].encode("latin-1") == data  # Fractal would save the very same bytes
    summary = fractal.one("summary", workspace=str(workspace), session_id=ref.session_id)
    assert summary["summary"] == render_summary(state.summary)


@pytest.mark.parametrize("options", [
    TrimOptions(cap_replies=200, spare=2),
    TrimOptions(fold=5),
    TrimOptions(drop=("1", "7", "24")),
    TrimOptions(keep_history=3),
    TrimOptions(fit=16_000),
], ids=["cap", "fold", "drop", "keep-history", "fit"])
def test_each_trim_writes_a_file_fractal_loads_and_restore_gives_it_back(fractal, setup, options):
    service, ref, workspace = setup
    original = service.sources["fractal"].store.paths.session_file(ref).read_bytes()
    result = service.trim(ref, options)
    assert result.applied
    assert_fractal_loads_it_cleanly(fractal, service, ref, workspace)
    service.restore(ref)
    assert service.sources["fractal"].store.paths.session_file(ref).read_bytes() == original


def test_folding_twice_and_a_fork_load_in_fractal(fractal, setup):
    service, ref, workspace = setup
    service.trim(ref, TrimOptions(fold=10))
    service.trim(ref, TrimOptions(fold=4))
    assert_fractal_loads_it_cleanly(fractal, service, ref, workspace)
    fork = service.trim(ref, TrimOptions(cap_replies=100), fork=True)
    assert_fractal_loads_it_cleanly(fractal, service, fork.ref, workspace)


def test_turns_reprise_records_load_in_fractal_and_fractal_continues_them(fractal, setup):
    service, ref, workspace = setup
    for message in ("first from reprise", "second from reprise"):
        assert service.send_turn(ref, message, agent="echo").outcome.status == "succeeded"
    assert len(service.sources["fractal"].store.load(ref).state.history) == 20  # 26 turns, evictions archived
    assert_fractal_loads_it_cleanly(fractal, service, ref, workspace)
    more = fractal.one("write_turns", workspace=str(workspace), session_id=ref.session_id,
                       turns=[{"message": "back in fractal", "status": "succeeded", "response": "ok"}])
    assert "raised" not in more
    state = service.sources["fractal"].store.load(ref).state
    assert [t.user.message for t in state.turns[-3:]] == ["first from reprise", "second from reprise",
                                                          "back in fractal"]


def test_a_session_back_from_the_trash_loads_in_fractal(fractal, setup):
    service, ref, workspace = setup
    service.remove(ref)
    missing = fractal.one("load", workspace=str(workspace), session_id=ref.session_id)
    assert missing["turns"] == 0
    service.trash_restore(ref)
    assert_fractal_loads_it_cleanly(fractal, service, ref, workspace)
