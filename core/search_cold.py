"""The first search on a cold cache: answered without waiting for the listing. The files in scope
(found by a stat walk through each source) are scanned by their bytes at once, newest file first,
and only those whose bytes can match (or whose title Reprise renamed to the query's words) get
their row read (their title, folder and time) and their texts parsed, then confirmed by the rule
every search uses (`search_match`).

The hits are ordered as a search over a listing orders them: newest session first by its row's
time (ties by source, folder and file), in a session its title, then by turn. The files are
scanned newest first by their file time, and a session's newest turn is never later than the
file that records it was written, so the hits of a row dated after every file still to scan are
in their place: those are heard at once (after the newest 64 MB, where few files hold the words,
the older files are scanned, and the ones that can match read, in worker processes, heard batch by
batch; where most do, a full limit soon ends the scan here).

Once the limit is full with such hits, the rest still counts for a file dated before its newest
turn (set back by hand): where few files hold the words, the rest is scanned as well (a row read
for each that can match), and the answer is whole; where most do (a row for most files would cost
a listing), the scan ends, and its caller lists the scope and searches it again with what was
scanned here (`known`). Either way the answer is the one a search after a listing gives.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from .problems import Problem
from .rows import SessionRow
from .scan_pool import iter_in_processes
from .search_engine import (
    PARALLEL_MIN,
    SERIAL_BYTES,
    UPDATE_EVERY,
    Scanned,
    SearchUpdate,
    UpdateSink,
    no_update,
    read_records,
    title_hits,
)
from .search_index import IndexedFile, SearchHit
from .search_match import Query
from .search_scan import verdict
from .search_snippet import Excerpt
from .sources.base import ListingSource, SessionFile

STOP_SHARE = 0.25   # of the files scanned holding the words, for a full limit to stop the scan and list the rest
ListFile = Callable[[ListingSource, SessionFile], SessionRow]   # a file's row, its details attached
Titles = dict[tuple[str, str, str], tuple[str | None, bool]]   # (source, workspace key, id): Reprise's title, pin


@dataclass(slots=True)
class ColdFile:
    """A file whose bytes can match (`matched`), or whose renamed title can: its row, and (when
    `matched`) its texts parsed, or the reader's problem (None: gone since the walk)."""

    row: SessionRow
    matched: bool
    parsed: IndexedFile | Problem | None = None


Found = Scanned | ColdFile   # what the cold scan knows of one file


def scan_and_list(source: ListingSource, file: SessionFile, needles: tuple[bytes, ...] | None,
                  titled: bool, list_file: ListFile, *, compact: bool) -> Found:
    """One file: its verdict; for a file that can match, its row read and its texts parsed (their
    texts only compressed when `compact`, as a worker process hands them back); for one that
    cannot but whose renamed title can, its row only."""
    seen = verdict(source, file.path, needles)
    if seen is not True and not (titled and seen is False):
        return seen
    row = list_file(source, file)
    if seen is not True or row.problem_code:
        return ColdFile(row, seen is True)
    records = read_records(source, file)
    if records is None or isinstance(records, Problem):
        return ColdFile(row, True, records)
    indexed = IndexedFile.of(file.path, row.workspace_key, row.size, row.mtime_ns, records)
    return ColdFile(row, True, indexed.without_texts() if compact else indexed)


def scan_and_list_batch(sources: dict[str, ListingSource], needles: tuple[bytes, ...] | None,
                        titled: frozenset[tuple[str, str]], list_file: ListFile,
                        files: Sequence[tuple[str, SessionFile]]) -> list[Found]:
    """`scan_and_list` of each (source's name, file): the work of a worker process."""
    return [scan_and_list(sources[name], file, needles, (name, file.file_id) in titled, list_file, compact=True)
            for name, file in files]


def _flattened(batches: Iterator[list[Found]]) -> Generator[Found, None, None]:
    """Each file's answer of the batches, in order; closed, the batches not started are cancelled."""
    try:
        for batch in batches:
            yield from batch
    finally:
        if isinstance(batches, Generator):
            batches.close()


