"""The index built in the background: the files in scope it does not hold, parsed (one full parse
per file) in worker processes a batch at a time, each batch's records added by the caller's process
in one transaction, with how far it is ("indexing 812/2,500 sessions"). It stops between batches
when asked (what was added stays) and where the index would grow over its cap (the files left out
are scanned by each search instead).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from . import faults
from .problems import Problem
from .progress import Progress, ProgressSink, no_progress
from .scan_pool import map_in_processes
from .search_engine import read_records
from .search_index import IndexedFile
from .sources.base import ListingSource, SessionFile

BATCH_FILES = 200     # files between two writes (and two checks of a stop or of the cap)
PARALLEL_BATCH_FILES = 400   # in worker processes: each batch's records are held at once (peak memory)
PARALLEL_MIN = 64     # fewer files are parsed in this process: starting workers would cost more


@dataclass(slots=True)
class BuildResult:
    """What a build did: files added of those it had to add, problems, and why it ended early."""

    added: int = 0
    total: int = 0
    problems: list[Problem] = field(default_factory=list)
    capped: bool = False
    stopped: bool = False


def index_batch(sources: dict[str, ListingSource], files: Sequence[tuple[str, SessionFile]]
                ) -> list[IndexedFile | Problem | None]:
    """Each file's records (of the source named with it) as the index keeps them, or its problem
    (None: it cannot be read now)."""
    found: list[IndexedFile | Problem | None] = []
    for name, file in files:
        records = read_records(sources[name], file)
        found.append(records if records is None or isinstance(records, Problem) else
                     IndexedFile.of(file.path, file.workspace_key or "", file.size, file.mtime_ns,
                                    records).without_texts())
    return found


def batch_size(total: int, parallel: bool) -> int:
    """Files between two writes: `BATCH_FILES`; in worker processes more (up to `PARALLEL_BATCH_FILES`),
    every batch on the process's one pool (`scan_pool`)."""
    return min(PARALLEL_BATCH_FILES, max(BATCH_FILES, total // 8)) if parallel else BATCH_FILES


def _batches(sources: dict[str, ListingSource], files: Sequence[tuple[str, SessionFile]], parallel: bool,
             done: Callable[[int], object]) -> Iterator[list[IndexedFile | Problem | None]]:
    """The parsed files, a batch at a time, in order, in worker processes when `parallel`."""
    work = functools.partial(index_batch, sources)
    parallel = parallel and len(files) >= PARALLEL_MIN
    size = batch_size(len(files), parallel)
    for start in range(0, len(files), size):
        batch = files[start:start + size]
        yield map_in_processes(work, batch, done=functools.partial(_shifted, done, start)) if parallel else work(batch)


def _shifted(done: Callable[[int], object], start: int, count: int) -> None:
    done(start + count)


def build(files: Sequence[tuple[ListingSource, SessionFile]], add: Callable[[list[IndexedFile]], None],
          size: Callable[[], int], *, cap: int | None = None, parallel: bool = False,
          should_stop: Callable[[], bool] = lambda: False, progress: ProgressSink = no_progress) -> BuildResult:
    """Index these files in their order (the caller's: newest first), through `add`; `size` is the
    index's bytes now, `cap` the most it may take."""
    result = BuildResult(total=len(files))
    sources = {source.name: source for source, _ in files}
    progress(Progress("indexing", 0, result.total))

    def done(count: int) -> None:
        progress(Progress("indexing", count, result.total))

    finished = 0
    for batch in _batches(sources, [(source.name, file) for source, file in files], parallel, done):
        finished += len(batch)
        ready = [item for item in batch if isinstance(item, IndexedFile)]
        result.problems += [item for item in batch if isinstance(item, Problem)]
        if cap is not None:
            kept = list(within_cap(ready, cap - size()))
            result.capped = len(kept) < len(ready)
            ready = kept
        add(ready)
        result.added += len(ready)
        progress(Progress("indexing", finished, result.total))
        faults.point("search_index_batch")
        if result.capped or should_stop():
            result.stopped = not result.capped
            return result
    return result


def within_cap(files: list[IndexedFile], room: int) -> Iterator[IndexedFile]:
    """The files whose texts fit in `room` bytes, in order (their FTS5 rows weigh about a fifth more)."""
    for file in files:
        room -= len(file.blob) * 6 // 5
        if room < 0:
            return
        yield file
