"""Restore, exactly: `restore --all` after a trim, a restore and the same trim again undoes the
newest trim (the identical index entries of the two trims are told apart by position), and a
restore that leaves more history entries than Fractal keeps says so and where they are kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reprise.core import config, contract, faults
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.sources.fractal.codec import encode
from reprise.core.sources.fractal.models import FRACTAL_MAX_HISTORY
from reprise.core.trimming import TrimOptions
from reprise.tui import cli

from ..core.test_trim import build_state

RACE_CHILD = Path(__file__).with_name("race_child.py")


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "project").mkdir()
    return tmp_path / "project"


def session(workspace: Path, tmp_path: Path, turns: int = 8, **kwargs) -> tuple[Service, SessionRef, bytes]:
    service = Service(config.load(state_dir=str(tmp_path / "state")), workspace=workspace)
    ref = SessionRef(workspace_key(workspace), "0123456789abcdef0123456789abcdef", "fractal")
    path = service.sources["fractal"].store.paths.session_file(ref)
    path.parent.mkdir(parents=True)
    path.write_bytes(encode(build_state(turns, response_chars=600, **kwargs)))
    service.sources["fractal"].store.record_workspace(ref.workspace_key, workspace)
    return service, ref, path.read_bytes()


def test_restore_all_after_trim_restore_and_the_same_trim_again_undoes_the_newest_trim(workspace, tmp_path):
    service, ref, original = session(workspace, tmp_path)
    options = TrimOptions(cap_replies=10, spare=0)
    trimmed = service.trim(ref, options)
    service.restore(ref)
    again = service.trim(ref, options)
    assert again.plan.records_digest == trimmed.plan.records_digest  # the same index entry, twice
    assert service.can_undo_trim(ref)
    result = service.restore(ref, all_trims=True)
    assert [step.mode for step in result.steps] == ["exact"]
    assert service.sources["fractal"].store.paths.session_file(ref).read_bytes() == original
    assert not service.can_undo_trim(ref)


def test_the_cli_restore_all_of_a_repeated_trim_succeeds(workspace, tmp_path, capsys):
    service, ref, original = session(workspace, tmp_path)
    state = ["--state-dir", str(tmp_path / "state")]
    for argv in (["trim", ref.session_id, "--cap-replies", "10", "--spare", "0"], ["restore", ref.session_id],
                 ["trim", ref.session_id, "--cap-replies", "10", "--spare", "0"]):
        assert cli.main([*state, *argv]) == 0
    capsys.readouterr()
    assert cli.main([*state, "restore", ref.session_id, "--all"]) == 0
    out, err = capsys.readouterr()
    assert "undone already" not in out + err and "Restored 1 archive entry" in out
    assert service.sources["fractal"].store.paths.session_file(ref).read_bytes() == original


def test_a_trim_killed_before_its_write_then_made_again_is_undone_once(workspace, tmp_path):
    service, ref, original = session(workspace, tmp_path)
    env = {**os.environ, faults.ENV: "after_index_append=kill", "WRITER_KILL_AT": "2",
           "REPRISE_CACHE_DIR": str(tmp_path / "child-cache")}
    child = subprocess.run([sys.executable, str(RACE_CHILD), str(service.state_root), str(workspace), ref.session_id,
                            "trim"], env=env, capture_output=True, timeout=120, check=False)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    path = service.sources["fractal"].store.paths.session_file(ref)
    assert path.read_bytes() == original  # the killed trim never wrote
    killed = [entry.op for entry in service.archive_entries(ref)]
    assert killed[-2:] == ["trim-original", "trim"]
    service.trim(ref, TrimOptions(cap_replies=20, spare=0))  # race_child's trim, made again
    assert service.archive_entries(ref)[-1].digest == service.archive_entries(ref)[len(killed) - 1].digest
    result = service.restore(ref, all_trims=True)
    assert len(result.steps) == 1
    assert service.sources["fractal"].store.paths.session_file(ref).read_bytes() == original


def grown_past_fractal(workspace: Path, tmp_path: Path) -> tuple[Service, SessionRef, list[str]]:
    """25 turns (Fractal's 20 history entries), trimmed to 5 entries, then 10 turns more."""
    service, ref, _ = session(workspace, tmp_path, turns=25)
    before = [entry.turn_id for entry in service.sources["fractal"].store.load(ref).state.history]
    assert len(before) == FRACTAL_MAX_HISTORY
    service.trim(ref, TrimOptions(keep_history=5))
    for number in range(10):
        service.send_turn(ref, f"turn {number} after the trim", agent="echo")
    assert len(service.sources["fractal"].store.load(ref).state.history) == 15
    return service, ref, before


def test_a_restore_leaving_more_history_than_fractal_keeps_says_so_and_where_the_rest_is_kept(workspace, tmp_path):
    service, ref, before = grown_past_fractal(workspace, tmp_path)
    preview = service.restore(ref, dry_run=True)
    assert preview.beyond_fractal is not None and preview.beyond_fractal.kept_in is None
    assert any("would hold 30 history entries" in note for note in preview.notes)

    result = service.restore(ref)
    history = service.sources["fractal"].store.load(ref).state.history
    assert len(history) == 30
    beyond = result.beyond_fractal
    dropped = [entry.turn_id for entry in history[:-FRACTAL_MAX_HISTORY]]
    assert beyond is not None and beyond.dropped == dropped == before[:10]
    (note,) = [note for note in result.notes if "history entries" in note]
    assert "30 history entries" in note and f"newest {FRACTAL_MAX_HISTORY}" in note and "10 oldest" in note
    assert str(beyond.kept_in) in note
    assert contract.dump(contract.restore(result))["history_beyond_fractal"]["dropped_on_next_save"] == dropped

    kept = json.loads(Path(beyond.kept_in).read_bytes())
    original = {entry.turn_id: entry.model_dump(mode="json") for entry in history}
    path = service.sources["fractal"].store.paths.session_file(ref)
    fractal_save = json.loads(path.read_bytes())
    fractal_save["history"] = fractal_save["history"][-FRACTAL_MAX_HISTORY:]  # what Fractal's next save keeps
    path.write_text(json.dumps(fractal_save, indent=2) + "\n")
    assert [entry["turn_id"] for entry in kept["history"][:10]] == dropped
    assert all(kept_entry == original[kept_entry["turn_id"]] for kept_entry in kept["history"][:10])
    assert beyond.archive_digest in {entry.digest for entry in service.archive_entries(ref)}


def test_the_cli_says_a_restore_leaves_history_fractal_will_drop_and_names_the_archive_file(workspace, tmp_path,
                                                                                             capsys):
    service, ref, _ = grown_past_fractal(workspace, tmp_path)
    capsys.readouterr()
    assert cli.main(["--state-dir", str(tmp_path / "state"), "restore", ref.session_id]) == 0
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if "history entries" in line]
    kept = line.split("kept in the archive at ")[1].split(" (entry")[0]
    assert Path(kept).is_file() and Path(kept).parent == service.sources["fractal"].archive.directory(ref)
    assert "drops the 10 oldest" in line


