"""Where an agent runs a session, by its spec's `resume_folder`. An agent that runs a session only in
its very folder ("exact": the test SQLite agent, whose sessions also span several records, and Codex
given that spec for its send and new) runs it there, and when the folder is gone resume, send and new
are refused with a sentence naming the folder and saying how to go on; "any" still runs it from a
folder that exists."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from reprise.core.errors import AgentError, RepriseError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.sources.samples import SampleSet
from reprise.tui import cli
from tests.core.codex.builder import START, CodexRollout
from tests.sources.sqlite_store import sqlite_samples


@pytest.fixture
def sqlite_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SampleSet]:
    with sqlite_samples(tmp_path, monkeypatch) as written:
        yield written


def test_an_exact_agent_resumes_in_the_sessions_folder_and_refuses_when_it_is_gone(sqlite_store, capsys):
    sample = sqlite_store.sessions[0]
    ref = Service.from_environment().resolve(sample.session_id)
    assert Service.from_environment().resume_plan(ref, for_exec=False).cwd == str(sample.folder)
    shutil.rmtree(sample.folder)
    with pytest.raises(RepriseError) as raised:
        Service.from_environment().resume_plan(ref, for_exec=False)
    error = raised.value
    assert error.message == (f"SQLite Agent runs session {sample.session_id} only in the folder it ran in, "
                             f"which is gone: {sample.folder}.")
    assert error.hint is not None
    assert f"mkdir -p {sample.folder}" in error.hint and f"reprise show {sample.session_id}" in error.hint
    assert "relink" not in error.hint and "reprise new" not in error.hint   # it neither relinks nor starts sessions
    # The command line says the same, and runs nothing (it is not run from the folder Reprise is in).
    status = cli.main(["resume", "--print", sample.session_id])
    out, err = capsys.readouterr()
    assert status != 0 and str(sample.folder) in err and "mkdir -p" in err and "sqlite-agent" not in out, (out, err)


def test_a_recreated_folder_resumes_again(sqlite_store):
    sample = sqlite_store.sessions[0]
    shutil.rmtree(sample.folder)
    sample.folder.mkdir()   # what the refusal said to do
    ref = Service.from_environment().resolve(sample.session_id)
    assert Service.from_environment().resume_plan(ref, for_exec=False).cwd == str(sample.folder)


@pytest.fixture
def exact_codex(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Codex as if it ran a session only in its very folder (its spec's `resume_folder = "exact"`): a source
    that sends and starts sessions, for the refusals of send and new. Its CODEX_HOME."""
    from reprise.core.sources.codex.source import CodexSource

    monkeypatch.setattr(CodexSource, "spec", dataclasses.replace(CodexSource.spec, resume_folder="exact"))
    root = Path(os.environ["CODEX_HOME"])
    (root / "sessions").mkdir(parents=True, exist_ok=True)   # its store exists: the source is on
    return root


def a_codex_session(root: Path, folder: Path) -> SessionRef:
    folder.mkdir(parents=True, exist_ok=True)
    rollout = CodexRollout(cwd=str(folder), source="cli", seed=3, start=START)
    rollout.turn("first prompt", "first reply", tokens=(10_000, 30))
    rollout.write(root)
    return SessionRef(workspace_key(folder), rollout.session_id, "codex")


def store_files(root: Path) -> dict[str, bytes]:
    return {str(path): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def test_an_exact_agent_refuses_a_send_when_the_sessions_folder_is_gone(exact_codex, tmp_path):
    folder = tmp_path / "proj"
    ref = a_codex_session(exact_codex, folder)
    shutil.rmtree(folder)
    before = store_files(exact_codex)
    with pytest.raises(AgentError) as raised:
        Service.from_environment(workspace=str(tmp_path)).send_turn(ref, "one more")
    assert raised.value.message == (f"Codex runs session {ref.session_id} only in the folder it ran in, "
                                    f"which is gone: {folder}.")
    assert raised.value.hint is not None and f"mkdir -p {folder}" in raised.value.hint
    assert "reprise new --agent codex" in raised.value.hint   # it starts sessions: go on in a new one
    assert store_files(exact_codex) == before


def test_an_exact_agent_refuses_to_resume_from_elsewhere_where_any_runs_it_here(exact_codex, tmp_path,
                                                                                 monkeypatch):
    from reprise.core.sources.codex.source import CodexSource

    folder = tmp_path / "proj"
    ref = a_codex_session(exact_codex, folder)
    shutil.rmtree(folder)
    with pytest.raises(RepriseError, match="only in the folder it ran in"):
        Service.from_environment(workspace=str(tmp_path)).resume_plan(ref, for_exec=False)
    monkeypatch.setattr(CodexSource, "spec", dataclasses.replace(CodexSource.spec, resume_folder="any"))
    plan = Service.from_environment(workspace=str(tmp_path)).resume_plan(ref, for_exec=False)
    assert plan.cwd == str(tmp_path)   # "any": run from a folder that exists, and said so
    assert any("no longer exists" in note for note in plan.notes)


def test_an_exact_agent_refuses_a_new_session_in_a_folder_that_does_not_exist(exact_codex, tmp_path, capsys):
    gone = tmp_path / "not-made"
    before = store_files(exact_codex)
    with pytest.raises(RepriseError) as raised:
        Service.from_environment(workspace=str(gone)).new_session(source="codex")
    assert raised.value.message == f"Codex runs a session only in its own folder, and {gone} does not exist."
    assert raised.value.hint is not None and f"mkdir -p {gone}" in raised.value.hint
    assert store_files(exact_codex) == before
    gone.mkdir()
    ref = Service.from_environment(workspace=str(gone)).new_session(source="codex")
    assert ref.workspace_key == workspace_key(gone)
