"""Reprise's writes to Codex sessions against the real Codex CLI (issue 16, "Checked against the real
client"), on a copy of the scenario's rollouts in a fresh CODEX_HOME (no SQLite, as a user's home after
Codex indexed nothing of them): each `reprise trim ID --fork ...` is resumed by the real `codex exec
resume NEWID ...`, which sends exactly the kept turns (captured at the fake server) and appends to the
new rollout while the original's bytes stay as they were; `reprise send` (run inside the namespace,
the message on stdin) adds a turn the next `codex exec resume` continues; `reprise rm` and `reprise
trash restore` give back a rollout the real client resumes with its whole history, and while it is in
the trash the real client cannot resume it (what Reprise tells the user)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from reprise.tui import cli

from . import rollouts
from .sessions import BASH_OUTPUT_WORD, EXEC, SCENARIO, SESSION_OF, CodexStore, LiveCodex, Step
from .test_codex_client import copy_sessions, ok, replies_sent, sent_prompts

pytestmark = pytest.mark.compat

PROMPTS = {label: prompt for label, _, _, _, prompt, _ in SCENARIO}
# `reprise` as the namespace runs it.
REPRISE = "import sys\nfrom reprise.tui.cli import main\nsys.exit(main(sys.argv[1:]))\n"
REPRISE_ENV = ("REPRISE_STATE_DIR", "REPRISE_CACHE_DIR", "REPRISE_CONFIG", "FRACTAL_STATE_HOME", "XDG_CONFIG_HOME",
               "REPRISE_DATA_DIR", "CLAUDE_CONFIG_DIR")


def prompts_of(session: str) -> list[str]:
    return [prompt for label, prompt in PROMPTS.items() if SESSION_OF[label] == session]


class RepriseStep(Step):
    """A step whose args start with "reprise": the `reprise` command, with this test's Reprise paths."""

    def argv(self, binary: Path) -> list[str]:
        if self.args[:1] == ["reprise"]:
            return [sys.executable, "-c", REPRISE, *self.args[1:]]
        return super().argv(binary)


@pytest.fixture
def live(codex_store: CodexStore, tmp_path, monkeypatch) -> LiveCodex:
    """A copy of the scenario's rollouts in a fresh CODEX_HOME, which Reprise reads, with `[sources.codex]
    send` naming the real client."""
    live = copy_sessions(codex_store, tmp_path / "copy")
    binary = json.dumps(str(live.binary))
    config = Path(os.environ["REPRISE_CONFIG"])
    config.write_text(f'[sources.codex]\nsend = [{binary}, "exec", "--json", "--skip-git-repo-check", "resume", '
                      f'"{{session_id}}", "-"]\n')
    monkeypatch.setenv("CODEX_HOME", str(live.codex_home))
    monkeypatch.chdir(codex_store.folders["alpha"])
    return live


def reprise(capsys, *argv: str) -> dict:
    status = cli.main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert status == 0, f"reprise {' '.join(argv)} exited {status}: {out}{err}"
    return json.loads(out)


def reprise_env() -> dict[str, str]:
    return {name: os.environ[name] for name in REPRISE_ENV if name in os.environ}


# (session, trim arguments, the session's prompts kept (their indexes; a Codex fork's count its parent's
# first; "summary": a compaction's), words that must be gone from the new rollout and the request)
FORKS = [
    ("three", ["--drop", "2"], [0, 2], ["MARKsecond", "REPLYsecond"]),
    ("three", ["--keep-history", "1"], [2], ["MARKfirst", "REPLYfirst", "MARKsecond"]),
    ("compact", ["--drop", "3"], [0, 1], ["MARKaftercompact", "SUMMARYfake"]),
    ("fork", ["--drop", "2"], [0, 2, 3], ["MARKsecond", "REPLYsecond"]),
    ("bash", ["--cap-replies", "5", "--spare", "0"], [0], [BASH_OUTPUT_WORD, "REPLYtoolresult"]),
    ("compact", ["--keep-history", "1"], ["summary", 2], ["REPLYteal", "REPLYhexagon"]),
]
SUMMARY = "Another language model started to solve this problem"


