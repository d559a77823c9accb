"""A store whose file id is not the session's id (`file_is_session` False: the test SQLite agent keeps a
session in records, listed under its first record's id, the session's id in its fields): everything
that names a session uses the session's id. Ids typed by people find it (whole, by a prefix or the
shown short id), the list shows it, a search hit names it, Reprise's title of it is listed, and the
catalog says where its files are by it."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from reprise.core import contract
from reprise.core.errors import NotFoundError
from reprise.core.service import Service
from reprise.core.sources.registry import short_id
from reprise.core.sources.samples import SampleSet
from reprise.tui import cli
from tests.sources.sqlite_store import sqlite_samples


@pytest.fixture
def sqlite_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SampleSet]:
    with sqlite_samples(tmp_path, monkeypatch) as written:
        yield written


def rows_by_id(service: Service) -> dict[str, object]:
    rows = service.list_sessions(all_workspaces=True, sources=["sqlite-test"]).rows
    service.load_details(rows)
    return {row.id: row for row in rows}


def records_of(store: SampleSet, session_id: str) -> int:
    """How many records of the agent's database hold the session (read-only)."""
    database = store.store / "db" / "sessions.db"
    with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as db:
        return int(db.execute("SELECT COUNT(*) FROM records WHERE session_id = ?", (session_id,)).fetchone()[0])


def test_a_row_is_named_by_its_sessions_id_not_its_files(sqlite_store):
    assert records_of(sqlite_store, sqlite_store.sessions[2].session_id) == 2   # one session, two records
    service = Service.from_environment()
    rows = service.list_sessions(all_workspaces=True, sources=["sqlite-test"]).rows
    assert sorted(row.id for row in rows) == sorted(sample.session_id for sample in sqlite_store.sessions)
    for row in rows:
        assert row.file_id.startswith("rec-") and row.session_id == row.id and row.ref is not None
        assert row.ref.session_id == row.id
        # Where the catalog says a session's files are, asked by the session's id (the sources' `cataloged`).
        assert service.sources["sqlite-test"].cataloged is not None
        assert service.sources["sqlite-test"].cataloged(row.id) == [row.path]
        assert service.sources["sqlite-test"].cataloged(row.file_id) == []


def test_ids_people_type_find_the_session(sqlite_store, capsys):
    service = Service.from_environment()
    for sample in sqlite_store.sessions:
        for text in (sample.session_id, sample.session_id[:6], short_id("sqlite-test", sample.session_id)):
            assert service.resolve(text).session_id == sample.session_id, text
    record = next(iter(rows_by_id(service).values())).file_id
    with pytest.raises(NotFoundError):
        service.resolve(record)   # a record's id names no session
    status = cli.main(["list", "--all"])
    out = capsys.readouterr().out
    assert status == 0 and "rec-" not in out
    assert all(short_id("sqlite-test", sample.session_id) in out for sample in sqlite_store.sessions)


def test_a_search_hit_and_reprises_title_name_the_session(sqlite_store, capsys):
    resumed = sqlite_store.sessions[2]   # two records
    service = Service.from_environment()
    hits = contract.search(service.search("changelog", all_workspaces=True)).hits
    assert [hit.session_id for hit in hits] == [resumed.session_id]
    found = service.search("patch version", all_workspaces=True)   # a word of its second record
    assert {hit.row.id for hit in found} == {resumed.session_id}
    assert cli.main(["rename", resumed.session_id[:8], "Verbose config path"]) == 0
    capsys.readouterr()
    assert rows_by_id(Service.from_environment())[resumed.session_id].title == "Verbose config path"
