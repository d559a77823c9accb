"""The liveness kit of agents that write their own files (core/sources/file_writers.py): a process
holding the file open for writing, and the agent's own hooks (a registry of running sessions, the
ids on a command line); real child processes, ended by their pid."""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def running(code: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """A Python child that runs `code`, says it is ready and sleeps until it is ended, by its pid."""
    child = subprocess.Popen([sys.executable, "-c", code + "\nprint('ready', flush=True)\nimport time\ntime.sleep(60)",
                              *args], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    with child.stdout:
        try:
            assert child.stdout.readline().strip() == "ready"
            yield child
        finally:
            os.kill(child.pid, signal.SIGTERM)
            child.wait(10)


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
    with running(f"handle = open({str(session)!r}, 'rb')"):
        assert process_writing(session) is None
    with running(f"handle = open({str(session)!r}, 'ab')") as writer:
        found = process_writing(session)
    assert found is not None and found.pid == writer.pid
    assert found.why.startswith(f"pid {writer.pid} (") and found.why.endswith(") holds the file open for writing")


@needs_proc
def test_the_ids_on_a_command_line_count_only_through_the_agents_hook(session):
    with running("pass", "--session", SESSION_ID) as child:
        unhooked = process_writing(session, session_id=SESSION_ID)
        found = process_writing(session, session_id=SESSION_ID, ids_in_argv=_ids_after_session)
        another = process_writing(session, session_id="s-0002", ids_in_argv=_ids_after_session)
    assert unhooked is None and another is None
    assert found is not None and found.pid == child.pid and found.why.endswith("was started with this session's id")


@needs_proc
def test_a_registered_session_is_named_as_the_registry_says_before_any_open_file(session):
    with running(f"handle = open({str(session)!r}, 'ab')") as holder:
        scan = scan_processes(registered=lambda: [(SESSION_ID, holder.pid, "is the agent running this session")])
        found = scan.writer(session, session_id=SESSION_ID)
        other = scan.writer(session, session_id="s-0002")   # not registered: the open file still counts
    assert found is not None and found.pid == holder.pid and found.why.endswith("is the agent running this session")
    assert other is not None and other.why.endswith("holds the file open for writing")


def test_without_proc_the_scan_is_empty_and_the_hooks_are_not_asked(session, monkeypatch, tmp_path):
    asked: list[str] = []

    def registered() -> list[tuple[str, int, str]]:
        asked.append("registry")
        return [(SESSION_ID, 1234, "is running")]

    monkeypatch.setattr(file_writers, "_PROC", tmp_path / "no-proc")
    scan = scan_processes(registered=registered, ids_in_argv=lambda pid: asked.append("argv") or [])
    assert scan == file_writers.ProcessScan() and asked == []
    assert scan.writer(session, session_id=SESSION_ID) is None
