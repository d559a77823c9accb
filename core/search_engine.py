"""One full-text search over the rows in scope, newest session first: the files the index holds
(as they are on disk) through the index, the others by their bytes (`search_scan`), the few whose
bytes can match parsed by their source and confirmed by the same rule as the index's hits
(`search_match`). Hits come in order (newest session first; in a session its title, then by
turn) and are heard as they are found, with how far the search is; it stops once the limit is
full. The files it parsed are handed on to be indexed (one parse per file for the index, never a
second).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field

from .problems import Problem
from .rows import SessionRow
from .scan_pool import iter_in_processes
from .search_index import FileState, IndexedFile, Record, SearchHit
from .search_match import Query
from .search_scan import Verdict, verdict
from .search_snippet import Excerpt
from .sources.base import ListingSource, SearchRecord, SessionFile

UPDATE_EVERY = 32   # sessions searched between two updates without a new hit
SERIAL_BYTES = 64 << 20   # of the newest files scanned here before the older ones go to worker processes
PARALLEL_MIN = 64         # files left to scan for worker processes to be worth starting
SCAN_BATCH = 64           # files a worker scans at most in one batch: what runs on once the limit is full
KEEP_BYTES = 4 << 20   # of parsed files' texts (compressed) held before they are handed to the index


@dataclass(slots=True)
class SearchUpdate:
    """How far a search is: the hits so far (in their final order), the sessions searched of those
    in scope, how many of them had outputs cut for the index (words only in the part left out are
    not found), the files that could not be read, and whether it is done."""

    query: str
    hits: list[SearchHit] = field(default_factory=list)
    searched: int = 0
    total: int = 0
    cut: int = 0
    problems: list[Problem] = field(default_factory=list)
    complete: bool = False
    unindexed: int = 0   # the sessions in scope the index does not hold, nor is given by this search

    @property
    def cut_note(self) -> str | None:
        """The sentence a front end shows when outputs were cut, else None."""
        if not self.cut:
            return None
        sessions = "session" if self.cut == 1 else "sessions"
        return (f"{self.cut:,} {sessions} searched had outputs cut for the index; "
                "words only in the part left out are not found")


UpdateSink = Callable[[SearchUpdate], object]


def no_update(_: SearchUpdate) -> None:
    """The sink of a caller that waits for the whole result."""


def session_file(row: SessionRow) -> SessionFile:
    """The file of a row, as its source's reader takes it."""
    return SessionFile(row.workspace_key, row.file_id, row.path, row.size, row.mtime_ns)


def read_records(source: ListingSource, file: SessionFile) -> Sequence[SearchRecord] | Problem | None:
    """A file's search records through its source (None when it cannot be read now), or the problem
    of a reader that failed on it: one hostile file never ends the search of the others."""
    try:
        return source.read_search_records(file)
    except Exception as exc:   # noqa: BLE001 - any reader's failure on one file is that file's problem
        return Problem(file.path, "unsearchable", f"its texts could not be read for search ({type(exc).__name__})")


Scanned = Verdict | IndexedFile | Problem   # a worker's answer for a file: its verdict, else what it read


def title_hits(query: str, rows: Iterable[SessionRow]) -> list[SearchHit]:
    """Rows whose title holds every word of the query, as hits of turn 0: a rename in Reprise, else
    one in the agent (Claude Code's custom or AI title, Codex's thread name); a title that is only
    the first prompt is found as that prompt."""
    words = [word.lower() for word in query.split()]
    hits = []
    for row in rows:
        title = row.title or row.fields.agent_title
        folded = title.lower() if title else ""
        if title and all(word in folded for word in words):
            hits.append(SearchHit(row, 0, "title", Excerpt.of(title, query, by_words=False)))
    return hits


