"""`reprise keep --due [DAYS]`: every session its agent deletes within DAYS, counted and sized, then
kept in one go; one that cannot be kept is named and the rest are kept (issue 26)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprise.core.errors import RepriseError, UsageError

from .test_claude_source import BASH, THREE_TURNS, _age, run_cli, service_in, store  # noqa: F401


def _aged(folders: dict[str, Path]) -> dict[str, Path]:
    """THREE_TURNS is deleted by Claude Code in 2.5 days, BASH in 20; the others are new."""
    service = service_in(folders["alpha"])
    paths = {session: Path(service.session_path(service.resolve(session))) for session in (THREE_TURNS, BASH)}
    _age(paths[THREE_TURNS], 27.5)
    _age(paths[BASH], 10)
    return paths


def test_keep_due_keeps_every_session_deleted_within_the_days_and_none_twice(store):  # noqa: F811
    _, folders = store
    paths = _aged(folders)
    printed = run_cli("keep", "--due", cwd=folders["beta"])   # any folder: every folder's sessions
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    size = paths[THREE_TURNS].stat().st_size
    assert lines[0].startswith("1 session (") and lines[0].endswith(") deleted by Claude Code within 7 days: keeping "
                                                                     "them.")
    assert lines[1].startswith(f"  kept {THREE_TURNS}: ") and "(added: session)" in lines[1]
    assert lines[-1] == "Kept 1 of 1; their agent's clean-up cannot reach the copies."
    again = run_cli("keep", "--due", "--json", cwd=folders["beta"])
    assert again.returncode == 0 and json.loads(again.stdout) == {"days": 7.0, "kept": [], "size": 0, "problems": []}
    wider = json.loads(run_cli("keep", "--due", "25", "--json", cwd=folders["alpha"]).stdout)
    assert [item["session_id"] for item in wider["kept"]] == [BASH]
    assert wider["size"] == paths[BASH].stat().st_size and size > 0
    listing = service_in(folders["alpha"]).list_sessions()
    assert all(row.kept for row in listing.rows if row.file_id in (THREE_TURNS, BASH))


def test_keep_due_names_a_session_it_cannot_keep_and_keeps_the_rest(store, monkeypatch):  # noqa: F811
    _, folders = store
    _aged(folders)
    service = service_in(folders["alpha"])
    due = service.due(25)
    assert [row.file_id for row in due] == [THREE_TURNS, BASH]   # the soonest first
    kept = service.keep

    def keep(ref):
        if ref.session_id == THREE_TURNS:
            raise RepriseError("the disk is full")
        return kept(ref)

    monkeypatch.setattr(service, "keep", keep)
    reports, problems = service.keep_due(due)
    assert [report.ref.session_id for report in reports] == [BASH]
    assert [(Path(problem.path).stem, problem.message) for problem in problems] == [(THREE_TURNS, "the disk is full")]


def test_keep_takes_an_id_or_due_and_never_a_negative_number_of_days(store):  # noqa: F811
    _, folders = store
    for args, why in ((["keep"], "one of the arguments id --due is required"),
                      (["keep", THREE_TURNS, "--due"], "argument --due: not allowed with argument id")):
        refused = run_cli(*args, cwd=folders["alpha"])
        assert refused.returncode == 2 and why in refused.stderr, refused.stderr
    with pytest.raises(UsageError, match="--due takes a number of days"):
        service_in(folders["alpha"]).due(-1)