def history_of(session: str) -> list[str]:
    """The prompts of a session's conversation: a Codex fork's start with its parent's."""
    return [*prompts_of("three"), *prompts_of("fork")] if session == "fork" else prompts_of(session)


def test_each_fork_trim_is_resumed_by_the_real_client_with_exactly_its_kept_turns(codex_store, live, capsys):
    steps, expected = [], []
    for number, (session, trim_args, kept, gone) in enumerate(FORKS):
        original = live.rollout(codex_store.ids[session])
        before = original.read_bytes()
        document = reprise(capsys, "trim", codex_store.ids[session], "--fork", *trim_args)
        assert document["forked"] and document["applied"], document
        assert document["source_session_id"] == codex_store.ids[session]
        fork_id = document["session_id"]
        fork = live.rollout(fork_id)
        assert fork.parent == original.parent and original.read_bytes() == before, session
        meta = rollouts.records(fork)[0]["payload"]
        assert meta["id"] == fork_id and "forked_from_id" not in meta
        for word in gone:
            assert word.encode() not in fork.read_bytes(), (session, word)
        prompt = f"Go on with the trim MARKtrim{number}"
        steps.append(Step([*EXEC, "resume", fork_id, prompt], codex_store.folders["alpha"], label=f"trim {number}"))
        sent = [SUMMARY if i == "summary" else history_of(session)[int(i)] for i in kept] + [prompt]
        expected.append((fork_id, fork, original, before, sent, gone))
    for result, (fork_id, fork, original, before, sent, gone) in zip(live.run(steps), expected, strict=True):
        assert result.thread_id == fork_id, result.describe()
        prompts = sent_prompts(result)
        if sent[0] == SUMMARY:   # after a compaction Codex sends its summary as a user message, then what followed
            assert prompts[0].startswith(SUMMARY) and prompts[1:] == sent[1:], prompts
            assert not {"Remember the colour MARKteal", "And the shape MARKhexagon BIGUSAGE"} & set(prompts)
        else:
            assert prompts == sent, result.describe()
        request = json.dumps(result.responses[-1], ensure_ascii=False)
        for word in gone:
            assert word not in request, (fork_id, word)
        assert original.read_bytes() == before
        assert sent[-1].encode() in fork.read_bytes()   # the client appended to the new rollout


def test_a_fork_trim_with_the_parent_gone_is_refused_and_writes_nothing(codex_store, live, capsys):
    live.rollout(codex_store.ids["three"]).unlink()
    status = cli.main(["trim", codex_store.ids["fork"], "--fork", "--drop", "1", "--json"])
    out, err = capsys.readouterr()
    assert status != 0 and "not in the store" in out + err
    assert len(list(live.sessions.rglob("rollout-*.jsonl"))) == len(codex_store.ids) - 1


def test_reprise_send_adds_a_turn_that_the_next_codex_resume_continues(codex_store, live, tmp_path, capsys):
    session_id = codex_store.ids["three"]
    path = live.rollout(session_id)
    before = path.read_bytes()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    message = "--not-an-option: sent through Reprise on stdin MARKviasend"
    after = "And after Reprise's turn MARKafterreprise"
    sent, resumed = live.run([
        RepriseStep(["reprise", "send", session_id, "--message-file", "-", "--json"], elsewhere, stdin=message,
                    label="reprise send"),
        Step([*EXEC, "resume", session_id, after], codex_store.folders["alpha"], label="resume")],
        env=reprise_env())
    assert sent.returncode == 0, sent.describe()
    document = json.loads(sent.stdout)
    assert document["status"] == "succeeded", sent.describe()
    assert document["response"] == "Noted MARKviasend; my answer word is REPLYviasend."
    assert sent_prompts(sent) == [*prompts_of("three"), message]
    request_tokens = sent.request_sizes[-1] // 4   # the fake's usage: len(request body) // 4
    assert document["usage"]["context_tokens"] == request_tokens, document["usage"]
    assert sent_prompts(resumed) == [*prompts_of("three"), message, after]
    assert replies_sent(resumed)[-1] == "Noted MARKviasend; my answer word is REPLYviasend."
    assert path.read_bytes().startswith(before)   # Codex appended both turns; Reprise wrote nothing into it
    assert resumed.thread_id == session_id
    turns = reprise(capsys, "show", session_id)["transcript"]["turns"]
    assert [t["user_message"] for t in turns] == [*prompts_of("three"), message, after]
    assert document["turn_id"] == turns[-2]["turn_id"]


