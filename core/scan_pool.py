"""Running one function over many items on every core, in spawned processes.

A cold catalog is bound by decoding session files (JSON parsing holds the GIL), so a large
scan reads its files in worker processes. Only programs whose main module is safe to
re-import (an `if __name__ == "__main__"` guard) may use it: spawn re-imports it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

MAX_WORKERS = 8


def map_in_processes(work: Callable[[Sequence[Item]], list[Result]], items: Sequence[Item], *,
                     done: Callable[[int], object] = lambda _: None) -> list[Result]:
    """`work` over batches of `items`, in order; in this process when there is one core. `done`
    hears how many items are finished after each batch. `work` and the items are pickled to the
    workers: a module-level function or a partial of one."""
    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    if workers < 2:
        return work(items)
    import multiprocessing  # only a large cold scan starts processes: a listing never pays the import
    from concurrent.futures import ProcessPoolExecutor

    size = max(16, min(256, len(items) // (workers * 4)))
    batches = [items[start:start + size] for start in range(0, len(items), size)]
    context = multiprocessing.get_context("spawn")
    results: list[Result] = []
    with _real_stderr(), ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for batch in pool.map(work, batches):
            results.extend(batch)
            done(len(results))
    return results


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
