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

from .problems import Problem
from .progress import Progress, ProgressSink, no_progress
from .scan_pool import map_in_processes
from .search_engine import read_records
from .search_index import IndexedFile
from .sources.base import ListingSource, SessionFile

BATCH_FILES = 200     # files between two writes (and two checks of a stop or of the cap)
PARALLEL_MIN = 64     # fewer files are parsed in this process: starting workers would cost more


@dataclass(slots=True)
class BuildResult:
    """What a build did: files added of those it had to add, problems, and why it ended early."""

    added: int = 0
    total: int = 0
    problems: list[Problem] = field(default_factory=list)
    capped: bool = False
    stopped: bool = False


def index_batch(source: ListingSource, files: Sequence[SessionFile]) -> list[IndexedFile | Problem | None]:
    """Each file's records as the index keeps them, or its problem (None: it cannot be read now)."""
    found: list[IndexedFile | Problem | None] = []
    for file in files:
        records = read_records(source, file)
        found.append(records if records is None or isinstance(records, Problem) else
                     IndexedFile.of(file.path, file.workspace_key or "", file.size, file.mtime_ns, records))
    return found


def _batches(source: ListingSource, files: Sequence[SessionFile], parallel: bool,
             done: Callable[[int], object]) -> Iterator[list[IndexedFile | Problem | None]]:
    """The parsed files, a batch at a time, in order. In worker processes each batch is one
    `map_in_processes` (a pool per batch until the pool is kept across calls)."""
    work = functools.partial(index_batch, source)
    for start in range(0, len(files), BATCH_FILES):
        batch = files[start:start + BATCH_FILES]
        if parallel and len(files) >= PARALLEL_MIN:
            yield map_in_processes(work, batch, done=functools.partial(_shifted, done, start))
        else:
            yield work(batch)


def _shifted(done: Callable[[int], object], start: int, count: int) -> None:
    done(start + count)


def build(files: Sequence[tuple[ListingSource, SessionFile]], add: Callable[[list[IndexedFile]], None],
          size: Callable[[], int], *, cap: int | None = None, parallel: bool = False,
          should_stop: Callable[[], bool] = lambda: False, progress: ProgressSink = no_progress) -> BuildResult:
    """Index these files (newest first is the caller's order), through `add`; `size` is the index's
    bytes now, `cap` the most it may take."""
    result = BuildResult(total=len(files))
    by_source: dict[str, tuple[ListingSource, list[SessionFile]]] = {}
    for source, file in files:
        by_source.setdefault(source.name, (source, []))[1].append(file)
    finished = 0
    progress(Progress("indexing", 0, result.total))
    for source, wanted in by_source.values():
        def done(count: int, before: int = finished) -> None:
            progress(Progress("indexing", before + count, result.total))

        for batch in _batches(source, wanted, parallel, done):
            ready = [item for item in batch if isinstance(item, IndexedFile)]
            result.problems += [item for item in batch if isinstance(item, Problem)]
            if cap is not None:
                room = cap - size()
                kept = list(within_cap(ready, room))
                result.capped = len(kept) < len(ready)
                ready = kept
            add(ready)
            result.added += len(ready)
            finished += len(batch)
            progress(Progress("indexing", finished, result.total))
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