def test_trash_and_restore_give_back_a_rollout_the_real_client_resumes(codex_store, live, capsys):
    session_id, alpha = codex_store.ids["one"], codex_store.folders["alpha"]
    ok(live.one(Step([*EXEC, "resume", session_id, "Index it MARKindexed"], alpha)))   # now in Codex's SQLite
    path = live.rollout(session_id)
    before = path.read_bytes()
    status = cli.main(["rm", session_id])
    out, err = capsys.readouterr()
    assert status != 0 and "may be writing" in out + err and path.exists()   # its newest record is seconds old
    assert cli.main(["rm", session_id, "--force"]) == 0
    out, err = capsys.readouterr()
    assert "Codex cannot resume it while it is in Reprise's trash" in err
    assert not path.exists()
    assert session_id in {e["session_id"] for e in reprise(capsys, "trash", "list", "--all")["trash"]}
    assert session_id not in {row["session_id"] for row in reprise(capsys, "list", "--all")["sessions"]}
    missing = live.one(Step([*EXEC, "resume", session_id, "While trashed MARKtrashed"], alpha))
    assert missing.returncode != 0 and not missing.requests, missing.describe()    # as Reprise says
    assert reprise(capsys, "trash", "restore", session_id)["session_id"] == session_id
    assert path.read_bytes() == before
    restored = live.one(Step([*EXEC, "resume", session_id, "Restored MARKrestored"], alpha))
    assert sent_prompts(restored) == [*prompts_of("one"), "Index it MARKindexed", "Restored MARKrestored"]


def test_undoing_a_fork_trim_moves_the_fork_to_the_trash(codex_store, live, capsys):
    original = live.rollout(codex_store.ids["three"])
    before = original.read_bytes()
    fork_id = reprise(capsys, "trim", codex_store.ids["three"], "--fork", "--drop", "1")["session_id"]
    fork = live.rollout(fork_id)
    status = cli.main(["restore", fork_id, "--json"])
    out, err = capsys.readouterr()
    assert status == 0, out + err
    assert not fork.exists() and original.read_bytes() == before
    assert fork_id in {e["session_id"] for e in reprise(capsys, "trash", "list", "--all")["trash"]}




def test_reprise_new_starts_a_rollout_the_real_client_takes_up_under_that_id(codex_store, live, capsys):
    alpha = codex_store.folders["alpha"]
    place = reprise(capsys, "new", "--agent", "codex", "--title", "Started in Reprise", "--print")
    session_id = place["session_id"]
    assert place["command"] == ["codex", "resume", session_id]   # the default [sources.codex] new
    prompt = "The first words of a new session MARKnewsession"
    result = live.one(Step([*EXEC, "resume", session_id, prompt], alpha))
    assert result.thread_id == session_id and sent_prompts(result) == [prompt], result.describe()
    request = result.responses[-1]
    assert request["input"][0]["type"] == "additional_tools"   # Codex wrote the thread's context itself
    path = live.rollout(session_id)
    assert prompt.encode() in path.read_bytes()
    rows = {row["session_id"]: row for row in reprise(capsys, "list")["sessions"]}
    row = rows[session_id]
    assert (row["title"], row["turns"], row["first_message"]) == ("Started in Reprise", 1, prompt)
    assert row["workspace_path"] == str(alpha) and not row["hidden_by_agent"]   # source "cli"