def test_a_restore_within_fractals_history_says_nothing_about_it(workspace, tmp_path):
    service, ref, _ = session(workspace, tmp_path, turns=25)
    service.trim(ref, TrimOptions(keep_history=5))
    result = service.restore(ref)
    assert result.beyond_fractal is None and not any("history entries" in note for note in result.notes)


async def test_the_tuis_undo_says_the_restore_leaves_history_fractal_will_drop(workspace, tmp_path):
    from ..tui.conftest import build_app, settle

    service, ref, _ = grown_past_fractal(workspace, tmp_path)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.screen.current_ref() == ref
        await pilot.press("ctrl+z")
        await settle(pilot)
        await pilot.click("#yes")
        await settle(pilot)
        shown = [str(notice.message) for notice in app._notifications]
    assert len(service.sources["fractal"].store.load(ref).state.history) == 30
    (said,) = [text for text in shown if "history entries" in text]
    assert "drops the 10 oldest" in said and str(service.sources["fractal"].archive.directory(ref)) in said


def test_an_exact_restore_past_fractals_history_names_the_trims_archived_original(workspace, tmp_path):
    service, ref, original = session(workspace, tmp_path, turns=30, history_limit=30)
    service.trim(ref, TrimOptions(keep_history=5))
    result = service.restore(ref)
    assert [step.mode for step in result.steps] == ["exact"]
    beyond = result.beyond_fractal
    assert beyond is not None and beyond.entries == 30 and len(beyond.dropped) == 10
    assert Path(beyond.kept_in).read_bytes() == original
    assert [entry.op for entry in service.archive_entries(ref)] == ["trim-original", "trim", "restore"]
