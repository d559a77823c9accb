"""Running one function over many items on every core, in one pool of worker processes per process.

A cold catalog is bound by decoding session files (JSON parsing holds the GIL), so a large scan
reads its files in worker processes, and so does the search index's background build. The pool is
made on first need and kept: its workers are forked from a forkserver that imported the modules the
work needs once (`PRELOAD`), never from this process (the TUI has threads: a fork of it could copy a
held lock), and a later scan reuses them (spawning a pool per scan made each worker import Reprise
again: 11.5% of a cold listing). A UI's workers run at a lower priority (`lower_priority`), so the
UI keeps a core.

The pool ends with the process: at exit (`shutdown`), before a handoff replaces the process with an
agent, and whatever way the process ends (a signal, `os._exit`): each worker watches this process's
pid and exits when it is gone, and the forkserver ends when its pipe from this process closes.

Only programs whose main module is safe to re-import (an `if __name__ == "__main__"` guard) may use
it: the forkserver imports it (as `__mp_main__`) so the workers need not.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor
    from multiprocessing.process import BaseProcess

Item = TypeVar("Item")
Result = TypeVar("Result")

MAX_WORKERS = 8
_END_WAIT_S = 2.0   # how long a worker told to end is waited for before it is killed
UI_NICENESS = 5   # a UI's workers: below it, yet not starved by whatever else the machine runs
FIRST_BATCH = 8        # the first batches are small so the first results (the newest sessions) come soon,
LARGEST_BATCH = 256    # and grow to this
# What the workers' work needs, imported once by the forkserver, with each registered source's listing
# module (`SourceSpec.listing_module`); a module missing here is imported by each worker on its first batch.
# The search's modules are named: the catalog imports them only when it searches or indexes.
PRELOAD = ("__main__", "reprise.core.catalog", "reprise.core.search_build", "reprise.core.search_cold")

_HELD = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM)   # what a program's handler ends it on
_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None
_forgotten: weakref.WeakSet[ProcessPoolExecutor] = weakref.WeakSet()   # the pools being ended, each once
_exit_hooked = False
_niceness = 0


def lower_priority(niceness: int = UI_NICENESS) -> None:
    """Start the workers made from now on this much lower in priority (`os.nice`): a UI's process
    asks it, so the UI keeps a core while they read."""
    global _niceness
    _niceness = niceness


def worker_count() -> int:
    """How many workers the pool has: one a core, up to MAX_WORKERS."""
    return min(os.cpu_count() or 1, MAX_WORKERS)


def map_in_processes(work: Callable[[Sequence[Item]], list[Result]], items: Sequence[Item], *,
                     done: Callable[[int], object] = lambda _: None) -> list[Result]:
    """`work` over batches of `items`, in order; in this process when there is one core. `done`
    hears how many items are finished after each batch. `work` and the items are pickled to the
    workers: a module-level function or a partial of one. An exception of `work` is raised here."""
    results: list[Result] = []
    for batch in iter_in_processes(work, items):
        results.extend(batch)
        done(len(results))
    return results


def iter_in_processes(work: Callable[[Sequence[Item]], list[Result]], items: Sequence[Item], *,
                      largest: int = LARGEST_BATCH) -> Generator[list[Result], None, None]:
    """`work`'s result for each batch of `items`, in the items' order, each as soon as it and the
    ones before it are finished: the first batches small, later ones larger (up to `largest`). With
    one core, the batches are worked here. An exception of `work` is raised here when its batch's
    turn comes; closing the iterator early cancels the batches not started."""
    batches = _batches(items, worker_count(), largest)
    if worker_count() < 2:
        for batch in batches:
            yield work(batch)
        return
    import queue

    pool = _shared_pool()
    finished: queue.SimpleQueue[Future[list[Result]]] = queue.SimpleQueue()
    futures: list[Future[list[Result]]] = []
    try:   # a signal held while submitting is heard as the hold ends: the batches are cancelled then too
        with _signals_held(), _real_stderr():   # a worker's start may start the forkserver and its resource tracker
            for batch in batches:
                futures.append(pool.submit(work, batch))
                futures[-1].add_done_callback(finished.put)
        done: set[Future[list[Result]]] = set()
        for future in futures:
            while future not in done:
                done.add(finished.get())
            with _signals_held():
                result = future.result()
            yield result
    except BaseException as exc:
        from concurrent.futures.process import BrokenProcessPool

        if isinstance(exc, BrokenProcessPool):   # a worker died (killed, out of memory): the next call makes a new pool
            _forget(pool)
        raise
    finally:
        with _signals_held():
            for future in futures:
                future.cancel()


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """In the main thread, hold signals back while it is inside the pool's code: a signal whose
    handler raises (SystemExit on SIGTERM and SIGHUP, KeyboardInterrupt) could otherwise stop it
    holding a lock the pool's manager thread needs, and the process would hang at its exit. The
    main thread waits for results on a queue of its own, where a signal may end the wait. This holds
    while the main thread is the one the signals reach: the pool's own threads start inside the hold
    and keep it; another thread of the program's that does not block them could take one meanwhile."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _batches(items: Sequence[Item], workers: int, largest: int = LARGEST_BATCH) -> list[Sequence[Item]]:
    """The items cut into batches: FIRST_BATCH at first, each round of `workers` batches twice the
    size of the one before, up to `largest` or a quarter of an even share of the items."""
    largest = max(FIRST_BATCH, min(largest, len(items) // (workers * 4)))
    size, start, batches = FIRST_BATCH, 0, []
    while start < len(items):
        for _ in range(workers):
            if start >= len(items):
                break
            batches.append(items[start:start + size])
            start += size
        size = min(size * 2, largest)
    return batches


def _shared_pool() -> ProcessPoolExecutor:
    """This process's pool, made on first need."""
    global _pool, _exit_hooked
    with _lock:
        if _pool is not None:
            return _pool
        import multiprocessing  # only a large scan starts processes: a listing never pays the import
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("forkserver")
        from .sources.registry import registry

        listings = [spec.listing_module for spec in registry().specs]
        context.set_forkserver_preload([name for name in (*PRELOAD, *listings)
                                        if name != "__main__" or _main_is_a_file()])
        with _real_stderr():   # its queues' locks start the resource tracker
            _pool = ProcessPoolExecutor(max_workers=worker_count(), mp_context=context,
                                        initializer=_start_worker, initargs=(os.getpid(), _niceness))
        if not _exit_hooked:
            _exit_hooked = True
            atexit.register(shutdown)
            # Before the interpreter's own exit waits for the workers' running batches (threading's
            # exit hooks run before atexit's): a scan cut short by quitting is not finished first.
            with contextlib.suppress(AttributeError):
                threading._register_atexit(shutdown)  # type: ignore[attr-defined]
        return _pool


def _main_is_a_file() -> bool:
    """The main module is a script file (the `reprise` command): the forkserver imports it once."""
    main = sys.modules.get("__main__")
    return getattr(main, "__file__", None) is not None and getattr(main, "__spec__", None) is None


def shutdown() -> None:
    """End the pool's workers now (their running batches are dropped); a later call makes a new pool."""
    with _lock:
        pool = _pool
    if pool is not None:
        _forget(pool)


def worker_pids() -> list[int]:
    """The pids of the pool's workers now (none before the first use or after `shutdown`)."""
    with _lock:
        pool = _pool
    processes = getattr(pool, "_processes", None) or {}
    return sorted(processes)


def _forget(pool: ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
        if pool in _forgotten:
            return   # another thread ends it (a broken pool heard while the process shuts it down)
        _forgotten.add(pool)
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            process.terminate()
    # A worker ended while it wrote a batch's result leaves part of it in the results pipe, and the
    # pool's manager thread waiting for the rest, forever: every worker gone, this process's end is
    # the pipe's last writer, and closing it ends that wait (end of file: the pool is broken).
    left = _running(processes, _END_WAIT_S)
    for process in left:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            process.kill()
    if not _running(left, _END_WAIT_S):
        with contextlib.suppress(OSError, AttributeError):
            pool._result_queue._writer.close()  # type: ignore[attr-defined]
    # Its manager thread sees the workers gone and lets go of the queues (else their semaphores
    # are reported leaked at exit).
    pool.shutdown(wait=True, cancel_futures=True)


def _running(processes: Sequence[BaseProcess], timeout: float) -> list[BaseProcess]:
    """Those of `processes` still running after up to `timeout` seconds: each one's sentinel is
    waited on, never read, so its exit status is left to whoever joins it."""
    from multiprocessing.connection import wait

    deadline = time.monotonic() + timeout
    waiting: dict[object, BaseProcess] = {}
    for process in processes:
        with contextlib.suppress(ValueError):   # a closed process object: it was joined
            waiting[process.sentinel] = process
    while waiting and (remaining := deadline - time.monotonic()) > 0:
        for sentinel in wait(list(waiting), remaining):   # type: ignore[arg-type]
            waiting.pop(sentinel, None)
    return list(waiting.values())


def _start_worker(parent: int, niceness: int) -> None:
    """In each worker: its signals as a process's (a forkserver started while the main thread held
    them back passes the mask on), its priority, and an end as soon as the process that made the pool
    is gone."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)
    if niceness:
        with contextlib.suppress(OSError):
            os.nice(niceness)
    threading.Thread(target=_exit_with, args=(parent,), daemon=True, name="reprise-parent-watch").start()


def _exit_with(parent: int) -> None:
    """Wait for the process `parent` to end, then end this one (its pid file descriptor becomes
    readable when it exits; where there is none, its pid is looked at every second)."""
    try:
        watched = os.pidfd_open(parent)
    except ProcessLookupError:
        os._exit(0)
    except (AttributeError, OSError):
        while _alive(parent):
            threading.Event().wait(1.0)
        os._exit(0)
    select.select([watched], [], [])
    os._exit(0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _real_stderr() -> Iterator[None]:
    """multiprocessing hands sys.stderr's descriptor to its helper process; a UI that captures
    stderr (Textual does) gives it -1, so use the process's real stderr while starting workers."""
    try:
        usable = sys.stderr is not None and sys.stderr.fileno() >= 0
    except (AttributeError, OSError, ValueError):
        usable = False
    if usable or sys.__stderr__ is None:
        yield
        return
    with contextlib.redirect_stderr(sys.__stderr__):
        yield