def scan_and_read_batch(sources: dict[str, ListingSource], needles: tuple[bytes, ...],
                        files: Sequence[tuple[str, SessionFile]], *, matching: Query | None = None) -> list[Scanned]:
    """Each file's verdict (its source's name and the file), and for a file that may match, its records
    read or the reader's problem: the work of a worker process, so that the candidates' parse is shared
    among the cores as the scan is. The texts are handed back compressed, as the index keeps them; for
    a search that keeps nothing for the index (`matching`: its query), only the records the query
    matches, whole (compressing every text here and opening it again in the search's process took a
    fifth of a rare word's search, and the matching is shared among the cores too)."""
    found: list[Scanned] = []
    for name, file in files:
        seen: Scanned = verdict(sources[name], file.path, needles)
        if seen is True:
            records = read_records(sources[name], file)
            if records is None or isinstance(records, Problem):
                seen = records
            else:
                read = IndexedFile.of(file.path, file.workspace_key or "", file.size, file.mtime_ns, records)
                if matching is None:
                    seen = read.without_texts()
                else:
                    read.records = [record for record in read.records if matching.matches(record[2])]
                    seen = read
        found.append(seen)
    return found


class SearchRun:
    """One search: the query, the rows in scope and where each one's texts are."""

    def __init__(self, query: Query, rows: Sequence[SessionRow], sources: dict[str, ListingSource], *,
                 indexed: dict[str, FileState], candidates: dict[int, list[int]],
                 records: Callable[[int, list[int]], list[Record]], limit: int, titled: Sequence[SearchHit] = (),
                 should_stop: Callable[[], bool] = lambda: False, on_update: UpdateSink = no_update,
                 keep: Callable[[list[IndexedFile]], object] | None = None, parallel: bool = False,
                 known: dict[str, tuple[int, int, Scanned]] | None = None):
        """`indexed`: the index's files still as they are on disk; `candidates`: its preselection
        (file number: records); `records`: the records at these places of an indexed file (by its
        number); `keep` takes the files parsed here for the index, a few megabytes at a time (None:
        nothing is indexed); `parallel`: once the newest files are scanned here (the first hits come
        from them) and the limit is not full, the bytes of the older ones are scanned in worker
        processes; `known`: what a cold search before the listing found of each file (by path,
        with the size and mtime it was scanned at), taken instead of scanning a file still as it was."""
        self.query = query
        self.rows = sorted(rows, key=lambda row: -row.activity_ts)
        self.sources = sources
        self.indexed = indexed
        self.candidates = candidates
        self.records = records
        self.limit = limit
        self.should_stop = should_stop
        self.on_update = on_update
        self.titled = {hit.row.path: hit for hit in titled}
        self.update = SearchUpdate(query.text, total=len(self.rows),
                                   unindexed=sum(row.path not in indexed and not row.problem_code for row in self.rows))
        self.keep = keep
        self.parallel = parallel
        self.verdicts: dict[str, Scanned] = {}   # the worker processes' scan (and reads) of the older files
        self._rest: Generator[list[Scanned], None, None] | None = None   # their batches' answers, in order
        self._rest_paths: list[str] = []   # the files sent to them, in order
        self._rest_heard = 0               # how many of those have answered
        self._rest_waiting: set[str] = set()   # those that have not
        self.known = {row.path: known[row.path][2] for row in self.rows if known and row.path in known
                      and known[row.path][:2] == (row.size, row.mtime_ns)}
        self._scanned_bytes = 0
        self.parsed: list[IndexedFile] = []   # the files parsed here not yet handed to `keep`
        self._parsed_bytes = 0

    def run(self) -> SearchUpdate:
        """Search every row, newest first, until the limit is full; the last update is complete."""
        try:
            return self._run()
        finally:
            if self._rest is not None:   # the batches not started are cancelled: the limit is full, or it stopped
                self._rest.close()

    def _run(self) -> SearchUpdate:
        update = self.update
        needles = self.query.needles()
        quiet = 0
        for row in self.rows:
            if len(update.hits) >= self.limit or self.should_stop():
                break
            before = len(update.hits)
            title = self.titled.get(row.path)
            if title is not None:
                update.hits.append(title)
            state = self.indexed.get(row.path)
            if row.problem_code:
                update.problems.append(Problem(row.path, row.problem_code, row.problem_message or "",
                                               row.problem_field))
            elif not self.query:
                pass   # a title hit only: no token to find in the texts
            elif state is not None:
                self._indexed(row, state)
            else:
                self._scanned(row, needles)
            update.searched += 1
            quiet += 1
            if len(update.hits) > before or quiet >= UPDATE_EVERY:
                quiet = 0
                self.on_update(update)
        update.hits = update.hits[:self.limit]
        update.complete = not self.should_stop()
        self.on_update(update)
        self._hand_over()
        return update

    def _hand_over(self) -> None:
        if self.keep is not None and self.parsed:
            self.keep(self.parsed)
        self.parsed, self._parsed_bytes = [], 0

    def _indexed(self, row: SessionRow, state: FileState) -> None:
        places = self.candidates.get(state.number)
        update = self.update
        update.cut += state.cut > 0
        if places:
            self._confirm(row, self.records(state.number, places))

    def _scanned(self, row: SessionRow, needles: tuple[bytes, ...] | None) -> None:
        source = self.sources[row.source]
        if row.path in self.known:
            scanned = self.known.pop(row.path)
        else:
            if self.parallel and self._scanned_bytes >= SERIAL_BYTES and needles is not None:
                self.parallel = False   # once: the rest is scanned there, or is too little to be worth it
                self._scan_the_rest(row, needles)
            if self._rest is not None and row.path not in self.verdicts:
                self._hear_rest(row.path)
            scanned = self.verdicts.pop(row.path) if row.path in self.verdicts else verdict(source, row.path, needles)
            self._scanned_bytes += row.size
        if isinstance(scanned, tuple):
            self.update.problems.append(Problem(row.path, *scanned))
        if scanned is True:   # scanned here: read here
            found = read_records(source, session_file(row))
            scanned = found if found is None or isinstance(found, Problem) else IndexedFile.of(
                row.path, row.workspace_key, row.size, row.mtime_ns, found)
        if isinstance(scanned, Problem):
            self.update.problems.append(scanned)
        if not isinstance(scanned, IndexedFile):
            return
        indexed = scanned
        if self.keep is not None:
            self.update.unindexed -= 1
            self.parsed.append(indexed)
            self._parsed_bytes += len(indexed.blob)
            if self._parsed_bytes > KEEP_BYTES:
                self._hand_over()
        self.update.cut += indexed.cut > 0
        self._confirm(row, indexed.texts())

    def _scan_the_rest(self, row: SessionRow, needles: tuple[bytes, ...]) -> None:
        """The bytes of the files from this row on that the index does not hold, scanned in worker
        processes, which also read those that may match; their answers are taken in order as the
        search reaches their files (`_hear_rest`), so hits from them come as each batch ends, and the
        batches not started when the limit is full are never run."""
        rest = [each for each in self.rows[self.rows.index(row):]
                if each.path not in self.indexed and each.path not in self.known and not each.problem_code]
        if len(rest) < PARALLEL_MIN:
            return
        files = [(each.source, session_file(each)) for each in rest]
        self._rest_paths = [file.path for _, file in files]
        self._rest_waiting = set(self._rest_paths)
        work = functools.partial(scan_and_read_batch, self.sources, needles,
                                 matching=None if self.keep is not None else self.query)
        self._rest = iter_in_processes(work, files, largest=SCAN_BATCH)

    def _hear_rest(self, path: str) -> None:
        """The worker processes' answers up to this file's, when it is one of theirs."""
        assert self._rest is not None
        while path in self._rest_waiting:
            answers = next(self._rest, None)
            if answers is None:
                return
            paths = self._rest_paths[self._rest_heard:self._rest_heard + len(answers)]
            self.verdicts.update(zip(paths, answers, strict=True))
            self._rest_waiting.difference_update(paths)
            self._rest_heard += len(answers)

    def _confirm(self, row: SessionRow, records: list[Record]) -> None:
        """The records the query's rule matches, in order, as hits."""
        hits = self.update.hits
        for turn, field_name, text in sorted(records, key=lambda record: record[0]):
            if self.query.matches(text):
                hits.append(SearchHit(row, turn, field_name, Excerpt.of(text, self.query.text)))
                if len(hits) >= self.limit:
                    return

