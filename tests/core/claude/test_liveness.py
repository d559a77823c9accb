"""A Claude Code session is live while its newest record is recent, a process holds its file open for
writing, or a process runs with its id after --resume; real child processes, ended by their pid."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from reprise.core.processes import process_stat
from reprise.core.sources.claude import liveness
from reprise.core.sources.claude.liveness import RECENT_S, process_writing, recently_written, writer_of

NOW = 1_800_000_000.0
UUID = "0b7c1f4e-8d2a-4c3e-9f10-2a6b5c4d3e21"

needs_proc = pytest.mark.skipif(not os.path.isdir(f"/proc/{os.getpid()}/fd"), reason="no /proc on this system")


def _child(code, *args, program="claude"):
    """A Python child that runs `code` from a script named `program` (the liveness rule believes the
    arguments of a program named claude…), prints "ready" and sleeps; ended by its pid by the caller."""
    script = Path(tempfile.mkdtemp(prefix="reprise-liveness-")) / program
    script.write_text(code + "\nprint('ready', flush=True)\nimport time\ntime.sleep(60)\n")
    child = subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


def _end(child):
    os.kill(child.pid, signal.SIGTERM)
    child.wait(10)
    assert child.stdout is not None
    child.stdout.close()


@pytest.fixture
def session(tmp_path):
    path = tmp_path / "projects" / "-home-me" / f"{UUID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"type":"user"}\n')
    return path


def test_a_record_under_the_limit_is_being_written():
    writer = recently_written(NOW - 42.7, NOW)
    assert writer is not None and writer.why == "its newest record was written 42 s ago" and writer.pid is None
    assert writer.age_s == pytest.approx(42.7)
    assert recently_written(NOW - RECENT_S + 0.5, NOW) is not None


def test_a_record_at_or_past_the_limit_is_not():
    assert recently_written(NOW - RECENT_S, NOW) is None
    assert recently_written(NOW - 3600, NOW) is None
    assert recently_written(None, NOW) is None


def test_a_time_slightly_ahead_counts_and_one_far_ahead_does_not():
    ahead = recently_written(NOW + 3, NOW)
    assert ahead is not None and ahead.why == "its newest record was written 0 s ago"
    assert recently_written(NOW + RECENT_S, NOW) is None
    assert recently_written(NOW + 86400 * 365, NOW) is None


@needs_proc
def test_an_old_file_nobody_holds_has_no_writer(session):
    assert writer_of(session, NOW - 86400, NOW, session_id=UUID) is None


@needs_proc
def test_a_child_holding_the_file_open_for_appending_is_found_by_its_pid(session):
    child = _child(f"handle = open({str(session)!r}, 'ab')")
    try:
        writer = writer_of(session, NOW - 86400, NOW)
        assert writer is not None and writer.pid == child.pid
        assert writer.name is not None and writer.name.startswith("python")
        assert writer.why == f"pid {child.pid} ({writer.name}) holds the file open for writing"
    finally:
        _end(child)
    assert writer_of(session, NOW - 86400, NOW) is None


@needs_proc
def test_a_link_to_the_file_is_resolved_before_the_comparison(session, tmp_path):
    link = tmp_path / "link.jsonl"
    link.symlink_to(session)
    child = _child(f"handle = open({str(session)!r}, 'r+b')")
    try:
        writer = process_writing(link)
        assert writer is not None and writer.pid == child.pid
    finally:
        _end(child)


@needs_proc
def test_a_reader_holding_the_file_open_is_not_a_writer(session):
    child = _child(f"handle = open({str(session)!r}, 'rb')")
    try:
        assert process_writing(session) is None
    finally:
        _end(child)


@needs_proc
def test_this_process_holding_the_file_is_never_counted(session):
    with session.open("ab"):
        assert process_writing(session) is None


@needs_proc
@pytest.mark.parametrize("args", [("--resume", UUID), ("-r", UUID), (f"--session-id={UUID}",)])
def test_a_process_started_with_the_sessions_id_is_a_writer(session, args):
    child = _child("pass", "-p", *args)
    try:
        writer = writer_of(session, None, NOW, session_id=UUID)
        assert writer is not None and writer.pid == child.pid
        assert writer.why.endswith("was started with this session's id")
        assert process_writing(session) is None  # without the id, only open files count
    finally:
        _end(child)


@needs_proc
def test_the_id_without_a_resume_flag_does_not_count(session):
    child = _child("pass", "show", UUID)
    try:
        assert writer_of(session, None, NOW, session_id=UUID) is None
    finally:
        _end(child)


def test_unreadable_proc_entries_are_skipped_quietly(session, monkeypatch):
    def denied(path):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(liveness.os, "listdir", lambda path: ["1", "self", "2"] if str(path) == "/proc"
                        else denied(path))
    assert process_writing(session, session_id=UUID) is None


def test_without_proc_only_the_age_rule_applies(session, monkeypatch):
    def missing(path):
        raise FileNotFoundError(2, "No such file or directory", path)

    monkeypatch.setattr(liveness.os, "listdir", missing)
    assert writer_of(session, NOW - 86400, NOW, session_id=UUID) is None
    assert writer_of(session, NOW - 10, NOW) is not None


@needs_proc
def test_one_scan_answers_for_many_sessions(session, tmp_path):
    other = session.with_name("5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6.jsonl")
    other.write_bytes(b"{}\n")
    child = _child(f"handle = open({str(other)!r}, 'ab')", "--resume", UUID)
    try:
        scan = liveness.scan_processes()
    finally:
        _end(child)
    held = writer_of(other, None, NOW, scan=scan)
    assert held is not None and held.pid == child.pid and held.why.endswith("holds the file open for writing")
    by_id = writer_of(session, None, NOW, session_id=UUID, scan=scan)
    assert by_id is not None and by_id.pid == child.pid and by_id.name is None  # it has ended since
    assert by_id.why == f"pid {child.pid} was started with this session's id"
    assert writer_of(session.with_name("c3d4e5f6-0000-4000-8000-000000000000.jsonl"), None, NOW, scan=scan) is None


def _register(root, pid, session_id, **fields):
    """A record the way Claude Code 2.1.332 keeps one in `<root>/sessions/<pid>.json` while it runs."""
    info = process_stat(pid)
    record = {"pid": pid, "sessionId": session_id, "cwd": "/home/me", "procStart": str(info[2]) if info else None,
              "pidDomain": liveness._pid_domain(), "kind": "interactive", "status": "idle", **fields}
    folder = root / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{pid}.json").write_text(json.dumps(record))
    return folder / f"{pid}.json"


@needs_proc
def test_a_live_claude_code_that_registered_the_session_is_its_writer(session):
    root = session.parents[2]
    child = _child("pass")
    try:
        record = _register(root, child.pid, UUID)
        writer = writer_of(session, NOW - 86400, NOW)
        assert writer is not None and writer.pid == child.pid
        assert writer.why.endswith(f"is Claude Code running this session ({record})")
        other = session.with_name("5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6.jsonl")
        assert writer_of(other, None, NOW) is None
    finally:
        _end(child)
    assert writer_of(session, NOW - 86400, NOW) is None  # the record outlived its process: stale


@needs_proc
def test_a_registry_record_of_a_reused_pid_or_another_namespace_does_not_count(session):
    root = session.parents[2]
    child = _child("pass")
    try:
        _register(root, child.pid, UUID, procStart="1")
        assert writer_of(session, None, NOW) is None
        _register(root, child.pid, UUID, pidDomain="linux:0123:pid:[4026531836]")
        assert writer_of(session, None, NOW) is None
        _register(root, child.pid, UUID, pidDomain=None, procStart=None)
        assert writer_of(session, None, NOW) is not None  # nothing to tell them apart: trusted
    finally:
        _end(child)


@needs_proc
def test_damaged_registry_records_are_skipped_quietly(session):
    folder = session.parents[2] / "sessions"
    folder.mkdir()
    (folder / "1.json").write_text("{not json")
    (folder / "2.json").write_text("[1]")
    (folder / "3.json").write_text(json.dumps({"pid": "3", "sessionId": UUID}))
    (folder / "4.json").write_bytes(b"{" + b" " * (liveness.MAX_REGISTRY_BYTES + 1) + b"}")
    (folder / "5.json").mkdir()
    (folder / "6.json").symlink_to(folder / "2.json")
    assert writer_of(session, None, NOW) is None


@needs_proc
def test_another_programs_resume_flag_says_nothing_about_the_session(session):
    child = _child("", "--resume", UUID, program="editor")
    try:
        assert writer_of(session, None, NOW, session_id=UUID) is None
    finally:
        _end(child)
