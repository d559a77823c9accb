"""Reprise's writes to Gemini CLI sessions against the real Gemini CLI (issue 29, "Checked against the real
client"), each test on a store of its own made by the real client in a loopback-only namespace
(sessions.py): `reprise trim ID --fork` writes a session file the real `gemini --resume NEWID` resumes
with exactly the kept turns (captured at the fake server) while the original's bytes stay as they were;
`reprise send` (run inside the namespace, the message on stdin) adds a turn the next `gemini --resume`
continues; `reprise rm` and `reprise trash restore` give back a session the client resumes, and while it
is in the trash the client cannot; `reprise new` names an id the client starts a session on; and a
session Reprise kept survives the client's own sweep (a 1-day `maxAge`, the session's `lastUpdated`
backdated): the client deletes the original, Reprise still lists and shows it from its copy, and a
resume puts the copy back where the client resumes it again."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from reprise.tui import cli

from .sessions import SETTINGS, LiveGemini, Step, make_root, node, prompt_step, remove_root

pytestmark = pytest.mark.compat

# the variables that give a `reprise` run inside the namespace this test's own Reprise folders
REPRISE_ENV = ("REPRISE_STATE_DIR", "REPRISE_CACHE_DIR", "REPRISE_CONFIG", "XDG_CONFIG_HOME", "REPRISE_DATA_DIR")


class ReprisedStep(Step):
    """`python -m reprise.tui.cli ARGS` (what the `reprise` script runs) instead of the client."""

    def argv(self, binary: Path) -> list[str]:
        return [sys.executable, "-m", "reprise.tui.cli", *self.args]


@pytest.fixture
def live(gemini_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A fresh store the real client writes and Reprise reads, with `[sources.gemini] send` naming the
    real client (run by node)."""
    root = make_root()
    live = LiveGemini(gemini_bin, root)
    command = json.dumps([node(), str(gemini_bin)])[1:-1]
    Path(os.environ["REPRISE_CONFIG"]).write_text(
        f'[sources.gemini]\nsend = [{command}, "--resume", "{{session_id}}", "--output-format", "json", "-p", ""]\n')
    monkeypatch.setenv("GEMINI_CLI_HOME", str(live.home))
    yield live
    remove_root(root)


