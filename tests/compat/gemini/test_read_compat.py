"""Reprise reading the store the real Gemini CLI wrote in this test run (the `gemini_store` scenario),
through the `reprise` command: every session listed once (the three-turn session's two files are one
row) in its folder with its turns and the measured context (exactly the fake server's count of the
request that made its last reply); `show` gives the prompts, replies, the command and its output;
`search` finds a reply word, a command's output word and a prompt."""

from __future__ import annotations

import json

import pytest

from ...sources.conftest import run_json
from . import fake_gemini
from .sessions import BASH_OUTPUT_WORD, SCENARIO, SESSION_OF, GeminiStore

pytestmark = pytest.mark.compat

PROMPTS = {label: prompt for label, _, _, _, prompt in SCENARIO}


def prompts_of(session: str) -> list[str]:
    return [prompt for label, prompt in PROMPTS.items() if SESSION_OF[label] == session]


@pytest.fixture
def store(gemini_store: GeminiStore, monkeypatch) -> GeminiStore:
    """Reprise reads the scenario's store (it writes nothing there), from the folder `alpha`."""
    monkeypatch.setenv("GEMINI_CLI_HOME", str(gemini_store.live.home))
    monkeypatch.chdir(gemini_store.folders["alpha"])
    return gemini_store


def test_every_session_is_listed_once_in_its_folder_with_its_measured_context(store, capsys):
    listed = run_json(capsys, "list", "--all", "--source", "gemini")["sessions"]
    rows = {row["session_id"]: row for row in listed}
    assert len(rows) == len(listed) and set(rows) == set(store.ids.values())   # the stub is no row of its own
    for session, session_id in store.ids.items():
        row = rows[session_id]
        assert row["source"] == "gemini" and not row["hidden_by_agent"], session   # -p sessions are listed
        assert row["workspace_path"] == str(store.folder_of(session)), session
        assert row["first_message"] == prompts_of(session)[0], session
        assert row["model"] == "gemini-3.8-flash", session
        last_turn = [body for step in store.steps_of(session) for body in step.turns][-1]
        assert row["context_tokens"] == fake_gemini.request_tokens(last_turn), session
    assert {s: rows[i]["turns"] for s, i in store.ids.items()} == {"one": 1, "bash": 1, "three": 3, "beta": 1}
    assert rows[store.ids["three"]]["path"] == str(store.files("three")[0])    # the file resumed into
    here = {row["session_id"] for row in run_json(capsys, "list", "--source", "gemini")["sessions"]}
    assert store.ids["three"] in here and store.ids["beta"] not in here      # the other folder's


def test_show_gives_the_conversation_and_the_command_with_its_output(store, capsys):
    turns = run_json(capsys, "show", store.ids["three"])["transcript"]["turns"]
    assert [t["user_message"] for t in turns] == prompts_of("three")
    assert turns[-1]["reply"] == "Noted MARKthird; my answer word is REPLYthird."
    bash = json.dumps(run_json(capsys, "show", store.ids["bash"])["transcript"], ensure_ascii=False)
    assert BASH_OUTPUT_WORD in bash and "printf 'OUTWORD%s" in bash and "REPLYtoolresult" in bash


def test_search_finds_replies_command_output_and_prompts_across_folders(store, capsys):
    for word, session, field in (("REPLYsecond", "three", "response"), (BASH_OUTPUT_WORD, "bash", "tool"),
                                 ("MARKbeta", "beta", "user")):
        hits = run_json(capsys, "search", word, "--all")["hits"]
        assert {hit["session_id"] for hit in hits} == {store.ids[session]}, word
        assert any(hit["field"] == field for hit in hits), word
