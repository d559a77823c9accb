"""A registered source that does not load (an import error, a bad spec, a factory that raises) is
named in one line where the user looks (stderr at the command's start, `reprise config`, `doctor`,
the TUI) and skipped: every other source keeps working."""

from __future__ import annotations

import json

import pytest

from reprise.core.service import Service
from reprise.tui import cli
from tests.tui.test_cli import put

from .plug_ins import plug_in, spec_module

LINE = ('the source "plug" (reprise_plug 0.3.0) did not load: ModuleNotFoundError: No module named '
        "'reprise_plug_absent'; the other sources work")


@pytest.fixture
def broken(tmp_path, monkeypatch):
    """A distribution declaring the source "plug" whose module is not there."""
    plug_in(tmp_path / "dist", {"plug": "reprise_plug_absent:SPEC"}, {})
    monkeypatch.syspath_prepend(str(tmp_path / "dist"))


@pytest.fixture
def here(tmp_path, monkeypatch, isolated_paths):
    """A Fractal session in the current folder."""
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return put(isolated_paths, folder, "a" * 32, 2)


def test_the_command_line_says_it_once_on_stderr_and_lists_the_other_sources(broken, here, capsys):
    assert cli.main(["list", "--json"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [f"reprise: {LINE}"]
    assert [row["session_id"] for row in json.loads(out)["sessions"]] == [here.session_id]


def test_config_shows_it_as_a_source_that_is_off(broken, here, capsys):
    assert cli.main(["config", "--json"]) == 0
    sources = {state["name"]: state for state in json.loads(capsys.readouterr().out)["sources"]}
    assert sources["plug"] == {"name": "plug", "enabled": False, "roots": [], "why": LINE}
    assert sources["fractal"]["enabled"]


def test_doctor_names_it_as_a_problem(broken, here, capsys):
    cli.main(["doctor", "--json"])
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [(p["code"], p["message"]) for p in problems] == [("source_not_loaded", LINE)]


def test_a_factory_that_raises_leaves_its_source_out_and_the_others_on(tmp_path, monkeypatch, here):
    factory = "def make(roots, settings, data):\n    raise RuntimeError('no database driver')\n"
    detect = "def detect(root, where):\n    return True, (root,), 'always on'\n"
    spec = spec_module(factory="reprise_plug_factory:make", detect="reprise_plug_factory:detect")
    plug_in(tmp_path / "dist", {"plug": "reprise_plug_factory_spec:SPEC"},
            {"reprise_plug_factory_spec": spec, "reprise_plug_factory": factory + detect})
    monkeypatch.syspath_prepend(str(tmp_path / "dist"))
    service = Service.from_environment()
    assert list(service.sources) == ["fractal"]
    (failure,) = service.load_failures
    assert failure.line == ('the source "plug" (reprise_plug 0.3.0) did not load: it failed to start: '
                            "RuntimeError: no database driver; the other sources work")
    (choice,) = [choice for choice in service.source_choices() if choice.name == "plug"]
    assert not choice.enabled and choice.why == failure.line
    assert [row.ref for row in service.list_sessions().rows] == [here]


async def test_the_tui_says_it_in_one_notification(broken, here):
    from reprise.tui.app import RepriseApp

    app = RepriseApp(Service.from_environment())
    async with app.run_test() as pilot:
        await pilot.pause()
        assert [n.message for n in app._notifications] == [LINE]
