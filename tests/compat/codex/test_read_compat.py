"""Reprise reading the store the real Codex CLI wrote in this test run (the `codex_store` scenario),
through the `reprise` command: every session listed in its folder with its turns, status, branch,
model and the measured context (exactly `len(request body) // 4` of the request that made it, the
fake server's usage); `show` gives the prompts, replies, the command and its output, the compaction
and a Codex fork with its parent's history; `search` finds a reply word, a command's output word and
a prompt; `meter` starts from the measured context."""

from __future__ import annotations

import json

import pytest

from reprise.tui import cli

from .sessions import BASH_OUTPUT_WORD, GIT_BRANCH, SCENARIO, SESSION_OF, CodexStore
from .test_codex_client import copy_sessions

pytestmark = pytest.mark.compat

PROMPTS = {label: prompt for label, _, _, _, prompt, _ in SCENARIO}


def prompts_of(session: str) -> list[str]:
    return [prompt for label, prompt in PROMPTS.items() if SESSION_OF[label] == session]


@pytest.fixture
def store(codex_store: CodexStore, tmp_path, monkeypatch) -> CodexStore:
    """Reprise reads a copy of the scenario's rollouts (no SQLite), from the folder `alpha`."""
    live = copy_sessions(codex_store, tmp_path / "copy")
    monkeypatch.setenv("CODEX_HOME", str(live.codex_home))
    monkeypatch.chdir(codex_store.folders["alpha"])
    return codex_store


def reprise(capsys, *argv: str) -> dict:
    status = cli.main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert status == 0, f"reprise {' '.join(argv)} exited {status}: {out}{err}"
    return json.loads(out)


def test_every_session_is_listed_in_its_folder_with_its_measured_context(store, capsys):
    rows = {row["session_id"]: row for row in reprise(capsys, "list", "--all")["sessions"]}
    assert set(store.ids.values()) <= set(rows)
    for session, session_id in store.ids.items():
        row = rows[session_id]
        assert row["source"] == "codex" and row["hidden_by_agent"], session      # `codex exec` sessions
        assert row["workspace_path"] == str(store.folders[store.folder_of[session]]), session
    expected_turns = {"one": 1, "three": 3, "bash": 1, "compact": 3, "fork": 4, "beta": 1, "failed": 1, "aborted": 1}
    assert {s: rows[i]["turns"] for s, i in store.ids.items()} == expected_turns
    assert rows[store.ids["failed"]]["last_status"] == "failed"
    assert rows[store.ids["aborted"]]["last_status"] == "interrupted"
    assert rows[store.ids["beta"]]["branch"] == GIT_BRANCH and rows[store.ids["one"]]["branch"] is None
    for session in ("one", "three", "bash", "beta"):
        last = store.steps_of(session)[-1]
        assert rows[store.ids[session]]["context_tokens"] == last.request_sizes[-1] // 4, session
    here = {row["session_id"] for row in reprise(capsys, "list")["sessions"]}
    assert store.ids["three"] in here and store.ids["beta"] not in here   # the other folder's


def test_show_gives_the_conversation_the_command_the_compaction_and_a_forks_history(store, capsys):
    turns = reprise(capsys, "show", store.ids["three"])["transcript"]["turns"]
    assert [t["user_message"] for t in turns] == prompts_of("three")
    assert [t["reply"] for t in turns][-1] == "Noted MARKthird; my answer word is REPLYthird."
    bash = json.dumps(reprise(capsys, "show", store.ids["bash"])["transcript"], ensure_ascii=False)
    assert BASH_OUTPUT_WORD in bash and "echo OUTWORD" in bash
    compact = reprise(capsys, "show", store.ids["compact"])["transcript"]
    assert [t["user_message"] for t in compact["turns"]] == prompts_of("compact")
    assert [c["before_turn"] for c in compact["compactions"]] == [2]   # before the third turn (0-based)
    assert all("SUMMARYfake" not in turn["reply"] for turn in compact["turns"])
    fork = reprise(capsys, "show", store.ids["fork"])["transcript"]
    assert [t["user_message"] for t in fork["turns"]] == [*prompts_of("three"), *prompts_of("fork")]


def test_search_finds_replies_command_output_and_prompts_across_folders(store, capsys):
    for word, session, field in (("REPLYsecond", "three", "response"), (BASH_OUTPUT_WORD, "bash", None),
                                 ("MARKbeta", "beta", "user")):
        hits = reprise(capsys, "search", word, "--all")["hits"]
        assert {hit["session_id"] for hit in hits} >= {store.ids[session]}, word
        if field is not None:
            assert any(hit["field"] == field for hit in hits if hit["session_id"] == store.ids[session]), word


def test_the_meter_starts_from_the_measured_context(store, capsys):
    document = reprise(capsys, "meter", store.ids["three"], "--message", "a short draft")
    text = json.dumps(document)
    measured = store.steps_of("three")[-1].request_sizes[-1] // 4
    assert str(measured) in text and "last_token_usage" in text
