"""The test-only SQLite source through its entry point alone: registered like an installed plug-in
(tests/sources/conftest.py), it is listed, shown and searched by the commands people type, its
letter in the agent column, and its database is only ever read. (The conformance suite runs over it
like over every registered source: tests/sources/test_conformance.py.)"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from reprise.core.sources.registry import registry
from reprise.core.sources.samples import SampleEnv
from reprise.tui import cli

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(test_distributions, tmp_path, monkeypatch):
    """The agent's sample database, where the test isolation would point the agent; an empty current folder."""
    from reprise_sqlite_agent.samples import write_samples

    monkeypatch.setenv("REPRISE_SQLITE_AGENT_HOME", str(tmp_path / "sqlite-agent"))
    written = write_samples(SampleEnv(tmp_path, tmp_path / "projects", NOW))
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    return written


def run(capsys, *argv: str) -> str:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert status == 0, (argv, out, err)
    return out


def digest(store) -> str:
    return hashlib.sha256((store.store / "db" / "sessions.db").read_bytes()).hexdigest()


def test_it_is_registered_from_its_entry_point(test_distributions):
    spec = registry().get("sqlite-test")
    assert spec is not None and spec.label == "SQLite Agent"
    assert registry().origins["sqlite-test"] == "reprise_sqlite_agent 0.0"   # the distribution that declares it


def test_list_show_and_search_by_the_commands_people_type(store, capsys):
    before = digest(store)
    titled, untitled, three = store.sessions
    listed = run(capsys, "list", "--all")
    for sample in store.sessions:
        assert sample.session_id[:8] in listed
    assert " S Gallery: lazy images" in listed and "S SQLite Agent" in listed   # its row, its letter's legend
    shown = run(capsys, "show", three.session_id)
    assert all(prompt in shown for prompt in three.prompts) and "The version is 2.4.1 now." in shown
    found = run(capsys, "search", "--all", "changelog")
    assert three.session_id[:8] in found and "[changelog]" in found
    assert run(capsys, "resume", "--print", untitled.session_id).split() == [
        "sqlite-agent", "--resume", untitled.session_id]
    assert digest(store) == before


def test_its_database_is_never_written(store, capsys):
    before = digest(store)
    path = store.store / "db" / "sessions.db"
    stamp = path.stat().st_mtime_ns
    for argv in (["list", "--all"], ["rm", store.sessions[0].session_id], ["meter", store.sessions[0].session_id],
                 ["trim", store.sessions[0].session_id, "--fork", "--drop", "1"]):
        cli.main(argv)
    capsys.readouterr()
    assert digest(store) == before and path.stat().st_mtime_ns == stamp
    assert sorted(entry.name for entry in path.parent.iterdir()) == ["sessions.db"]   # no journal left beside it


def test_a_database_that_cannot_be_read_is_a_problem_named_not_a_crash(store, capsys):
    from reprise.core.errors import ProblemFileError
    from reprise.core.paths import SessionRef, workspace_key
    from reprise.core.service import Service

    sample = store.sessions[0]
    path = store.store / "db" / "sessions.db"
    path.write_bytes(path.read_bytes()[:100])   # cut inside the header: not a database any more
    with pytest.raises(ProblemFileError) as raised:
        Service.from_environment().show(SessionRef(workspace_key(sample.folder), sample.session_id, "sqlite-test"))
    assert raised.value.message.startswith(f"{path}: the SQLite Agent database cannot be read")
    for argv in (["list", "--all"], ["show", sample.session_id], ["search", "--all", "gallery"]):
        status = cli.main(argv)
        out, err = capsys.readouterr()
        assert status in (0, 1, 3) and "Traceback" not in err and (status == 0 or out + err), (argv, out, err)
    status = cli.main(["doctor"])
    out, err = capsys.readouterr()
    assert status == 1 and f"{path}: unreadable: the SQLite Agent database cannot be read" in out, (out, err)
