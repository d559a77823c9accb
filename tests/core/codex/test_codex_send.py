"""Send and trash for Codex sessions, on rollouts the real Codex CLI wrote (tests/fixtures/codex-store),
with a fake `codex` on PATH (fake_codex.py) for the turns: the message goes on stdin only, with the
default `[sources.codex] send` argv (no bypass of approvals), in the session's folder; the reply and
the measured context after the turn come back; a failed turn is a failure. `rm` moves a rollout into
Reprise's trash (Codex's SQLite untouched) and says what Codex then does; restore puts it back byte
for byte, and only into a date folder of a Codex root."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprise.core.errors import ConflictError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.sources.codex.settings import SEND as CODEX_SEND
from reprise.core.sources.codex.turns import parse_events
from reprise.tui import cli

STORE = Path(__file__).parents[2] / "fixtures" / "codex-store"
THREE = "01a2331b-c3e0-7ab0-a9f5-6874c14f3431"
ONE = "01a2331b-c171-76a1-87a8-af4737721e6c"
ALPHA = "/tmp/reprise-codex-fixture/work/alpha"
FAKE = Path(__file__).with_name("fake_codex.py")


@pytest.fixture
def root(monkeypatch) -> Path:
    codex_home = Path(os.environ["CODEX_HOME"])
    shutil.copytree(STORE / "sessions", codex_home / "sessions")
    os.makedirs(ALPHA, exist_ok=True)
    monkeypatch.chdir(ALPHA)
    return codex_home


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A fake `codex` first on PATH; returns the log of its runs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "codex"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
    program.chmod(0o755)
    log = tmp_path / "fake-codex.log"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CODEX_LOG", str(log))
    return lambda: [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def rollout(root: Path, session_id: str) -> Path:
    [path] = (root / "sessions").glob(f"*/*/*/rollout-*-{session_id}.jsonl")
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_the_events_of_the_real_exec_runs_give_the_thread_the_reply_and_the_failure():
    steps = {step["label"]: step["events"] for step in json.loads((STORE / "steps.json").read_text())}
    one = parse_events("\n".join(json.dumps(event) for event in steps["one turn"]))
    assert (one.thread_id, one.reply, one.completed, one.error) == (
        ONE, "Noted MARKsolo; my answer word is REPLYsolo.", True, None)
    failed = parse_events("\n".join(json.dumps(event) for event in steps["api error"]))
    assert not failed.completed and "the fake server was asked to fail" in (failed.error or "")


@pytest.mark.parametrize("message", ["--dangerously-bypass-approvals-and-sandbox", "é\n" * 100_000],
                         ids=["option", "long"])
def test_send_puts_the_message_on_stdin_and_reads_the_turn_codex_saved(root, fake, capsys, monkeypatch, message):
    path = rollout(root, THREE)
    before = path.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.StringIO(message))
    status, out, err = run(capsys, "send", THREE, "--message-file", "-", "--json")
    assert status == 0, out + err
    [call] = fake()
    assert call["argv"] == [part.replace("{session_id}", THREE) for part in CODEX_SEND[1:]]
    assert not any("dangerously" in part or "bypass" in part for part in CODEX_SEND)
    assert call["stdin"] == message and call["cwd"] == ALPHA
    assert call["codex_home"] == str(root)
    assert path.read_bytes().startswith(before)   # Codex appended; Reprise wrote nothing there
    document = json.loads(out)
    assert document["status"] == "succeeded" and document["response"] == f"Reply to: {message}"
    assert document["turn_id"] == "turn-fake"
    assert document["usage"]["context_tokens"] == 4321        # measured in the rollout, not the printed total
    status, out, _ = run(capsys, "show", THREE, "--json")
    assert [t["user_message"] for t in json.loads(out)["transcript"]["turns"]][-1] == message


def test_a_failed_codex_turn_is_a_failure_with_its_message(root, fake, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("FAILNOW please"))
    status, out, err = run(capsys, "send", THREE, "--message-file", "-", "--json")
    assert status != 0
    assert "the model refused FAILNOW" in out + err


def test_rm_moves_the_rollout_to_the_trash_says_what_codex_does_and_restore_puts_it_back(root, capsys):
    path = rollout(root, ONE)
    before = path.read_bytes()
    status, out, err = run(capsys, "rm", ONE)
    assert status == 0, out + err
    assert not path.exists() and "Codex cannot resume it while it is in Reprise's trash" in err
    assert f"reprise trash restore {ONE[-8:]} puts it back" in out   # the random end names a Codex id
    status, out, _ = run(capsys, "trash", "list", "--json")
    assert [entry["session_id"] for entry in json.loads(out)["trash"]] == [ONE]
    assert not list(root.glob("*.sqlite*"))   # nothing of Codex's own index was made or touched
    status, out, err = run(capsys, "trash", "restore", ONE[-8:])
    assert status == 0, out + err
    assert path.read_bytes() == before


def test_restore_refuses_a_place_that_is_not_a_date_folder_of_a_codex_root(root):
    service = Service.from_environment(workspace=ALPHA)
    source = service.sources["codex"]
    ref = SessionRef(workspace_key(ALPHA), ONE, "codex")
    source.remove(ref, force=True)
    trash = source._trash()
    record_path = trash.files(ref).record
    record = json.loads(record_path.read_text())
    record["from"] = str(root / "elsewhere" / Path(record["from"]).name)
    record_path.write_text(json.dumps(record))
    with pytest.raises(ConflictError, match="not a session file of a Codex root"):
        source.trash_restore(ref)
    assert trash.contains(ref)


def test_a_send_is_refused_while_another_process_holds_the_rollout_open_for_writing(root, fake, capsys, monkeypatch):
    path = rollout(root, THREE)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nf = open(sys.argv[1], 'a')\n"
                               "print('open', flush=True)\ntime.sleep(60)", str(path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        monkeypatch.setattr(sys, "stdin", io.StringIO("hello"))
        status, out, err = run(capsys, "send", THREE, "--message-file", "-", "--json")
    finally:
        holder.kill()
        holder.wait()
    assert status != 0 and "Codex may be running session" in out + err
    assert fake() == []   # codex was never started


def test_prune_moves_old_codex_sessions_to_the_trash_and_keeps_the_newest(root, capsys):
    day = root / "sessions" / "2026" / "12" / "01"
    alpha = [path for path in day.iterdir()
             if json.loads(path.read_text().split("\n", 1)[0])["payload"]["cwd"] == ALPHA]
    status, out, err = run(capsys, "prune", "--older-than", "1m", "--keep-last", "1", "--yes")
    assert status == 0, out + err
    left = [path for path in alpha if path.exists()]
    assert len(alpha) == 5 and len(left) == 1
    status, out, _ = run(capsys, "trash", "list", "--json")
    assert len(json.loads(out)["trash"]) == 4


def test_new_starts_a_rollout_on_an_id_reprise_chose_with_its_title(root, capsys, tmp_path):
    status, out, err = run(capsys, "new", "--agent", "codex", "--title", "Started in Reprise", "--print", "--json")
    assert status == 0, out + err
    place = json.loads(out)
    session_id = place["session_id"]
    assert place["command"] == ["codex", "resume", session_id] and place["workspace_path"] == ALPHA
    [path] = (root / "sessions").glob(f"*/*/*/rollout-*-{session_id}.jsonl")
    [line] = path.read_text().splitlines()
    meta = json.loads(line)["payload"]
    assert (meta["id"], meta["cwd"], meta["source"]) == (session_id, ALPHA, "cli")
    assert meta["cli_version"] == "0.171.0"   # the version the store's newest rollout was written by
    status, out, _ = run(capsys, "list", "--json")
    rows = {row["session_id"]: row for row in json.loads(out)["sessions"]}
    assert rows[session_id]["title"] == "Started in Reprise" and rows[session_id]["turns"] == 0


def test_a_new_rollout_at_the_emptied_path_while_rm_runs_is_kept_and_rm_refuses_naming_both(root, tmp_path):
    """Codex's trash is Claude Code's: the rollout is taken off its path before it is compared."""
    from tests.factories import GATE_TIMEOUT_S, wait_for_file
    path = rollout(root, ONE)
    before = path.read_bytes()
    gate = tmp_path / "gate"
    script = ("import json, sys\nfrom reprise.core.errors import RepriseError\n"
              "from reprise.core.service import Service\n"
              "s = Service.from_environment(workspace=sys.argv[1])\n"
              "try:\n    s.sources['codex'].remove(s.resolve(sys.argv[2]), force=True)\n"
              "except RepriseError as exc:\n    print(json.dumps({'error': exc.code, 'message': exc.message}))\n")
    process = subprocess.Popen([sys.executable, "-c", script, ALPHA, ONE], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "REPRISE_FAULTS": f"claude_trash_set_aside=wait:{gate}"})
    wait_for_file(Path(f"{gate}.reached"), process)
    late = b'{"timestamp":"2026-01-01T00:00:00.000Z","type":"event_msg","payload":{"type":"token_count"}}\n'
    path.write_bytes(late)   # Codex appends to the path it knows: a new file
    gate.touch()
    out, _ = process.communicate(timeout=GATE_TIMEOUT_S)
    result = json.loads(out)
    hidden = path.parent / f".{path.name}.reprise-rm"
    assert result["error"] == "conflict" and str(path) in result["message"] and str(hidden) in result["message"]
    assert path.read_bytes() == late and hidden.read_bytes() == before
    assert Service.from_environment(workspace=ALPHA).trash_entries() == []
