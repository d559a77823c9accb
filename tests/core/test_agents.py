"""Turns through each backend, recorded in Fractal's format: success, failure, timeout,
interrupt, a pending turn left by a killed Reprise, and a fake `fractal` that follows the
headless contract and writes the session itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from reprise.core import config
from reprise.core.errors import AgentError, PendingTurnError, UsageError
from reprise.core.paths import SessionRef
from reprise.core.service import Service
from reprise.core.sources.fractal.models import INTERRUPTED_ERROR

from .test_store import make_state

RECORDER = textwrap.dedent("""
    import json, os, sys
    message = sys.stdin.read()
    record = {"argv": sys.argv[1:], "cwd": os.getcwd(), "message": message, "pid": os.getpid(),
              "env": {k: v for k, v in os.environ.items() if k.startswith("REPRISE_")},
              "summary": open(os.environ["REPRISE_SUMMARY_FILE"]).read()}
    with open(os.environ["RECORD_TO"], "w") as out:
        json.dump(record, out)
    mode = os.environ.get("AGENT_MODE", "ok")
    if mode == "fail":
        sys.stderr.write("something broke\\n")
        sys.exit(3)
    if mode == "sleep":
        import time
        time.sleep(60)
    print("reply to: " + message.strip())
""")


@pytest.fixture
def workspace(tmp_path):
    folder = tmp_path / "work space; $(touch pwned)"
    folder.mkdir()
    return folder


def make_service(tmp_path: Path, workspace: Path, agent_toml: str = "") -> Service:
    (tmp_path / "config.toml").write_text(agent_toml)
    service = Service(config.load(state_dir=str(tmp_path / "state")), workspace=workspace)
    return service


@pytest.fixture
def recorder(tmp_path, monkeypatch):
    script = tmp_path / "agent.py"
    script.write_text(RECORDER)
    record = tmp_path / "record.json"
    monkeypatch.setenv("RECORD_TO", str(record))
    toml = (f'[agent]\nbackend = "command"\ntimeout = 2\n'
            f'turn = ["{sys.executable}", "{script}", "{{session_id}}", "{{workspace}}", "{{summary_file}}", '
            f'"literal {{session_id}}"]\n')
    return toml, record


def new_session(service: Service, turns: int = 0) -> SessionRef:
    ref = service.new_session("t")
    if turns:
        loaded = service.sources["fractal"].store.load(ref)
        service.sources["fractal"].store.save(ref, make_state(turns, ref.session_id), expected=loaded.version)
    return ref


def test_command_turn_succeeds_and_is_recorded_like_fractal(tmp_path, workspace, recorder):
    toml, record = recorder
    service = make_service(tmp_path, workspace, toml)
    ref = new_session(service, 2)
    result = service.send_turn(ref, "hello agent")
    assert result.outcome.status == "succeeded" and result.outcome.response == "reply to: hello agent"
    state = service.sources["fractal"].store.load(ref).state
    assert [t.status for t in state.turns] == ["succeeded"] * 3
    assert state.turns[-1].agent.response == "reply to: hello agent"
    assert state.history[-1].status == "succeeded" and state.history[-1].user_message == "hello agent"
    seen = json.loads(record.read_text())
    assert seen["message"] == "hello agent"
    assert seen["argv"][:2] == [ref.session_id, str(workspace)]  # metacharacters arrive literally
    assert seen["argv"][3] == "literal {session_id}"
    assert seen["cwd"] == str(workspace) and not (workspace / "pwned").exists()
    assert seen["env"]["REPRISE_SESSION_ID"] == ref.session_id
    assert seen["summary"].startswith("## Session Summary") and "Turn 3" in seen["summary"]
    assert service.sources["fractal"].store.read_meta(ref).estimates[result.turn_id] == result.estimate


def test_the_pending_turn_is_on_disk_while_the_program_runs(tmp_path, workspace, recorder, monkeypatch):
    toml, _ = recorder
    monkeypatch.setenv("AGENT_MODE", "sleep")
    service = make_service(tmp_path, workspace, toml.replace("timeout = 2", "timeout = 30"))
    ref = new_session(service)
    cancel = threading.Event()
    seen = {}

    def on_begin(turn_id):
        seen["state"] = service.sources["fractal"].store.load(ref).state
        cancel.set()

    result = service.send_turn(ref, "wait", cancel=cancel, on_begin=on_begin)
    assert seen["state"].turns[-1].agent is None and seen["state"].history[-1].status == "pending"
    assert result.outcome.status == "interrupted" and result.outcome.error == INTERRUPTED_ERROR
    assert service.sources["fractal"].store.load(ref).state.turns[-1].agent.status == "interrupted"


def test_a_failing_program_records_a_failed_turn_with_exit_status_and_stderr(tmp_path, workspace, recorder,
                                                                             monkeypatch):
    toml, _ = recorder
    monkeypatch.setenv("AGENT_MODE", "fail")
    service = make_service(tmp_path, workspace, toml)
    ref = new_session(service)
    result = service.send_turn(ref, "break it")
    assert result.outcome.status == "failed"
    assert "Exit status 3" in result.outcome.error and "something broke" in result.outcome.error
    turn = service.sources["fractal"].store.load(ref).state.turns[-1]
    assert turn.agent.status == "failed" and "something broke" in turn.agent.error


def test_a_program_over_its_timeout_is_stopped_and_the_turn_fails(tmp_path, workspace, recorder, monkeypatch):
    toml, _ = recorder
    monkeypatch.setenv("AGENT_MODE", "sleep")
    service = make_service(tmp_path, workspace, toml.replace("timeout = 2", "timeout = 0.5"))
    ref = new_session(service)
    started = time.monotonic()
    result = service.send_turn(ref, "slow")
    assert time.monotonic() - started < 10
    assert result.outcome.status == "failed" and "Timed out after 0.5 s" in result.outcome.error


def test_history_evictions_go_to_the_archive(tmp_path, workspace):
    service = make_service(tmp_path, workspace, "[history]\nmax_turns = 3\n")
    ref = new_session(service, 3)
    evicted_id = service.sources["fractal"].store.load(ref).state.history[0].turn_id
    service.send_turn(ref, "one more", agent="echo")
    state = service.sources["fractal"].store.load(ref).state
    assert len(state.history) == 3 and len(state.turns) == 4
    entries = [e for e in service.sources["fractal"].archive.entries(ref) if e.op == "evict"]
    assert entries and entries[0].anchors == [evicted_id]
    archived = json.loads(service.sources["fractal"].archive.read(ref, entries[0].digest))
    assert archived["history"][0]["turn_id"] == evicted_id


def test_sending_is_refused_while_a_turn_runs_when_empty_and_when_over_the_window(tmp_path, workspace):
    service = make_service(tmp_path, workspace)
    ref = new_session(service, 1)
    with pytest.raises(UsageError, match="empty"):
        service.send_turn(ref, "   ", agent="echo")
    loaded = service.sources["fractal"].store.load(ref)
    state = loaded.state
    state.turns[-1].agent = None
    state.history[-1].status = "pending"
    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    state.history[-1].created_at = state.history[-1].updated_at = now
    service.sources["fractal"].store.save(ref, state, expected=loaded.version)
    with pytest.raises(PendingTurnError, match="still running"):
        service.send_turn(ref, "hi", agent="echo")
    small = make_service(tmp_path, workspace, '[meter]\nmodel = "m"\n[[meter.models]]\npattern = "m"\nwindow = 100\n')
    other = new_session(small)
    with pytest.raises(UsageError, match="over the"):
        small.send_turn(other, "hi", agent="echo")
    assert small.send_turn(other, "hi", agent="echo", confirm_over=True).outcome.status == "succeeded"


def test_no_backend_says_how_to_configure_one(tmp_path, workspace, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    service = make_service(tmp_path, workspace)
    ref = new_session(service)
    with pytest.raises(AgentError, match="No agent backend"):
        service.send_turn(ref, "hi")
    assert len(service.sources["fractal"].store.load(ref).state.turns) == 0


def test_a_pending_turn_left_by_a_killed_reprise_is_reported_and_can_be_marked_interrupted(
        tmp_path, workspace, recorder, monkeypatch):
    toml, record = recorder
    toml = toml.replace("timeout = 2", "timeout = 1")
    service = make_service(tmp_path, workspace, toml)
    ref = new_session(service)
    env = {**os.environ, "AGENT_MODE": "sleep", "REPRISE_CONFIG": str(tmp_path / "config.toml")}
    child = subprocess.Popen([sys.executable, "-m", "reprise.tui.cli", "--state-dir", str(tmp_path / "state"),
                              "--workspace", str(workspace), "send", ref.session_id, "--message", "doomed"],
                             env=env, cwd=workspace)
    for _ in range(100):
        time.sleep(0.05)
        if service.sources["fractal"].store.load(ref).state.turns:
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    for _ in range(100):  # the agent outlives a SIGKILLed Reprise: end it, by its pid
        try:
            os.kill(json.loads(record.read_text())["pid"], signal.SIGKILL)
            break
        except (OSError, ValueError):  # not written yet, or half written
            time.sleep(0.05)
    state = service.sources["fractal"].store.load(ref).state
    assert state.turns[-1].agent is None  # left pending
    time.sleep(1.2)
    stale = service.stale_pending(ref)
    assert [number for number, _, _ in stale] == [1]
    assert service.mark_stale_interrupted(ref) == [stale[0][1]]
    assert service.sources["fractal"].store.load(ref).state.turns[-1].agent.status == "interrupted"


FAKE_FRACTAL = textwrap.dedent('''\
    #!{python}
    """A stand-in for `fractal` that follows the headless contract and saves like Fractal."""
    import hashlib, json, os, re, sys, uuid
    from datetime import datetime, timezone
    from pathlib import Path
    args = sys.argv[1:]
    workspace = Path(args[args.index("--workspace") + 1]).expanduser().resolve()
    session_id = args[args.index("--resume") + 1]
    assert args[args.index("-p") + 1] == "-" and "--json" in args and "--quiet" in args
    message = sys.stdin.read()
    parts = "-".join(p for p in workspace.parts if p != workspace.anchor)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", parts).strip("-._") or "workspace"
    key = f"{{slug[:80]}}--{{hashlib.sha256(str(workspace).encode()).hexdigest()[:16]}}"
    path = Path(os.environ["FRACTAL_STATE_HOME"]) / "workspaces" / key / "sessions" / f"{{session_id}}.json"
    if not path.exists():
        print(f"No Fractal session found for id {{session_id}}", file=sys.stderr)
        sys.exit(1)
    state = json.loads(path.read_text())
    turn_id = "turn-" + uuid.uuid4().hex
    now = datetime.now(timezone.utc).isoformat()
    if "hang" in message:  # like headless Fractal: the pending turn in place, no lock; SIGINT exits 130
        import signal, time
        def save_pending():
            state["summary"]["turns"].append({{"turn_id": turn_id, "user": {{"message": message}}, "agent": None}})
            state["history"].append({{"turn_id": turn_id, "user_message": message, "status": "pending",
                "files_read": [], "files_modified": [], "commands_run": [], "trace": None, "error": None,
                "created_at": now, "updated_at": now}})
            path.write_text(json.dumps(state, indent=2) + "\\n")
        def interrupted(*_):
            time.sleep(1)  # still saving when the interrupt came: the file is written again, still pending
            path.write_text(json.dumps(state, indent=2) + "\\n")
            os._exit(130)
        signal.signal(signal.SIGINT, interrupted)
        save_pending()
        Path(os.environ.get("FAKE_FRACTAL_PIDS", os.devnull)).write_text(str(os.getpid()))
        time.sleep(300)
    usage = {{"input_tokens": 900, "output_tokens": 50, "cost": 0.01, "duration_ms": 10, "iterations": 2,
              "context_tokens": 15000}}
    status = "failed" if "fail" in message else "succeeded"
    error = "model refused" if status == "failed" else None
    state["summary"]["turns"].append({{"turn_id": turn_id, "user": {{"message": message}}, "agent": {{
        "status": status, "response": "did it", "files_read_count": 1, "files_changed_count": 1,
        "commands_run_count": 0, "error": error, "usage": usage}}}})
    state["history"].append({{"turn_id": turn_id, "user_message": message, "status": status, "files_read": ["a.py"],
        "files_modified": ["a.py"], "commands_run": [], "trace": None, "error": error,
        "created_at": now, "updated_at": now}})
    state["history"] = state["history"][-20:]
    path.write_text(json.dumps(state, indent=2) + "\\n")
    if "flood" in message:  # the turn saved, then far more on stdout than [agent] max_reply_bytes
        sys.stdout.write("x" * (12 * 1024 * 1024) + "\\n")
        sys.exit(0)
    print(json.dumps({{"session_id": session_id, "workspace": str(workspace), "status": status, "response": "did it",
                      "changed_files": ["a.py"], "usage": usage, "error": error}}))
    sys.exit(0 if status == "succeeded" else 1)
''')


@pytest.fixture
def fake_fractal(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "fractal"
    program.write_text(FAKE_FRACTAL.format(python=sys.executable))
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FRACTAL_STATE_HOME", str(tmp_path / "state"))
    return program


def test_fractal_backend_runs_headless_and_reloads_what_fractal_saved(tmp_path, workspace, fake_fractal):
    service = make_service(tmp_path, workspace)
    ref = new_session(service, 2)
    result = service.send_turn(ref, "refactor the parser")
    assert result.backend == "fractal" and result.outcome.status == "succeeded"
    assert result.outcome.files_modified == ["a.py"] and result.outcome.usage["context_tokens"] == 15000
    state = service.sources["fractal"].store.load(ref).state
    assert len(state.turns) == 3 and state.turns[-1].turn_id == result.turn_id
    assert service.estimates_vs_measured(ref) == [(3, result.estimate, 15000)]
    failed = service.send_turn(ref, "please fail")
    assert failed.outcome.status == "failed" and failed.outcome.error == "model refused"


def test_fractal_backend_snapshots_a_file_whose_save_would_drop_data(tmp_path, workspace, fake_fractal):
    service = make_service(tmp_path, workspace)
    ref = new_session(service, 22)
    path = service.sources["fractal"].store.paths.session_file(ref)
    original = path.read_bytes()
    service.send_turn(ref, "go")
    snapshots = [e for e in service.sources["fractal"].archive.entries(ref) if e.op == "snapshot"]
    assert len(snapshots) == 1 and service.sources["fractal"].archive.read(ref, snapshots[0].digest) == original
