"""Both ways of searching give the same hits: the first search's byte scan (files the index does not
hold, parsed only when their bytes can match) and the index (contentless FTS5, confirmed by the same
rule), on the fixture stores of all three agents (tests/fixtures/claude-store and codex-store, made
by the real clients, and Fractal sessions from tests/factories.py), apart from words only in the
part of a long output cut for the index, which both report."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from reprise.core import catalog as catalog_module
from reprise.core.catalog import Catalog
from reprise.core.rows import SessionRow
from reprise.core.search_engine import SearchUpdate, session_file
from reprise.core.search_snippet import tokens
from reprise.core.service import Service
from reprise.core.sources.transcript_search import TOOL_CHARS

from .. import factories
from .claude.builder import ClaudeFile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def service(tmp_path: Path, isolated_paths: Path) -> Service:
    """The Claude Code and Codex fixture stores, a few Fractal sessions (one in several scripts), and
    a Claude Code session whose long tool output holds a word past the index's bound."""
    claude_root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    shutil.copytree(FIXTURES / "claude-store", claude_root)
    shutil.copytree(FIXTURES / "codex-store", Path(os.environ["CODEX_HOME"]))
    work = tmp_path / "work"
    work.mkdir()
    for name in ("one_turn", "unicode", "twenty_five_turns", "all_failed"):
        _, data = factories.corpus()[name]
        factories.write_session(isolated_paths, work, data)
    long = ClaudeFile("5e551011-0000-4000-8000-0000000000cc", cwd=str(work))
    long.prompt("Run the Café build and show the Ürün log")
    long.assistant("Running it.", tools=(("toolu_long", "Bash", {"command": "make naïve-target"}),))
    long.tool_result("toolu_long", "zzheadword " + "x" * TOOL_CHARS + " zzcutword end")
    long.assistant("The build passed; KELVIN \u212aelvin noted.")
    long.write(claude_root / "projects" / "-work-proj" / f"{long.session_id}.jsonl")
    return Service.from_environment(workspace=str(work))


