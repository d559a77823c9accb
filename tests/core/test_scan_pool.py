"""The pool of worker processes a large cold scan and the search index's build read in: made once
per process and reused, results in order as batches finish, errors raised in the caller, and no
worker left once the process that made it is gone, however it ends."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
from collections.abc import Sequence

import pytest

from reprise.core import scan_pool


def pids(items: Sequence[int]) -> list[int]:
    return [os.getpid() for _ in items]


def doubled(items: Sequence[int]) -> list[int]:
    return [item * 2 for item in items]


def blocked_signals(items: Sequence[int]) -> list[set[int]]:
    return [set(signal.pthread_sigmask(signal.SIG_BLOCK, [])) for _ in items]


def fails_on_seven(items: Sequence[int]) -> list[int]:
    if 7 in items:
        raise ValueError("item 7 is bad")
    return list(items)


@pytest.fixture
def two_workers(monkeypatch):
    """Two workers whatever the machine's cores (one core works the batches in the caller)."""
    monkeypatch.setattr(scan_pool, "worker_count", lambda: 2)


def test_a_second_scan_reuses_the_first_ones_workers(two_workers):
    first = set(scan_pool.map_in_processes(pids, list(range(64))))
    workers = scan_pool.worker_pids()
    second = set(scan_pool.map_in_processes(pids, list(range(64))))
    assert os.getpid() not in first | second
    assert first <= set(workers) and second <= set(workers)
    assert scan_pool.worker_pids() == workers and len(workers) == 2


def test_batches_come_in_the_items_order_the_first_ones_small(two_workers):
    items = list(range(1000))
    batches = list(scan_pool.iter_in_processes(doubled, items))
    assert [value for batch in batches for value in batch] == [item * 2 for item in items]
    assert len(batches[0]) == scan_pool.FIRST_BATCH
    assert len(batches[-2]) > len(batches[0])


def test_done_hears_how_many_items_are_finished(two_workers):
    heard: list[int] = []
    scan_pool.map_in_processes(doubled, list(range(100)), done=heard.append)
    assert heard == sorted(heard) and heard[-1] == 100


def test_an_exception_in_the_work_is_raised_in_the_caller_and_the_pool_goes_on(two_workers):
    with pytest.raises(ValueError, match="item 7 is bad"):
        scan_pool.map_in_processes(fails_on_seven, list(range(100)))
    workers = scan_pool.worker_pids()
    assert scan_pool.map_in_processes(doubled, [1, 2, 3]) == [2, 4, 6]
    assert scan_pool.worker_pids() == workers


def test_a_worker_hears_the_signals_the_main_thread_holds_back_while_it_submits(two_workers):
    """The main thread holds SIGTERM and the like back inside the pool's code (a handler raising
    there could leave a lock held and hang the exit); a worker it starts meanwhile must not inherit
    the mask, or terminating it at exit does nothing."""
    scan_pool.shutdown()
    masks = scan_pool.map_in_processes(blocked_signals, list(range(32)))
    assert all(not mask & set(scan_pool._HELD) for mask in masks)


def test_shutdown_ends_the_workers_and_a_later_scan_makes_new_ones(two_workers):
    scan_pool.map_in_processes(doubled, list(range(64)))
    workers = scan_pool.worker_pids()
    watched = [os.pidfd_open(pid) for pid in workers]
    scan_pool.shutdown()
    assert scan_pool.worker_pids() == []
    _wait_all_ended(watched)
    assert scan_pool.map_in_processes(doubled, [5]) == [10]
    assert not set(scan_pool.worker_pids()) & set(workers)


CHILD = textwrap.dedent("""
    import os, signal, sys, threading
    from reprise.core import scan_pool

    def pids(items):
        return [os.getpid() for _ in items]

    def forever(items):
        threading.Event().wait()
        return list(items)

    if __name__ == "__main__":
        if sys.argv[1] == "handled":   # as the TUI: the signal ends the program through its exit
            for each in (signal.SIGTERM, signal.SIGHUP):
                signal.signal(each, lambda signum, frame: sys.exit(128 + signum))
        scan_pool.worker_count = lambda: 2
        scan_pool.map_in_processes(pids, list(range(64)))
        print(" ".join(map(str, scan_pool.worker_pids())), flush=True)
        scan_pool.map_in_processes(forever, list(range(64)))   # never finishes: the signal ends it
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("how", ["handled", "default"])
def test_no_worker_outlives_a_parent_ended_by_a_signal_in_a_scan(tmp_path, signum, how):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen([sys.executable, str(script), how], stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        line = child.stdout.readline() if child.stdout else ""
        workers = [int(pid) for pid in line.split()]
        assert len(workers) == 2 and child.pid not in workers
        watched = [os.pidfd_open(pid) for pid in workers]
        child.send_signal(signum)
        assert child.wait(30) in (-signum, 128 + signum)
        _wait_all_ended(watched)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


CUT_SHORT = textwrap.dedent("""
    import os, select, signal, struct, sys, threading
    from pathlib import Path
    from reprise.core import scan_pool

    def dies_writing(items):
        # As a worker ended while it sent a batch's result: a message's size, part of it, the end.
        frame = sys._getframe()
        while "result_queue" not in frame.f_locals:
            frame = frame.f_back
        os.write(frame.f_locals["result_queue"]._writer.fileno(), struct.pack("!i", 1 << 20) + b"part")
        Path(sys.argv[1]).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)

    if __name__ == "__main__":
        scan_pool.worker_count = lambda: 2
        threading.Thread(target=lambda: scan_pool.map_in_processes(dies_writing, [1]), daemon=True).start()
        marker = Path(sys.argv[1])
        while not marker.exists() or not marker.read_text():
            threading.Event().wait(0.05)
        try:
            select.select([os.pidfd_open(int(marker.read_text()))], [], [])   # the worker has ended
        except ProcessLookupError:
            pass   # ended already
        scan_pool.shutdown()
        print("ended", flush=True)
""")


def test_shutdown_ends_even_when_a_worker_died_writing_a_result(tmp_path):
    """The pool's manager thread waits for the rest of a result a worker began and never finished:
    the shutdown, and the process's exit after it, end all the same (it once hung at exit)."""
    script = tmp_path / "child.py"
    script.write_text(CUT_SHORT)
    child = subprocess.Popen([sys.executable, str(script), str(tmp_path / "written")], stdout=subprocess.PIPE,
                             text=True, start_new_session=True)
    try:
        assert child.wait(60) == 0   # the bound guards against the hang; it measures nothing
        assert child.stdout is not None and child.stdout.read().strip() == "ended"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _wait_all_ended(watched: list[int]) -> None:
    """Wait until every watched process has ended (its pid file descriptor turns readable). The
    bound guards against a hang; it measures nothing."""
    try:
        left = list(watched)
        while left:
            ready, _, _ = select.select(left, [], [], 30)
            assert ready, "a worker process is still running"
            left = [fd for fd in left if fd not in ready]
    finally:
        for fd in watched:
            os.close(fd)
