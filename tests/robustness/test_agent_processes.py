"""An agent's processes end when Reprise says so, and what it prints stays within bounds: a
`setsid` daemon holding the agent's output neither keeps `reprise send` waiting nor survives a
timeout, even when it ignores SIGTERM; a reply over `[agent] max_reply_bytes` is recorded cut
with a marker while its whole output goes to the session's archive, viewable and exportable.
Each test drives `reprise send` as a real process and ends, by pid, whatever it left."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading

import pytest

from reprise.core import config, processes
from reprise.core.agents import CommandBackend, TurnRequest
from reprise.core.sources.fractal.store import MAX_SESSION_BYTES

from ..core.test_agents import fake_fractal  # noqa: F401  (a fixture)
from .agents_at_hand import AGENT, alive, pids_in, setup

MARKER = re.compile(r"\n\[reprise: ([\d,]+) characters cut; archive ([0-9a-f]{64})\]")
FLOOD = "abcdé\n" * (12 * 1024 * 1024 // 7)


def test_a_setsid_daemon_holding_the_output_does_not_keep_send_waiting_and_is_named_and_left_alone(tmp_path):
    with setup(tmp_path) as at:
        status, out, err = at.finish(at.start_send("start the dev server", "daemon"))
        assert status == 0, err
        agent_pid, daemon_pid = pids_in(at.pids_file)
        assert not alive(agent_pid)
        assert alive(daemon_pid)  # a dev server the user asked for: left running
        turn, entry = at.last_turn()
        assert turn.agent.status == "succeeded" and entry.status == "succeeded"
        assert "reply to: start the dev server\n" in turn.agent.response
        assert f"pid {daemon_pid} (" in turn.agent.response and "still held its output" in turn.agent.response
        assert f"pid {daemon_pid}" in out


def test_at_the_timeout_the_agent_and_a_setsid_daemon_ignoring_sigterm_are_ended_and_the_turn_fails(tmp_path):
    with setup(tmp_path, timeout=1) as at:
        status, _, err = at.finish(at.start_send("hang", "daemon stubborn hang"))
        assert status == 1
        pids = pids_in(at.pids_file)
        assert len(pids) == 2 and not any(alive(pid) for pid in pids), pids
        turn, entry = at.last_turn()
        assert turn.agent.status == "failed" and entry.status == "failed"
        assert "Timed out after 1 s" in turn.agent.error and "Timed out" in err


def test_a_reply_over_max_reply_bytes_is_cut_with_a_marker_and_its_whole_output_archived(tmp_path):
    cap = 1024 * 1024
    with setup(tmp_path, max_reply_bytes=cap) as at:
        status, out, err = at.finish(at.start_send("print a lot", "flood"))
        assert status == 0, err
        turn, _ = at.last_turn()
        response = turn.agent.response
        marker = MARKER.search(response)
        assert marker, response[-300:]
        kept = response[:marker.start()]
        assert len(kept.encode()) <= cap and FLOOD.startswith(kept)
        assert int(marker.group(1).replace(",", "")) == len(FLOOD) - len(kept)
        digest = marker.group(2)
        assert digest == hashlib.sha256(FLOOD.encode()).hexdigest()
        assert at.service.sources["fractal"].store.paths.session_file(at.ref).stat().st_size < 2 * cap

        exported = tmp_path / "whole-output.txt"
        status, _, err = at.reprise("archive", "show", at.ref.session_id, digest[:12], "--output", str(exported))
        assert status == 0, err
        assert exported.read_text(encoding="utf-8") == FLOOD
        status, shown, _ = at.reprise("archive", "show", at.ref.session_id, digest[:12])
        assert status == 0 and shown == FLOOD
        status, listed, _ = at.reprise("archive", "list", at.ref.session_id, "--json")
        assert [e["op"] for e in json.loads(listed)["entries"]] == ["output"]

        status, _, err = at.reprise("restore", at.ref.session_id, "--archive", digest[:12])
        assert status != 0 and "cannot be restored" in err and "Traceback" not in err
        assert at.service.sources["fractal"].store.load(at.ref).state.turns[-1].agent.response == response
        archived = at.service.sources["fractal"].archive.directory(at.ref)
        leftovers = [p.name for p in archived.iterdir() if ".tmp-" in p.name]
        assert leftovers == []


def test_when_the_archive_cannot_be_written_the_cut_reply_is_still_recorded_with_a_note(tmp_path):
    cap = 64 * 1024
    with setup(tmp_path, max_reply_bytes=cap) as at:
        blocker = at.service.sources["fractal"].archive.directory(at.ref)
        blocker.parent.mkdir(parents=True, exist_ok=True)
        blocker.write_text("not a folder")
        status, _, err = at.finish(at.start_send("print a lot", "flood"))
        assert status == 0, err
        turn, _ = at.last_turn()
        assert len(turn.agent.response.encode()) < 2 * cap
        kept, marker = turn.agent.response.split("\n[reprise: ")
        assert marker == (f"{len(FLOOD) - len(kept):,} characters cut; the whole output could not be archived: "
                          f"{blocker}: it is a regular file where a folder belongs.]")  # its place is taken
        assert FLOOD.startswith(turn.agent.response[:1000])


@pytest.mark.usefixtures("fake_fractal")
def test_the_fractal_backend_reads_no_more_of_its_stdout_than_the_cap(tmp_path):
    with setup(tmp_path, max_reply_bytes=64 * 1024, backend="fractal") as at:
        status, out, err = at.finish(at.start_send("flood", "", "--json"))
        result = json.loads(out)  # the fake saves its turn, then prints 12 MiB instead of its JSON result
        assert status == 0 and result["status"] == "succeeded" and result["response"] == "did it", err
        assert result["usage"]["context_tokens"] == 15000 and result["files_modified"] == ["a.py"]
        assert any("over [agent] max_reply_bytes" in note for note in result["notes"])
        assert len(out) < 64 * 1024


def test_without_a_child_subreaper_the_agent_group_is_ended_and_the_turn_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(processes._SUBREAPER, "_libc", None)
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    pids = tmp_path / "pids"
    monkeypatch.setenv("PIDS_FILE", str(pids))
    monkeypatch.setenv("AGENT_MODE", "hang")
    request = TurnRequest("s", tmp_path, "hi", "", 0.5, max_reply_bytes=config.AgentSettings().max_reply_bytes)
    try:
        outcome = CommandBackend([sys.executable, str(script)]).run(request, threading.Event())
    finally:
        for pid in pids_in(pids):
            if alive(pid):
                subprocess.run(["kill", "-9", str(pid)], check=False)
    assert outcome.status == "failed" and "Timed out" in outcome.error
    assert any("process group only" in note for note in outcome.notes)
    assert not any(alive(pid) for pid in pids_in(pids))


def test_the_default_reply_cap_is_a_few_megabytes_and_validated():
    assert 1024 * 1024 <= config.AgentSettings().max_reply_bytes < MAX_SESSION_BYTES // 64
    with pytest.raises(ValueError):
        config.AgentSettings(max_reply_bytes=0)


def test_an_over_long_reply_is_never_spooled_through_a_link_out_of_the_state_root(tmp_path):
    cap = 64 * 1024
    outside = tmp_path / "outside"
    outside.mkdir()
    with setup(tmp_path, max_reply_bytes=cap) as at:
        link = at.service.sources["fractal"].archive.directory(at.ref).parent  # reprise/archive
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(outside)
        status, _, err = at.finish(at.start_send("print a lot", "flood"))
        assert status == 0, err
        turn, _ = at.last_turn()
        assert "the whole output could not be archived: " in turn.agent.response
        assert f"{link} is a symlink" in turn.agent.response
        assert list(outside.rglob("*")) == []