def _queries(service: Service) -> list[str]:
    """Words of every session's texts (every few, sorted), two-word queries, tokens joined by
    punctuation (a phrase), case and accents changed, and a token's prefix (never a whole token)."""
    found: set[str] = set()
    phrases: list[str] = []
    for row in service.catalog.refresh(None):
        records = service.catalog._by_name[row.source].read_search_records(session_file(row)) or []
        for record in records:
            words = [record.text[start:end] for start, end, _ in tokens(record.text)]
            found.update(words)
            if len(words) > 3:
                phrases.append(f"{words[1]}-{words[2]}")
    words = sorted(found)
    picked = words[::max(1, len(words) // 80)]
    pairs = [f"{a} {b}" for a, b in zip(picked[::7], picked[3::7], strict=False)]
    shapes = [word.upper() for word in picked[::9]] + [word[:-1] for word in picked[::11] if len(word) > 3]
    return [*picked, *pairs, *phrases[::max(1, len(phrases) // 20)], *shapes,
            "cafe", "CAFÉ", "urun", "naive", "kelvin", "zzcutword"]


def _hits(service: Service, query: str, *, index: bool) -> tuple[list[tuple[str, int, str, str]], SearchUpdate]:
    heard: list[SearchUpdate] = []
    hits = service.search(query, all_workspaces=True, limit=10_000, index=index, on_update=heard.append)
    return [(hit.row.file_id, hit.turn, hit.field, hit.snippet) for hit in hits], heard[-1]


def test_the_scan_and_the_index_find_the_same_hits_in_every_agents_store(service: Service) -> None:
    queries = _queries(service)
    scanned = {query: _hits(service, query, index=False) for query in queries}
    assert service.catalog.index_files() == 0   # --no-index writes nothing
    built = service.build_index(all_workspaces=True)
    assert built.added == built.total > 0 and not built.problems
    indexed = {query: _hits(service, query, index=True) for query in queries}
    assert all(update.unindexed == 0 for _, update in indexed.values())   # every hit came through the index
    for query in queries:
        assert indexed[query][0] == scanned[query][0], query
    found = [query for query in queries if scanned[query][0]]
    assert len(found) > len(queries) // 2
    assert {source for query in found for source in _sources(service, scanned[query][0])} == \
        {"claude", "codex", "fractal"}


def _sources(service: Service, hits: list[tuple[str, int, str, str]]) -> set[str]:
    ids = {file_id for file_id, *_ in hits}
    return {row.source for row in service.catalog.refresh(None) if row.file_id in ids}


def test_accents_case_and_the_kelvin_sign_fold_on_both_paths(service: Service) -> None:
    for index in (False, True):
        assert {hit.field for hit in service.search("cafe urun", all_workspaces=True, index=index)} == {"user"}
        assert [hit.field for hit in service.search("NAIVE target", all_workspaces=True, index=index)] == ["tool"]
        assert len(service.search("kelvin", all_workspaces=True, index=index)) == 1


def test_a_word_only_in_the_cut_part_is_not_found_and_both_paths_say_outputs_were_cut(service: Service) -> None:
    scanned, scan_update = _hits(service, "zzcutword", index=False)
    service.build_index(all_workspaces=True)
    indexed, index_update = _hits(service, "zzcutword", index=True)
    assert scanned == indexed == []
    assert scan_update.cut >= 1 and index_update.cut >= 1
    assert "cut for the index" in (index_update.cut_note or "")
    # The start of the same output is indexed: found both ways.
    assert [hit[2] for hit in _hits(service, "zzheadword", index=False)[0]] == ["tool"]
    assert [hit[2] for hit in _hits(service, "zzheadword", index=True)[0]] == ["tool"]


def test_hits_come_newest_session_first_then_by_turn(service: Service) -> None:
    hits = service.search("the", all_workspaces=True, limit=10_000)
    order = [(-hit.row.activity_ts, hit.row.path, hit.turn) for hit in hits]
    assert order == sorted(order) and len({hit.row.path for hit in hits}) > 2


def test_the_older_files_scanned_in_worker_processes_give_the_same_hits(service: Service,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from reprise.core import search_engine

    queries = ["the", "REPLYbeta", "cafe urun", "session", "zzheadword"]
    serial = {query: _hits(service, query, index=False)[0] for query in queries}
    monkeypatch.setattr(search_engine, "SERIAL_BYTES", 1)   # the newest file here, every other one in workers
    monkeypatch.setattr(search_engine, "PARALLEL_MIN", 1)
    service.catalog.parallel = True
    heard: list[SearchUpdate] = []
    for query in queries:
        assert _hits(service, query, index=False)[0] == serial[query], query
    service.search("zzheadword", all_workspaces=True, index=False, on_update=heard.append)
    assert heard[-1].complete and heard[-1].searched == heard[-1].total
    from reprise.core import search_build

    monkeypatch.setattr(search_build, "PARALLEL_MIN", 1)   # the index built in worker processes too
    monkeypatch.setattr(search_build, "PARALLEL_BATCH_FILES", 7)
    monkeypatch.setattr(search_build, "BATCH_FILES", 7)
    seen: list[int] = []
    built = service.build_index(all_workspaces=True, progress=lambda progress: seen.append(progress.done))
    assert built.added == built.total == service.catalog.index_files() and seen[-1] == built.total
    for query in queries:
        assert _hits(service, query, index=True)[0] == serial[query], query


def test_the_workers_scan_no_further_than_the_search_reads_once_the_limit_is_full(
        service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    """The older files' batches are taken as the search reaches them: once the limit is full, the
    batches not started are never run (a rare word's first search scanned every file in the workers
    before the first of their hits), and the hits are the serial scan's."""
    from reprise.core import scan_pool, search_engine

    serial = service.search("the", all_workspaces=True, limit=3, index=False)
    everything = len(service.search("the", all_workspaces=True, limit=10_000, index=False))
    assert everything > 3
    monkeypatch.setattr(search_engine, "SERIAL_BYTES", 1)   # the newest file here, every other one in workers
    monkeypatch.setattr(search_engine, "PARALLEL_MIN", 1)
    monkeypatch.setattr(scan_pool, "FIRST_BATCH", 1)
    monkeypatch.setattr(scan_pool, "worker_count", lambda: 1)   # the batches run here, one at a time, as asked
    service.catalog.parallel = True
    scanned: list[str] = []
    real = search_engine.scan_and_read_batch

    def counted(sources, needles, files, **options):
        scanned.extend(file.path for _, file in files)
        return real(sources, needles, files, **options)

    monkeypatch.setattr(search_engine, "scan_and_read_batch", counted)
    hits = service.search("the", all_workspaces=True, limit=3, index=False)
    assert [(hit.row.path, hit.turn, hit.field) for hit in hits] == [(hit.row.path, hit.turn, hit.field)
                                                                     for hit in serial]
    rows = [row for row in service.catalog.refresh(None) if not row.problem_code]
    assert scanned and len(scanned) < len(rows) - 1   # not every older file
    scanned.clear()
    assert len(service.search("the", all_workspaces=True, limit=10_000, index=False)) == everything
    assert len(scanned) == len(set(scanned)) == len(rows) - 1   # every file but the newest, once


def test_the_same_turns_as_the_full_text_index_before_apart_from_words_in_cut_outputs(
        service: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index before issue 27 held every text whole (a tool output up to 100,000 characters) in
    an FTS5 table with content, and matched each word as a phrase: the same turns are found, apart
    from words only in the part of a tool output now left out (or a word the cut ends inside), in a
    record that says it was cut."""
    import sqlite3

    from reprise.core.search_index import TOKENIZER
    from reprise.core.sources import transcript_search

    rows = {row.path: row for row in service.catalog.refresh(None) if not row.problem_code}
    now = {path: service.catalog._by_name[row.source].read_search_records(session_file(row)) or []
           for path, row in rows.items()}
    monkeypatch.setattr(transcript_search, "TOOL_CHARS", transcript_search.SEARCH_CHARS)
    before = sqlite3.connect(":memory:")
    before.execute(f"CREATE VIRTUAL TABLE search USING fts5(text, path UNINDEXED, turn UNINDEXED, field UNINDEXED, "
                   f"tokenize = '{TOKENIZER}')")
    for path, row in rows.items():
        for record in service.catalog._by_name[row.source].read_search_records(session_file(row)) or []:
            before.execute("INSERT INTO search VALUES (?, ?, ?, ?)", (record.text, path, record.turn, record.field))
    monkeypatch.undo()
    cut = {(path, record.turn, record.field) for path, records in now.items() for record in records if record.cut}
    differed = 0
    for query in _queries(service):
        words = [word for word in query.split() if tokens(word)]
        if not words:
            continue
        match = " ".join('"' + word.replace('"', '""') + '"' for word in words)
        old = {(path, int(turn), field) for path, turn, field in
               before.execute("SELECT path, turn, field FROM search WHERE search MATCH ?", (match,))}
        new = {(hit.row.path, hit.turn, hit.field) for hit in
               service.search(query, all_workspaces=True, limit=100_000, index=False) if hit.field != "title"}
        assert old ^ new <= cut, query   # a cut output may also end inside a word: its start is a token then
        differed += bool(old - new)
    assert differed >= 1   # zzcutword


def _cold_catalog(service: Service, folder: Path) -> Catalog:
    """A catalog of the same sources with nothing listed: its first search is a cold one."""
    catalog = Catalog(service.catalog.sources, folder)
    catalog.index_enabled = False
    return catalog


def _cold_hits(catalog: Catalog, query: str, limit: int) -> tuple[list[tuple[str, int, str, str]], list[SearchUpdate]]:
    heard: list[SearchUpdate] = []
    hits = catalog.search(query, None, limit=limit, on_update=lambda update: heard.append(
        SearchUpdate(update.query, list(update.hits), update.searched, update.total, update.cut,
                     list(update.problems), update.complete)))
    return [(hit.row.file_id, hit.turn, hit.field, hit.snippet) for hit in hits], heard


@pytest.fixture
def cold_from_the_first_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_module, "COLD_FILES", 1)   # the fixture stores hold a few dozen files


def _dated_as_written(service: Service) -> list[SessionRow]:
    """Each file's mtime a minute after its newest turn, as an agent leaves it (the fixtures were
    copied now); the rows, newest first."""
    rows = [row for row in service.catalog.refresh(None) if not row.problem_code]
    for row in rows:
        stamp = int((row.activity_ts + 60) * 1e9)
        os.utime(row.path, ns=(stamp, stamp))
    return sorted(service.catalog.refresh(None), key=lambda row: -row.activity_ts)


@pytest.mark.usefixtures("cold_from_the_first_file")
def test_a_first_search_on_a_cold_cache_finds_what_a_search_after_the_listing_finds(service: Service,
                                                                                   tmp_path: Path) -> None:
    """Scanned before any listing (rows read only for the files with hits), the hits are the same as
    after a listing, in the same order, with a limit too (full before every file is scanned: the
    scope is then listed and searched again with what was scanned); the hits heard on the way are
    always the start of the answer."""
    queries = _queries(service)
    _dated_as_written(service)
    limited = 0
    for number, query in enumerate(queries):
        for limit in (10_000, 3):
            catalog = _cold_catalog(service, tmp_path / f"cold-{number}-{limit}")
            hits, heard = _cold_hits(catalog, query, limit)
            listed = service.search(query, all_workspaces=True, limit=limit, index=False)
            assert hits == [(hit.row.file_id, hit.turn, hit.field, hit.snippet) for hit in listed], (query, limit)
            assert heard[-1].complete
            for update in heard:
                assert [(hit.row.file_id, hit.turn, hit.field, hit.snippet) for hit in update.hits] == \
                    hits[:len(update.hits)], query
            listed_after = catalog.db.execute("SELECT count(*) FROM files").fetchone()[0]
            limited += listed_after > 0
            if limit == 10_000:
                assert listed_after == 0   # answered without a listing
            catalog.close()
    assert limited > 0   # some limits were full before every file was scanned


@pytest.mark.usefixtures("cold_from_the_first_file")
@pytest.mark.parametrize("share", [0.0, 1.01], ids=["the-rest-listed", "the-rest-scanned"])
def test_a_cold_search_gives_the_listings_answer_for_a_file_dated_before_its_newest_turn(
        service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, share: float) -> None:
    """A file whose mtime is older than its newest turn is scanned late (files go newest first by
    their time), yet its hits come where its row's time puts them: the limit's answer is the one
    a search after the listing gives, whether the rest is listed (most files hold the words) or
    scanned (few do)."""
    from reprise.core import search_cold

    monkeypatch.setattr(search_cold, "STOP_SHARE", share)
    rows = _dated_as_written(service)
    words = [_words(service, row) for row in rows]
    # A Claude Code file (its row dated by its turns) with a word that older files hold, and no newer one.
    late, query = next((at, sorted(found)[0]) for at, row in enumerate(rows) if row.source == "claude"
                       if (found := (words[at] - set().union(*words[:at])) & set().union(*words[at + 1:])))
    os.utime(rows[late].path, ns=(10**18, 10**18))   # 2001: before any of its turns, scanned last
    listed = service.search(query, all_workspaces=True, limit=1, index=False)
    assert [hit.row.path for hit in listed] == [rows[late].path]
    catalog = _cold_catalog(service, tmp_path / "cold")
    hits, heard = _cold_hits(catalog, query, 1)
    assert hits == [(hit.row.file_id, hit.turn, hit.field, hit.snippet) for hit in listed]
    assert heard[-1].complete
    assert (catalog.db.execute("SELECT count(*) FROM files").fetchone()[0] > 0) == (share < 1)   # listed, or not


def _words(service: Service, row: SessionRow) -> set[str]:
    records = service.catalog._by_name[row.source].read_search_records(session_file(row)) or []
    return {token for record in records for _, _, token in tokens(record.text) if len(token) > 3}


@pytest.mark.usefixtures("cold_from_the_first_file")
def test_a_cold_search_never_waits_for_the_catalog_a_listing_holds(service: Service, tmp_path: Path) -> None:
    """While another thread holds the catalog (a cold listing in the TUI), a first search scans and
    answers without it."""
    catalog = _cold_catalog(service, tmp_path / "cold")
    catalog.db.execute("SELECT 1")   # its file made, as a listing would have
    done = threading.Event()
    found: list[list[tuple[str, int, str, str]]] = []

    def search() -> None:
        found.append(_cold_hits(catalog, "cafe urun", 10_000)[0])
        done.set()

    with catalog._lock:   # held here, as a listing holds it
        thread = threading.Thread(target=search)
        thread.start()
        assert done.wait(120)
    thread.join()
    assert [hit[2] for hit in found[0]] == ["user"]


@pytest.mark.usefixtures("cold_from_the_first_file")
def test_a_cold_search_with_the_older_files_in_worker_processes_finds_the_same_hits(
        service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reprise.core import search_cold

    _dated_as_written(service)
    monkeypatch.setattr(search_cold, "SERIAL_BYTES", 1)   # the newest file here, every other one in workers
    monkeypatch.setattr(search_cold, "PARALLEL_MIN", 1)
    in_workers: list[int] = []
    real_iter = search_cold.iter_in_processes

    def heard_iter(work, items):   # the worker path must run, or serial is only compared with serial
        in_workers.append(len(items))
        return real_iter(work, items)

    monkeypatch.setattr(search_cold, "iter_in_processes", heard_iter)
    for number, query in enumerate(["the", "REPLYbeta", "cafe urun", "session", "zzheadword"]):
        for limit in (10_000, 2):
            catalog = _cold_catalog(service, tmp_path / f"cold-{number}-{limit}")
            catalog.parallel = True
            hits, heard = _cold_hits(catalog, query, limit)
            listed = service.search(query, all_workspaces=True, limit=limit, index=False)
            assert hits == [(hit.row.file_id, hit.turn, hit.field, hit.snippet) for hit in listed], (query, limit)
            assert heard[-1].complete
            catalog.close()
    assert in_workers and all(in_workers)


def test_search_records_decoded_by_orjson_are_jsons_even_for_an_integer_beyond_64_bits(service: Service,
                                                                                          tmp_path: Path) -> None:
    """The search's reader decodes lines with orjson (as the listing does) and falls back to json
    where orjson's value would change a text (an integer beyond 64 bits in a tool call's input: orjson
    reads it as a float): every file's records are json's."""
    import json

    from reprise.core.sources import agent_json, jsonl_lines

    work = tmp_path / "big"
    big = ClaudeFile("5e551011-0000-4000-8000-0000000000dd", cwd=str(work))
    big.prompt("Count past the 64 bits")
    big.assistant("Counting.", tools=(("toolu_big", "Bash", {"count": 123456789012345678901234567890, "n": 1.5}),))
    big.tool_result("toolu_big", "done")
    big.write(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-work-big" / f"{big.session_id}.jsonl")
    decoded_by_json: list[str] = []

    def json_only(data: bytes, view: memoryview, start: int, end: int, exact: object) -> object:
        decoded_by_json.append("line")
        value = json.loads(str(view[start:end], "utf-8"))
        return agent_json.without_surrogates(value) if agent_json.may_hold_surrogates(data, start, end) else value

    rows = [row for row in service.catalog.refresh(None) if not row.problem_code]
    fast = {row.path: service.catalog._by_name[row.source].read_search_records(session_file(row)) for row in rows}
    original = jsonl_lines.loads_line
    jsonl_lines.loads_line = json_only   # type: ignore[assignment]
    try:
        slow = {row.path: service.catalog._by_name[row.source].read_search_records(session_file(row)) for row in rows}
    finally:
        jsonl_lines.loads_line = original
    assert decoded_by_json and fast == slow
    found = service.search("123456789012345678901234567890", all_workspaces=True, index=False)
    assert [hit.field for hit in found] == ["tool"]
