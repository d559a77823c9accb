"""`[sources.claude] keep_before_sweep = true`: listings keep (as `reprise keep --due` does) the sessions
Claude Code's age sweep deletes within the week, the soonest first, within each listing's share; on a
copy of a real Claude Code store (tests/fixtures/claude-store)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprise.core import service as service_module
from reprise.core.service import Service

from .test_claude_source import BASH, COMPACTED, NAMED, THREE_TURNS, copy_store

ON = "[sources.claude]\nkeep_before_sweep = true\n"


def _age(path: Path, days: float) -> None:
    moment = time.time() - days * 86400
    os.utime(path, (moment, moment))


@pytest.fixture
def store(tmp_path) -> tuple[dict[str, Path], dict[str, float]]:
    """The store with three sessions due within the week (deleted in 1, 2 and 4 days) and one in 20 days:
    (its folders, {id: days old})."""
    folders = copy_store(Path(os.environ["CLAUDE_CONFIG_DIR"]), tmp_path / "work")
    ages = {THREE_TURNS: 29.0, BASH: 28.0, COMPACTED: 26.0, NAMED: 10.0}
    service = Service.from_environment(workspace=str(folders["alpha"]))
    for session_id, days in ages.items():
        _age(Path(service.session_path(service.resolve(session_id))), days)
    service.catalog.close()
    return folders, ages


def _setting(text: str) -> None:
    Path(os.environ["REPRISE_CONFIG"]).write_text(text)


def _kept(service: Service) -> set[str]:
    return {row.file_id for row in service.list_sessions(all_workspaces=True).rows if row.kept}


def test_off_by_default_a_listing_keeps_nothing(store):
    folders, _ = store
    service = Service.from_environment(workspace=str(folders["beta"]))
    listing = service.list_sessions()
    assert listing.kept_before_sweep is None and _kept(service) == set()


def test_a_listing_keeps_every_session_due_within_the_week_in_every_folder_and_says_so_once(store):
    folders, _ = store
    _setting(ON)
    service = Service.from_environment(workspace=str(folders["beta"]))   # the due sessions are in alpha
    listing = service.list_sessions()
    keeping = listing.kept_before_sweep
    assert keeping is not None and keeping.left == 0 and not keeping.problems
    assert [report.ref.session_id for report in keeping.kept] == [THREE_TURNS, BASH, COMPACTED]   # soonest first
    assert keeping.size == sum(report.size for report in keeping.kept) > 0
    [notice] = service.take_notices()
    assert notice.startswith("Kept 3 sessions (") and "that Claude Code deletes within the week" in notice
    assert _kept(service) == {THREE_TURNS, BASH, COMPACTED}
    again = service.list_sessions()
    assert again.kept_before_sweep is not None and again.kept_before_sweep.kept == []
    assert service.take_notices() == []   # nothing more kept: nothing said


def test_each_listing_keeps_at_most_its_share_and_the_rest_at_the_next(store, monkeypatch):
    folders, _ = store
    _setting(ON)
    monkeypatch.setattr(service_module, "SWEEP_KEEP_SESSIONS", 2)
    service = Service.from_environment(workspace=str(folders["alpha"]))
    first = service.list_sessions().kept_before_sweep
    assert first is not None and [r.ref.session_id for r in first.kept] == [THREE_TURNS, BASH] and first.left == 1
    assert "1 more at the next listing" in (first.note or "")
    second = service.list_sessions().kept_before_sweep
    assert second is not None and [r.ref.session_id for r in second.kept] == [COMPACTED] and second.left == 0


def test_the_share_counts_bytes_too(store, monkeypatch):
    folders, _ = store
    _setting(ON)
    service = Service.from_environment(workspace=str(folders["alpha"]))
    first = Path(service.session_path(service.resolve(THREE_TURNS))).stat().st_size
    monkeypatch.setattr(service_module, "SWEEP_KEEP_BYTES", first)   # room for the soonest one only
    keeping = service.list_sessions().kept_before_sweep
    assert keeping is not None and [r.ref.session_id for r in keeping.kept] == [THREE_TURNS] and keeping.left == 2


def test_a_source_without_the_setting_is_not_asked(store):
    folders, _ = store
    _setting("[sources.claude]\nkeep_before_sweep = false\n")
    service = Service.from_environment(workspace=str(folders["alpha"]))
    assert service.list_sessions().kept_before_sweep is None
    assert not service.settings.sources.keeps_before_sweep("codex")   # Codex has no sweep and no such setting


def test_reprise_list_says_once_on_stderr_what_it_kept(store):
    folders, _ = store
    _setting(ON)

    def listed() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "reprise.tui.cli", "list", "--all"], cwd=folders["beta"],
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)

    done = listed()
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "keep_before_sweep" in line]
    assert len(lines) == 1 and lines[0].startswith("reprise: Kept 3 sessions (")
    assert "deleted by Claude Code in" not in done.stdout   # kept: none is named as due any more
    again = listed()
    assert again.returncode == 0 and "Kept" not in again.stderr


async def test_the_tui_header_counts_what_its_listings_kept_and_the_notice_says_it_once(store):
    from textual.widgets import Static

    from ...tui.conftest import build_app, settle

    folders, _ = store
    _setting(ON)
    service = Service.from_environment(workspace=str(folders["beta"]))
    app = build_app(service, clock=time.time)   # the files' ages are real ones
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        header = str(app.screen.query_one("#header", Static).render())
        assert "3 kept before the agent's sweep" in header
        said = [n.message for n in app._notifications if n.message.startswith("Kept 3 sessions")]
        assert len(said) == 1


def test_once_nothing_is_left_listings_do_not_look_at_every_folder_again_for_a_while(store, monkeypatch):
    """The TUI lists every second: with nothing left to keep, the next listings read no other folder."""
    folders, _ = store
    _setting(ON)
    service = Service.from_environment(workspace=str(folders["beta"]))
    looks: list[float] = []
    real_due = service._due
    monkeypatch.setattr(service, "_due", lambda days, names: looks.append(days) or real_due(days, names))
    first = service.list_sessions().kept_before_sweep
    assert first is not None and len(first.kept) == 3 and first.left == 0 and len(looks) == 1
    for _ in range(3):
        again = service.list_sessions().kept_before_sweep
        assert again is not None and again.kept == [] and again.left == 0
    assert len(looks) == 1
    monkeypatch.setattr(service, "_sweep_clear_until", 0.0)   # the wait is over: it looks again
    service.list_sessions()
    assert len(looks) == 2
