"""The liveness kit of agents that write their own files (core/sources/file_writers.py): a process
holding the file open for writing, and the agent's own hooks (a registry of running sessions, the
ids on a command line); real child processes, ended by their pid."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reprise.core.sources import file_writers
from reprise.core.sources.file_writers import process_writing, scan_processes

SESSION_ID = "s-0001"

needs_proc = pytest.mark.skipif(not os.path.isdir(f"/proc/{os.getpid()}/fd"), reason="no /proc on this system")


def _child(code: str, *args: str) -> subprocess.Popen[str]:
    """A Python child that runs `code`, prints "ready" and sleeps; ended by its pid by the caller."""
    child = subprocess.Popen([sys.executable, "-c", code + "\nprint('ready', flush=True)\nimport time\ntime.sleep(60)",
                              *args], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


def _end(child: subprocess.Popen[str]) -> None:
    os.kill(child.pid, signal.SIGTERM)
    child.wait(10)
    assert child.stdout is not None
    child.stdout.close()


def _ids_after_session(pid: int) -> Iterator[str]:
    """An agent's id flag: the value after `--session` on the command line."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == b"--session" and value:
            yield value.decode()


@pytest.fixture
def session(tmp_path: Path) -> Path:
    path = tmp_path / "chats" / f"{SESSION_ID}.jsonl"
    path.parent.mkdir()
    path.write_bytes(b'{"type":"user"}\n')
    return path


@needs_proc
def test_a_process_holding_the_file_open_for_writing_is_found_and_one_reading_it_is_not(session):
    reader = _child(f"handle = open({str(session)!r}, 'rb')")
    try:
        assert process_writing(session) is None
    finally:
        _end(reader)
    writer = _child(f"handle = open({str(session)!r}, 'ab')")
    try:
        found = process_writing(session)
        assert found is not None and found.pid == writer.pid
        assert found.why.startswith(f"pid {writer.pid} (") and found.why.endswith(") holds the file open for writing")
    finally:
        _end(writer)


@needs_proc
def test_the_ids_on_a_command_line_count_only_through_the_agents_hook(session):
    child = _child("pass", "--session", SESSION_ID)
    try:
        assert process_writing(session, session_id=SESSION_ID) is None
        found = process_writing(session, session_id=SESSION_ID, ids_in_argv=_ids_after_session)
        assert found is not None and found.pid == child.pid
        assert found.why.endswith("was started with this session's id")
        assert process_writing(session, session_id="s-0002", ids_in_argv=_ids_after_session) is None
    finally:
        _end(child)


@needs_proc
def test_a_registered_session_is_named_as_the_registry_says_before_any_open_file(session):
    holder = _child(f"handle = open({str(session)!r}, 'ab')")
    try:
        scan = scan_processes(registered=lambda: [(SESSION_ID, holder.pid, "is the agent running this session")])
        found = scan.writer(session, session_id=SESSION_ID)
        assert found is not None and found.pid == holder.pid and found.why.endswith("is the agent running this session")
        other = scan.writer(session, session_id="s-0002")   # not registered: the open file still counts
        assert other is not None and other.why.endswith("holds the file open for writing")
    finally:
        _end(holder)


def test_without_proc_the_scan_is_empty_and_the_hooks_are_not_asked(session, monkeypatch, tmp_path):
    asked: list[str] = []

    def registered() -> list[tuple[str, int, str]]:
        asked.append("registry")
        return [(SESSION_ID, 1234, "is running")]

    monkeypatch.setattr(file_writers, "_PROC", tmp_path / "no-proc")
    scan = scan_processes(registered=registered, ids_in_argv=lambda pid: asked.append("argv") or [])
    assert scan == file_writers.ProcessScan() and asked == []
    assert scan.writer(session, session_id=SESSION_ID) is None
