"""Signals to `reprise send` while a turn runs (Ctrl-C, SIGTERM, a closed terminal's SIGHUP):
the agent and every process it started, even a `setsid` daemon ignoring SIGTERM and SIGINT, are
gone before Reprise records the turn `interrupted`; Reprise exits 130, 143 or 129 with one line
on stderr and no traceback, and the audit log has the line too. A headless Fractal that exits
130 leaving its turn pending, still writing as it goes, is waited for before its file is fixed."""

from __future__ import annotations

import json
import os
import signal

import pytest

from reprise.core.sources.fractal.models import INTERRUPTED_ERROR

from ..core.test_agents import fake_fractal  # noqa: F401  (a fixture)
from .agents_at_hand import alive, pids_in, setup, wait_for

EXPECTED_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


def audit_lines(at) -> list[dict]:
    path = at.service.sources["fractal"].store.paths.audit_file(at.ref.workspace_key)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def pending_on_disk(at) -> bool:
    state = at.service.sources["fractal"].store.load(at.ref).state
    return bool(state.turns) and state.turns[-1].agent is None


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
@pytest.mark.parametrize("mode", ["daemon hang", "daemon stubborn hang"])
def test_a_signal_to_send_ends_every_agent_process_then_records_the_turn_interrupted(tmp_path, sig, mode):
    with setup(tmp_path) as at:
        child = at.start_send("work for a long time", mode)
        assert wait_for(lambda: len(pids_in(at.pids_file)) == 2 and pending_on_disk(at))
        child.send_signal(sig)
        status, _, err = at.finish(child)
        assert status == EXPECTED_STATUS[sig]
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert sig.name in err and "interrupted" in err
        pids = pids_in(at.pids_file)
        assert not any(alive(pid) for pid in pids), [pid for pid in pids if alive(pid)]
        turn, entry = at.last_turn()
        assert turn.agent.status == "interrupted" and entry.status == "interrupted"
        assert turn.agent.error == INTERRUPTED_ERROR
        lines = [line for line in audit_lines(at) if line["op"] == "interrupt"]
        assert len(lines) == 1 and lines[0]["options"]["signal"] == sig.name
        assert lines[0]["result"] == "interrupted" and lines[0]["session_id"] == at.ref.session_id


@pytest.mark.usefixtures("fake_fractal")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_headless_fractal_leaving_its_turn_pending_is_waited_for_then_its_turn_marked_interrupted(
        tmp_path, monkeypatch, sig):
    with setup(tmp_path, backend="fractal") as at:
        fractal_pid = at.pids_file  # where the fake notes its pid; the cleanup ends it if still there
        monkeypatch.setenv("FAKE_FRACTAL_PIDS", str(fractal_pid))
        at.env["FAKE_FRACTAL_PIDS"] = str(fractal_pid)
        child = at.start_send("hang on", "")
        assert wait_for(lambda: fractal_pid.exists() and pending_on_disk(at))
        child.send_signal(sig)
        status, _, err = at.finish(child)
        assert status == EXPECTED_STATUS[sig]
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert not alive(int(fractal_pid.read_text()))
        turn, entry = at.last_turn()  # Fractal's last in-place write came after the signal; Reprise's after it
        assert turn.agent is not None and turn.agent.status == "interrupted" and entry.status == "interrupted"
        assert entry.user_message == "hang on"


def test_a_signal_with_no_terminal_left_still_records_the_turn_and_the_audit_line(tmp_path):
    with setup(tmp_path) as at:
        child = at.start_send("work", "daemon hang", "--json")
        assert wait_for(lambda: len(pids_in(at.pids_file)) == 2 and pending_on_disk(at))
        child.stdout.close()  # the reader is gone too
        child.send_signal(signal.SIGHUP)
        status, _, err = at.finish(child)
        assert status == 129 and "Traceback" not in err
        assert at.last_turn()[0].agent.status == "interrupted"
        assert not any(alive(pid) for pid in pids_in(at.pids_file))
        assert [line["options"]["signal"] for line in audit_lines(at) if line["op"] == "interrupt"] == ["SIGHUP"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
async def test_a_signal_to_the_tui_while_a_turn_runs_ends_the_turn_first_then_the_app(tmp_path, monkeypatch, sig):
    from reprise.tui.app import make_app

    from ..tui.conftest import until as wait_in_app
    from ..tui.test_turns import type_and_send

    with setup(tmp_path) as at:
        monkeypatch.setenv("PIDS_FILE", str(at.pids_file))
        monkeypatch.setenv("AGENT_MODE", "daemon stubborn hang")
        app = make_app(at.service, follow_disk=False)
        unhandled = []
        previous = signal.signal(sig, lambda signum, _frame: unhandled.append(signum))  # the app's replaces it
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                await wait_in_app(pilot, lambda: app.screen.query("SessionList") and
                                  app.screen.query_one("SessionList").current is not None)
                await type_and_send(pilot, "long task")
                await wait_in_app(pilot, lambda: len(pids_in(at.pids_file)) == 2 and pending_on_disk(at), 30)
                os.kill(os.getpid(), sig)
                await wait_in_app(pilot, lambda: app.return_code is not None, 60)
        finally:
            signal.signal(sig, previous)
        assert unhandled == []
        assert app.return_code == EXPECTED_STATUS[sig]
        assert not any(alive(pid) for pid in pids_in(at.pids_file))
        turn, entry = at.last_turn()
        assert turn.agent.status == "interrupted" and entry.status == "interrupted"
        lines = [line for line in audit_lines(at) if line["op"] == "interrupt"]
        assert [(line["options"]["signal"], line["result"]) for line in lines] == [(sig.name, "interrupted")]


@pytest.mark.parametrize("ending", ["SIGTERM", "terminal closed"])
def test_the_reprise_process_ends_only_once_a_running_turn_is_stopped_and_recorded(tmp_path, ending):
    """The whole `reprise` process on a terminal: its last resort (an end forced a second after
    the app exits) waits for a turn whose agent ignores SIGTERM to be stopped and recorded."""
    from bench.terminal import OnTerminal, plain

    with setup(tmp_path) as at:
        terminal = OnTerminal(at.argv(), env={**at.env, "AGENT_MODE": "daemon stubborn hang"}, cwd=str(at.workspace))
        try:
            assert wait_for(lambda: terminal.shows("sessions shown"), 90), terminal.output[-2000:]
            terminal.type(b"\t")   # Tab: to the composer, typed into once its frame (and focus) is there
            assert wait_for(lambda: terminal.shows("ctrl+s send"), 90), terminal.output[-2000:]
            terminal.type(b"long task")
            assert wait_for(lambda: terminal.shows("long task"), 90), terminal.output[-2000:]
            terminal.type(b"\x13")   # ctrl+s: send
            assert wait_for(lambda: len(pids_in(at.pids_file)) == 2 and pending_on_disk(at), 90), \
                plain(bytes(terminal.output))[-3000:]
            if ending == "terminal closed":
                terminal.close()
            else:
                terminal.child.send_signal(signal.SIGTERM)
            assert terminal.child.wait(timeout=90) == (129 if ending == "terminal closed" else 143)
        finally:
            terminal.end()
        name = "SIGHUP" if ending == "terminal closed" else "SIGTERM"
        assert not any(alive(pid) for pid in pids_in(at.pids_file))
        turn, entry = at.last_turn()
        assert turn.agent.status == "interrupted" and entry.status == "interrupted"
        lines = [line for line in audit_lines(at) if line["op"] == "interrupt"]
        assert [(line["options"]["signal"], line["result"]) for line in lines] == [(name, "interrupted")]