def reprise(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    status = cli.main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert status == 0, f"reprise {' '.join(argv)} exited {status}: {out}{err}"
    return json.loads(out)


def reprise_env() -> dict[str, str]:
    return {name: os.environ[name] for name in REPRISE_ENV if name in os.environ}


def texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of each text part of a turn request's `contents` (the injected context left out)."""
    return [(content["role"], part["text"]) for content in body["contents"] for part in content.get("parts", [])
            if isinstance(part.get("text"), str) and not part["text"].startswith("<session_context>")]


def ok(result: Any) -> Any:
    assert result.returncode == 0 and result.session_id, result.describe()
    return result


def three_turns(live: Any, folder: Path) -> str:
    """A session of three turns (a new one, two resumes) made by the real client; its id."""
    session_id = ok(live.one(prompt_step("Start a plan MARKfirst", folder))).session_id
    for result in live.run([prompt_step("Continue the plan MARKsecond", folder, resume=session_id),
                            prompt_step("Finish the plan MARKthird", folder, resume=session_id)]):
        ok(result)
    return session_id


def reply(word: str) -> str:
    return f"Noted MARK{word}; my answer word is REPLY{word}."


def test_a_fork_is_resumed_by_the_real_client_with_exactly_its_kept_turns(live, capsys, monkeypatch):
    alpha = live.folder("alpha")
    monkeypatch.chdir(alpha)
    session_id = three_turns(live, alpha)
    # Its file, and a stub for each resume that began in a later minute than it (a busy machine's runs
    # can cross one): the source's files are never changed.
    originals = live.files_of(session_id)
    before = {path: path.read_bytes() for path in originals}
    document = reprise(capsys, "trim", session_id, "--fork", "--drop", "2")
    assert document["forked"] and document["applied"], document
    fork_id = document["session_id"]
    [fork] = live.files_of(fork_id)
    assert fork.parent == originals[0].parent and {path: path.read_bytes() for path in originals} == before
    assert b"MARKsecond" not in fork.read_bytes() and b"$set" not in fork.read_bytes()
    resumed = ok(live.one(prompt_step("Go on with the fork MARKafter", alpha, resume=fork_id)))
    assert resumed.session_id == fork_id
    assert texts(resumed.turns[-1]) == [("user", "Start a plan MARKfirst"), ("model", reply("first")),
                                        ("user", "Finish the plan MARKthird"), ("model", reply("third")),
                                        ("user", "Go on with the fork MARKafter")]
    # The client's start-up sweep deletes a stub (a file without conversation) of a resume that crossed
    # a minute: every file left is as it was, and the one holding the conversation is left.
    assert originals[0].exists() and {path: path.read_bytes() for path in originals if path.exists()} == \
        {path: data for path, data in before.items() if path.exists()}
    assert any(b"MARKafter" in path.read_bytes() for path in live.files_of(fork_id))
    shown = reprise(capsys, "show", fork_id)["transcript"]["turns"]
    assert [turn["user_message"] for turn in shown] == ["Start a plan MARKfirst", "Finish the plan MARKthird",
                                                       "Go on with the fork MARKafter"]


def test_reprise_send_adds_a_turn_that_the_next_resume_continues(live, capsys):
    alpha = live.folder("alpha")
    session_id = ok(live.one(prompt_step("Start a plan MARKfirst", alpha))).session_id
    message = "--not-an-option: sent through Reprise on stdin MARKviasend"
    sent, resumed = live.run([
        ReprisedStep(["send", session_id, "--message-file", "-", "--json"], live.folder("elsewhere"),
                    stdin=message, label="reprise send"),
        prompt_step("And after Reprise's turn MARKafterreprise", alpha, resume=session_id)], env=reprise_env())
    assert sent.returncode == 0, sent.describe()
    document = json.loads(sent.stdout)
    assert document["status"] == "succeeded" and document["response"] == reply("viasend"), sent.describe()
    assert ("user", message) in texts(sent.turns[-1])
    ok(resumed)
    assert texts(resumed.turns[-1]) == [("user", "Start a plan MARKfirst"), ("model", reply("first")),
                                        ("user", message), ("model", reply("viasend")),
                                        ("user", "And after Reprise's turn MARKafterreprise")]


def test_trash_and_restore_give_back_a_session_the_real_client_resumes(live, capsys, monkeypatch):
    alpha = live.folder("alpha")
    monkeypatch.chdir(alpha)
    session_id = ok(live.one(prompt_step("Start a plan MARKfirst", alpha))).session_id
    [path] = live.files_of(session_id)
    before = path.read_bytes()
    status = cli.main(["rm", session_id])
    out, err = capsys.readouterr()
    assert status != 0 and "may be writing" in out + err and path.exists()   # its lastUpdated is seconds old
    assert cli.main(["rm", session_id, "--force"]) == 0
    out, err = capsys.readouterr()
    assert "Gemini CLI cannot resume it while it is in Reprise's trash" in out + err
    assert not path.exists()
    missing = live.one(prompt_step("While trashed MARKtrashed", alpha, resume=session_id))
    assert missing.returncode != 0 and not missing.turns, missing.describe()
    said = missing.stdout + missing.stderr   # the only session of its folder: "No previous sessions found"
    assert "Invalid session identifier" in said or "No previous sessions found for this project" in said
    assert reprise(capsys, "trash", "restore", session_id)["session_id"] == session_id
    assert path.read_bytes() == before
    restored = ok(live.one(prompt_step("Restored MARKrestored", alpha, resume=session_id)))
    assert texts(restored.turns[-1])[:2] == [("user", "Start a plan MARKfirst"), ("model", reply("first"))]


def test_reprise_new_names_an_id_the_real_client_starts_and_resumes(live, capsys, monkeypatch):
    alpha = live.folder("alpha")
    monkeypatch.chdir(alpha)
    ok(live.one(prompt_step("Before Reprise's new session MARKbefore", alpha)))   # the store exists (tmp/)
    place = reprise(capsys, "new", "--agent", "gemini", "--title", "Started in Reprise", "--print")
    session_id = place["session_id"]
    assert place["command"] == ["gemini", "--session-id", session_id]
    started = ok(live.one(Step(["--output-format", "json", "--session-id", session_id, "-p",
                                "The first words MARKnew"], alpha)))
    assert started.session_id == session_id
    resumed = ok(live.one(prompt_step("Next MARKnext", alpha, resume=session_id)))
    assert texts(resumed.turns[-1])[:2] == [("user", "The first words MARKnew"), ("model", reply("new"))]
    rows = {row["session_id"]: row for row in reprise(capsys, "list")["sessions"]}
    assert (rows[session_id]["title"], rows[session_id]["turns"]) == ("Started in Reprise", 2)


def backdate(path: Path, days: float) -> None:
    """Set every `lastUpdated` and `startTime` the file records `days` earlier (the sweep's clock)."""
    from datetime import datetime, timedelta

    def earlier(text: str) -> str:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00")) - timedelta(days=days)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

    lines = []
    for raw in path.read_text().splitlines():
        record = json.loads(raw)
        for holder in (record, record.get("$set") if isinstance(record.get("$set"), dict) else {}):
            for key in ("lastUpdated", "startTime"):
                if isinstance(holder.get(key), str):
                    holder[key] = earlier(holder[key])
        lines.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n")


def test_a_kept_session_survives_the_clients_own_sweep(gemini_bin, capsys, monkeypatch):
    root = make_root()
    try:
        live = LiveGemini(gemini_bin, root, settings={
            **SETTINGS, "general": {**SETTINGS["general"], "sessionRetention": {"maxAge": "1d"}}})
        monkeypatch.setenv("GEMINI_CLI_HOME", str(live.home))
        alpha = live.folder("alpha")
        monkeypatch.chdir(alpha)
        old = ok(live.one(prompt_step("An old plan MARKold", alpha))).session_id
        [path] = live.files_of(old)
        backdate(path, 3)
        before = path.read_bytes()
        rows = {row["session_id"]: row for row in reprise(capsys, "list")["sessions"]}
        assert rows[old]["deleted_by_agent_at"] is not None and not rows[old]["kept"]
        kept = reprise(capsys, "keep", "--due", "7")
        assert old in json.dumps(kept)
        ok(live.one(prompt_step("A new session sweeps MARKsweep", alpha)))
        assert not path.exists()   # the client's sweep deleted it
        from reprise.core.archive import Archive
        from reprise.core.paths import OwnPaths, SessionRef
        from reprise.core.sources.gemini.keep import read_kept

        ref = SessionRef(rows[old]["workspace_key"], old, "gemini")
        copy = read_kept(Archive(OwnPaths(Path(os.environ["REPRISE_DATA_DIR"]), "gemini")), ref)
        assert copy == before
        listed = {row["session_id"]: row for row in reprise(capsys, "list", "--source", "gemini")["sessions"]}
        assert listed[old]["kept"] and listed[old]["workspace_path"] == str(alpha)   # from the kept copy
        assert listed[old]["warning"].startswith("Gemini CLI deleted its file")
        assert [turn["user_message"] for turn in reprise(capsys, "show", old)["transcript"]["turns"]] == \
            ["An old plan MARKold"]
        # The way back: a resume puts the kept file back where the client had it, then runs the client
        # (its program named by an absolute path: the plan puts files back only when it can run).
        command = json.dumps([node(), str(gemini_bin)])[1:-1]
        Path(os.environ["REPRISE_CONFIG"]).write_text(
            f'[sources.gemini]\nresume = [{command}, "--resume", "{{session_id}}"]\n')
        from reprise.core.service import Service

        plan = Service.from_environment(workspace=str(alpha)).resume_plan(ref)
        assert plan.program_missing is None and plan.cwd == str(alpha) and old in plan.argv
        assert path.read_bytes() == before and any("put the copy it kept back" in note for note in plan.notes)
        resumed = ok(live.one(prompt_step("Back again MARKback", alpha, resume=old)))
        assert texts(resumed.turns[-1])[:2] == [("user", "An old plan MARKold"), ("model", reply("old"))]
    finally:
        remove_root(root)