MetaFiles = dict[str, tuple[str, str, str, int, int]]   # path: (source, workspace key, session id, size, mtime_ns)


def renamed_titles(sources: Iterable[ListingSource], scan_meta: Callable[[str, str, str], MetaFiles],
                   title_and_pin: Callable[[str, str, str], tuple[str | None, bool]]) -> Titles:
    """Reprise's own title and pin of every session that has them, from each source's metadata
    folders (a listing attaches the same to its rows)."""
    found: Titles = {}
    for source in sources:
        try:
            keys = os.listdir(source.own_paths.workspaces)
        except OSError:
            continue
        for key in sorted(keys):
            for name, workspace, session_id, _, _ in scan_meta(source.name, key, str(source.own_paths.meta_dir(key))
                                                               ).values():
                title, pinned = title_and_pin(name, workspace, session_id)
                if title or pinned:
                    found[(name, workspace, session_id)] = (title, pinned)
    return found


@dataclass(slots=True)
class ColdResult:
    """What the cold search gives back: its last update (complete when its answer is the whole one);
    whether the limit was full before every file was scanned (`listing_needed`: the caller lists and
    searches again with `known`), else it was stopped; the files parsed (for the index); what it
    knows of each file scanned, by path, with the (size, mtime_ns) it was scanned at."""

    update: SearchUpdate
    listing_needed: bool = False
    parsed: list[IndexedFile] = field(default_factory=list)
    known: dict[str, tuple[int, int, Scanned]] = field(default_factory=dict)


class ColdSearch:
    """One search over files not listed yet (`files`: the scope's, each with its source)."""

    def __init__(self, query: Query, files: Sequence[tuple[ListingSource, SessionFile]], *,
                 keys: set[str] | None, titles: Titles, list_file: ListFile, limit: int,
                 should_stop: Callable[[], bool] = lambda: False, on_update: UpdateSink = no_update,
                 parallel: bool = False):
        """`keys`: the workspaces in scope (None: all; a file of another is read, then left out);
        `titles`: Reprise's titles and pins (`renamed_titles`); `list_file` reads one file's row;
        `parallel`: once the newest files are scanned here, the older ones are in worker processes."""
        self.query = query
        self.order = {source.name: number for number, source in enumerate(dict.fromkeys(s for s, _ in files))}
        self.files = sorted(files, key=lambda item: -item[1].mtime_ns)
        self.sources = {source.name: source for source, _ in files}
        self.keys = keys
        self.titles = titles
        words = query.text.lower().split()
        apart = [(source.name, file_id, title) for source in self.sources.values()
                 for file_id, title in source.titles_apart().items()]
        self.titled = frozenset((name, session_id) for name, session_id, title in [
            *((name, session_id, title) for (name, _, session_id), (title, _) in titles.items()), *apart]
            if title and all(word in title.lower() for word in words))
        self.list_file = list_file
        self.limit = limit
        self.should_stop = should_stop
        self.on_update = on_update
        self.parallel = parallel
        self.update = SearchUpdate(query.text, total=len(self.files), unindexed=len(self.files))
        self.found: list[tuple[tuple[float, int, str, str], list[SearchHit]]] = []   # each hit row's key and hits
        self.result = ColdResult(self.update)
        self._candidates = 0   # files whose bytes can match, of those scanned

    def run(self) -> ColdResult:
        """Scan every file newest first, heard as the hits settle, until the limit is full with hits
        no file left can come before and most files hold the words (the rest is then listed by the
        caller); the last update is complete when the answer is whole."""
        needles = self.query.needles()
        update = self.update
        rest: Iterator[Found] | None = None   # the older files' answers, from worker processes
        scanned_bytes = 0
        quiet = 0
        try:
            for at, (source, file) in enumerate(self.files):
                if self.should_stop():
                    break
                if self.parallel and scanned_bytes >= SERIAL_BYTES and self._candidates <= STOP_SHARE * at:
                    # Where most files hold the words, a full limit soon stops the scan: not in workers.
                    self.parallel = False
                    rest = self._scan_the_rest(at, needles)
                if rest is not None:
                    found = next(rest)
                else:
                    found = scan_and_list(source, file, needles, (source.name, file.file_id) in self.titled,
                                          self.list_file, compact=False)
                scanned_bytes += file.size
                before = len(self.found)
                self._take(source, file, found)
                update.searched += 1
                quiet += 1
                bound = self.files[at + 1][1].mtime_ns / 1e9 if at + 1 < len(self.files) else float("-inf")
                settled = self._settled(bound)[:self.limit]
                if len(settled) >= self.limit and at + 1 < len(self.files) and self._candidates > STOP_SHARE * (at + 1):
                    update.hits = settled
                    self.on_update(update)
                    self.result.listing_needed = True   # the caller lists the rest and searches again with `known`
                    return self.result
                if len(self.found) > before or quiet >= UPDATE_EVERY:
                    quiet = 0
                    update.hits = settled
                    self.on_update(update)
        finally:
            if isinstance(rest, Generator):
                rest.close()   # the batches not started are cancelled
        update.hits = self._settled(float("-inf"))[:self.limit]
        update.complete = not self.should_stop()
        self.on_update(update)
        return self.result

    def _scan_the_rest(self, at: int, needles: tuple[bytes, ...] | None) -> Iterator[Found] | None:
        """The files from `at` on scanned (and those that can match read) in worker processes: their
        answers in order, each as its batch is done (None: too few files to be worth it)."""
        rest = self.files[at:]
        if len(rest) < PARALLEL_MIN:
            return None
        work = functools.partial(scan_and_list_batch, self.sources, needles, self.titled, self.list_file)
        return _flattened(iter_in_processes(work, [(source.name, file) for source, file in rest]))

    def _take(self, source: ListingSource, file: SessionFile, found: Found) -> None:
        """What one file gave: its problem, or its row's hits (a row of another workspace left out)."""
        update, result = self.update, self.result
        if isinstance(found, tuple):
            update.problems.append(Problem(file.path, *found))
        if not isinstance(found, ColdFile):
            result.known[file.path] = (file.size, file.mtime_ns, found)
            return
        self._candidates += found.matched
        row, parsed = found.row, found.parsed
        kept = parsed.without_texts() if isinstance(parsed, IndexedFile) else parsed
        result.known[file.path] = (file.size, file.mtime_ns, kept if found.matched else False)
        if self.keys is not None and row.workspace_key not in self.keys:
            return
        if source.workspaces.kind != "recorded":
            row.workspace_path = source.workspaces.folder_of(row.workspace_key)
        row.title, row.pinned = self.titles.get((row.source, row.workspace_key, row.id), (None, False))
        if row.problem_code:
            update.problems.append(Problem(row.path, row.problem_code, row.problem_message or "", row.problem_field))
            return
        if isinstance(parsed, Problem):
            update.problems.append(parsed)
        hits = title_hits(self.query.text, [row]) if row.title or (row.details and row.details.agent_title) else []
        if isinstance(parsed, IndexedFile) and isinstance(kept, IndexedFile):
            update.unindexed -= 1
            result.parsed.append(kept)
            update.cut += parsed.cut > 0
            for turn, field_name, text in sorted(parsed.texts(), key=lambda record: record[0]):
                if len(hits) >= self.limit:
                    break
                if self.query.matches(text):
                    hits.append(SearchHit(row, turn, field_name, Excerpt.of(text, self.query.text)))
        if hits:
            self.found.append(((-row.activity_ts, self.order[row.source], row.group, row.file_id), hits))

    def _settled(self, bound: float) -> list[SearchHit]:
        """The hits, in their final order, of the rows dated after `bound` (the newest file time left
        to scan): no file left can give a hit before them."""
        self.found.sort(key=lambda item: item[0])
        settled: list[SearchHit] = []
        for key, hits in self.found:
            if -key[0] <= bound:
                break
            settled.extend(hits)
            if len(settled) >= self.limit:
                break
        return settled
