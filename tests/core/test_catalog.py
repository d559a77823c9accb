from __future__ import annotations

import dataclasses
import json
import os
import threading
import time

import pytest

from reprise.core import contract
from reprise.core.catalog import CHANGED_WARNING, Catalog
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.rows import DetailsNotLoaded, SessionRow
from reprise.core.session_meta import SessionMeta
from reprise.core.sources.base import ListingFields
from reprise.core.sources.fractal.codec import encode
from reprise.core.sources.fractal.listing import FractalListing
from reprise.core.sources.fractal.models import TurnUsage
from reprise.core.sources.fractal.store import Store
from reprise.core.transcript import Usage

from .test_store import make_state

KEY_A = workspace_key("/home/dev/a")
KEY_B = workspace_key("/home/dev/b")


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "state")


@pytest.fixture
def catalog(store, tmp_path):
    return Catalog([FractalListing(store)], tmp_path / "cache")


def put(store: Store, key: str, session_id: str, turns: int, **kwargs) -> SessionRef:
    ref = SessionRef(key, session_id, "fractal")
    state = make_state(turns, session_id)
    for name, value in kwargs.items():
        setattr(state, name, value)
    path = store.paths.session_file(ref)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(state))
    return ref


def age(path, seconds: float = 3600) -> None:
    """Make a file look old, so the catalog trusts its cached row (recent files are re-read)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_listing_fields_come_from_the_file(store, catalog):
    ref = put(store, KEY_A, "a" * 32, 3)
    loaded = store.load(ref)
    state = loaded.state
    state.summary.turns[-1].agent = None
    state.summary.turns[1].agent.usage = TurnUsage(input_tokens=10, output_tokens=5, cost=0.5, context_tokens=777)
    store.save(ref, state, expected=loaded.version)
    [row] = catalog.refresh([KEY_A])
    catalog.load_details([row])
    fields = row.fields
    assert (fields.session_id, row.turns, fields.last_status, fields.pending) == ("a" * 32, 3, "pending", True)
    assert (fields.first_message, fields.last_message) == ("message 0", "message 2")
    assert (row.context_tokens, fields.usage.input_tokens, fields.usage.cost) == (777, 10, 0.5)
    assert fields.last_activity == "2026-01-01T00:02:00+00:00" and fields.activity_source == "history"
    assert row.size == store.paths.session_file(ref).stat().st_size


def test_warm_refresh_rereads_only_changed_files(store, catalog, monkeypatch):
    refs = [put(store, KEY_A, f"{i:032x}", 2) for i in range(5)]
    for ref in refs:
        age(store.paths.session_file(ref))
    catalog.refresh([KEY_A])
    reads = []
    original = store.inspect
    monkeypatch.setattr(store, "inspect", lambda path, *a, **k: reads.append(path.name) or original(path, *a, **k))
    assert len(catalog.refresh([KEY_A])) == 5
    assert reads == []
    path = store.paths.session_file(refs[2])
    path.write_bytes(encode(make_state(4, refs[2].session_id)))
    rows = {row.file_id: row for row in catalog.refresh([KEY_A])}
    assert reads == [path.name]
    assert rows[refs[2].session_id].turns == 4


def test_deleted_files_leave_the_listing(store, catalog):
    refs = [put(store, KEY_A, f"{i:032x}", 1) for i in range(3)]
    assert len(catalog.refresh([KEY_A])) == 3
    store.paths.session_file(refs[0]).unlink()
    assert {row.file_id for row in catalog.refresh([KEY_A])} == {refs[1].session_id, refs[2].session_id}
    # the row's details and carry (a table of their own, which the warm scan never reads) leave with it
    assert sorted(catalog.db.execute("SELECT file_id FROM file_data")) == sorted(
        catalog.db.execute("SELECT file_id FROM files")) == [(refs[1].session_id,), (refs[2].session_id,)]


def test_a_racy_file_is_read_again_on_the_next_listing(store, catalog, monkeypatch):
    """A file whose stat was too recent to trust when read is re-read, with no query of its own."""
    ref = put(store, KEY_A, "c" * 32, 1)   # just written: read, and marked racy
    catalog.refresh([KEY_A])
    assert catalog.db.execute("SELECT racy FROM files").fetchall() == [(1,)]
    read = []
    original = FractalListing.read_listing
    monkeypatch.setattr(FractalListing, "read_listing",
                        lambda self, file, now_ns: read.append(file.file_id) or original(self, file, now_ns))
    catalog.refresh([KEY_A])
    assert read == [ref.session_id]
    age(store.paths.session_file(ref))
    catalog.refresh([KEY_A])   # re-read once more (its mtime changed), now old enough to trust
    catalog.refresh([KEY_A])
    assert read == [ref.session_id, ref.session_id]


def test_catalog_survives_restart_and_corruption(store, catalog, tmp_path):
    put(store, KEY_A, "a" * 32, 1)
    catalog.refresh(None)
    catalog.close()
    catalog.db_path.write_bytes(b"this is not a database" * 100)
    fresh = Catalog([FractalListing(store)], tmp_path / "cache")
    assert [row.file_id for row in fresh.refresh(None)] == ["a" * 32]


def test_problem_files_are_rows_with_their_reason_and_temp_files_are_not_listed(store, catalog):
    put(store, KEY_A, "a" * 32, 1)
    sessions = store.paths.sessions(KEY_A)
    (sessions / "broken.json").write_bytes(b'{"schema_version": 1,')
    (sessions / f".{'a' * 32}.tmp-123-abcd").write_bytes(b"partial")
    (sessions / "notes.txt").write_bytes(b"ignored")
    for name in ("broken.json", f".{'a' * 32}.tmp-123-abcd"):
        age(sessions / name)
    rows = {row.file_id: row for row in catalog.refresh([KEY_A])}
    assert set(rows) == {"a" * 32, "broken"}
    assert rows["broken"].problem_code == "invalid_json"
    assert "line 1" in rows["broken"].problem_message


def test_scope_is_one_workspace_or_all(store, catalog):
    put(store, KEY_A, "a" * 32, 1)
    put(store, KEY_B, "b" * 32, 1)
    assert [r.file_id for r in catalog.refresh([KEY_A])] == ["a" * 32]
    assert {r.file_id for r in catalog.refresh(None)} == {"a" * 32, "b" * 32}


def test_meta_title_and_pin_are_joined_and_follow_changes(store, catalog):
    ref = put(store, KEY_A, "a" * 32, 1)
    store.write_meta(ref, SessionMeta(title="Fix the parser", pinned=True))
    [row] = catalog.refresh([KEY_A])
    assert (row.title, row.pinned) == ("Fix the parser", True)
    store.write_meta(ref, SessionMeta(title="Renamed", pinned=False))
    [row] = catalog.refresh([KEY_A])
    assert (row.title, row.pinned) == ("Renamed", False)


def test_a_file_caught_mid_write_is_retried_not_reported(store, catalog):
    ref = put(store, KEY_A, "a" * 32, 2)
    path = store.paths.session_file(ref)
    full = encode(make_state(6, ref.session_id))
    path.write_bytes(full[: len(full) // 2])  # an in-place writer is half way

    def finish():
        time.sleep(0.08)
        path.write_bytes(full)

    writer = threading.Thread(target=finish)
    writer.start()
    [row] = catalog.refresh([KEY_A])
    writer.join()
    assert row.problem_code is None and row.turns == 6


def test_unknown_history_times_fall_back_to_file_mtime(store, catalog):
    put(store, KEY_A, "a" * 32, 0)
    [row] = catalog.refresh([KEY_A])
    catalog.load_details([row])
    assert row.fields.last_activity is None and row.fields.activity_source == "mtime"


def test_parallel_cold_scan_gives_the_same_rows_as_a_serial_one(store, tmp_path, monkeypatch):
    from reprise.core import catalog as catalog_module

    for i in range(30):
        put(store, KEY_A if i % 2 else KEY_B, f"{i:032x}", i % 7)
    sessions = store.paths.sessions(KEY_A)
    (sessions / "broken.json").write_bytes(b"[1, 2")
    monkeypatch.setattr(catalog_module, "PARALLEL_MIN", 10)
    serial_catalog = Catalog([FractalListing(store)], tmp_path / "serial")
    parallel_catalog = Catalog([FractalListing(store)], tmp_path / "parallel", parallel=True)
    serial, parallel = serial_catalog.refresh(None), parallel_catalog.refresh(None)
    serial_catalog.load_details(serial)
    parallel_catalog.load_details(parallel)

    def view(rows):
        return sorted((r.workspace_key, r.file_id, r.turns, r.problem_code, r.fields.first_message, r.fields.pending)
                      for r in rows)

    assert len(parallel) == 31 and view(parallel) == view(serial)


def test_details_of_a_warm_listing_are_read_when_loaded(store, catalog):
    ref = put(store, KEY_A, "a" * 32, 3)
    age(store.paths.session_file(ref))
    catalog.refresh([KEY_A])
    [row] = catalog.refresh([KEY_A])
    assert row.details is None
    catalog.load_details([row])
    assert row.turns == 3 and row.fields.first_message == "message 0" and row.fields.last_status == "succeeded"
    assert row.path == str(store.paths.session_file(ref))


def test_search_follows_changed_and_deleted_files(store, catalog):
    ref = put(store, KEY_A, "a" * 32, 3)
    other = put(store, KEY_A, "b" * 32, 2)
    assert [h.turn for h in catalog.search("message 1", [KEY_A]) if h.row.file_id == "a" * 32] == [2]
    loaded = store.load(ref)
    loaded.state.turns[1].user.message = "completely different words"
    store.save(ref, loaded.state, expected=loaded.version)
    hits = catalog.search("message 1", [KEY_A])
    assert [(h.row.file_id, h.turn) for h in hits] == [("b" * 32, 2)]
    assert [(h.row.file_id, h.turn) for h in catalog.search("different", [KEY_A])] == [("a" * 32, 2)]
    store.paths.session_file(other).unlink()
    assert catalog.search("message 1", [KEY_A]) == []
    assert len(catalog.search("message", [KEY_A])) == 2  # turns 1 and 3 of the remaining session


# --- the row: every field declared, details loaded explicitly -----------------------------------

# Today's `reprise list --json` row, key for key, then the fields added with the source seam.
ROW_KEYS = ["session_id", "workspace_key", "workspace_path", "path", "title", "pinned", "turns", "first_message",
            "last_message", "last_status", "pending", "last_activity", "activity_source", "size", "context_tokens",
            "usage", "resume_cost", "problem", "warning", "source", "branch", "model", "hidden_by_agent",
            "agent_title", "deleted_by_agent_at", "kept"]
USAGE_KEYS = ["input_tokens", "output_tokens", "cost", "cache_read_tokens", "cache_creation_tokens"]


def queries(catalog: Catalog) -> list[str]:
    seen: list[str] = []
    catalog.db.set_trace_callback(seen.append)
    return seen


def test_every_field_of_a_row_is_declared_and_nothing_else_can_be_attached(store, catalog):
    put(store, KEY_A, "a" * 32, 2)
    [row] = catalog.refresh([KEY_A])
    declared = {field.name for field in dataclasses.fields(SessionRow)}
    assert set(SessionRow.__slots__) == declared and not hasattr(row, "__dict__")
    assert {"source", "workspace_key", "file_id", "path", "size", "mtime_ns", "activity_ts", "turns",
            "context_tokens", "title", "pinned", "details"} <= declared
    with pytest.raises(AttributeError):
        row.first_message = "attached"  # type: ignore[attr-defined]
    assert {field.name for field in dataclasses.fields(ListingFields)} >= {
        "branch", "model", "hidden_by_agent", "first_message", "pending", "usage"}


def test_a_listed_row_has_no_details_until_loaded_and_reading_it_queries_nothing(store, catalog):
    ref = put(store, KEY_A, "a" * 32, 3)
    [row] = catalog.refresh([KEY_A])
    seen = queries(catalog)
    assert (row.source, row.file_id, row.turns, row.path) == ("fractal", "a" * 32, 3,
                                                               str(store.paths.session_file(ref)))
    assert row.ref == ref and row.details is None
    with pytest.raises(DetailsNotLoaded):
        row.fields  # noqa: B018
    with pytest.raises(DetailsNotLoaded):
        contract.session(row)
    assert seen == [], "no attribute of a row reads the catalog"
    catalog.load_details([row])
    assert row.fields.first_message == "message 0" and row.display_title == "message 0"


def test_details_of_many_rows_are_a_query_a_table_and_loaded_rows_are_not_read_again(store, catalog):
    for number in range(100):
        age(store.paths.session_file(put(store, KEY_A, f"{number:032x}", 1 + number % 3)))
    rows = catalog.refresh([KEY_A])
    seen = queries(catalog)
    catalog.load_details(rows)
    # Every workspace's rows: the stats and the details, each table read whole (in one read transaction).
    assert len([q for q in seen if q.lstrip().upper().startswith("SELECT") and "DISTINCT" not in q]) == 2
    assert {row.file_id: row.fields.turns for row in rows} == {f"{n:032x}": 1 + n % 3 for n in range(100)}
    seen.clear()
    catalog.load_details(rows)
    assert seen == []


def test_details_of_a_file_that_changed_since_it_was_listed_are_not_the_new_files(store, catalog, tmp_path):
    ref = put(store, KEY_A, "a" * 32, 2)
    path = store.paths.session_file(ref)
    age(path)
    [old] = catalog.refresh([KEY_A])
    path.write_bytes(encode(make_state(5, ref.session_id)))
    [new] = Catalog([FractalListing(store)], tmp_path / "cache").refresh([KEY_A])  # another process lists it
    catalog.load_details([old, new])
    assert new.turns == 5 and new.fields.turns == 5 and new.fields.warning is None
    assert old.turns == 2 and old.fields.turns == 0 and old.fields.first_message == ""
    assert old.fields.warning == CHANGED_WARNING


def test_a_deleted_file_loads_as_changed_not_as_an_error(store, catalog):
    ref = put(store, KEY_A, "a" * 32, 2)
    [row] = catalog.refresh([KEY_A])
    store.paths.session_file(ref).unlink()
    catalog.refresh([KEY_A])
    catalog.load_details([row])
    assert row.fields.warning == CHANGED_WARNING


def test_a_row_document_keeps_todays_keys_in_order_and_adds_the_source_fields(store, catalog):
    ref = put(store, KEY_A, "a" * 32, 2)
    loaded = store.load(ref)
    loaded.state.history[-1].trace = {"model": "gpt-test-1", "steps": []}
    loaded.state.history[0].trace = {"model": "older-model"}
    store.save(ref, loaded.state, expected=loaded.version)
    store.write_meta(ref, SessionMeta(title="Named", pinned=True))
    sessions = store.paths.sessions(KEY_A)
    (sessions / "broken.json").write_bytes(b"[1,")
    age(sessions / "broken.json")
    rows = {row.file_id: row for row in catalog.refresh([KEY_A])}
    catalog.load_details(list(rows.values()))
    good, broken = (contract.dump(contract.session(rows[name])) for name in ("a" * 32, "broken"))
    for document in (good, broken):
        assert list(document) == ROW_KEYS and list(document["usage"]) == USAGE_KEYS
        assert document["source"] == "fractal" and document["branch"] is None
        assert document["hidden_by_agent"] is False
        assert document["usage"]["cache_read_tokens"] == document["usage"]["cache_creation_tokens"] == 0
    assert (good["model"], good["title"], good["pinned"], good["turns"]) == ("gpt-test-1", "Named", True, 2)
    assert broken["model"] is None and broken["session_id"] == "broken"
    assert broken["problem"]["code"] == "invalid_json" and broken["usage"] == {
        "input_tokens": 0, "output_tokens": 0, "cost": 0.0, "cache_read_tokens": 0, "cache_creation_tokens": 0}


def test_a_warm_listing_gives_the_same_rows_and_details_as_the_cold_one(store, catalog, tmp_path):
    for number in range(6):
        age(store.paths.session_file(put(store, KEY_A, f"{number:032x}", number)))
    cold = catalog.refresh([KEY_A])
    catalog.load_details(cold)
    warm_catalog = Catalog([FractalListing(store)], tmp_path / "cache")
    warm = warm_catalog.refresh([KEY_A])
    warm_catalog.load_details(warm)
    def documents(rows):
        return sorted(((d := contract.dump(contract.session(r)))["session_id"], d) for r in rows)

    assert documents(cold) == documents(warm)


def test_the_details_layout_is_in_the_schema_version():
    """The details column is a positional array of ListingFields (and Usage): the schema's version
    holds a digest of both field lists (and of the catalog's columns), so a changed field list
    rebuilds an older cache instead of reading it into the wrong fields."""
    from reprise.core import catalog as catalog_module
    from reprise.core.catalog_columns import LAYOUT

    details, usage = catalog_module.DETAILS_LAYOUT, catalog_module.USAGE_LAYOUT
    assert details == tuple(f.name for f in dataclasses.fields(ListingFields))
    assert usage == tuple(f.name for f in dataclasses.fields(Usage))
    schema, layout = catalog_module._version()
    assert schema == catalog_module.SCHEMA and layout == LAYOUT.digest(details, usage)
    changed = {LAYOUT.digest(details[:-1], usage), LAYOUT.digest((*details[1:], details[0]), usage),
               LAYOUT.digest(details, (*usage, "new_figure"))}
    assert layout not in changed and len(changed) == 3


@pytest.mark.parametrize("fields", [
    ListingFields(session_id="s", workspace_key="w", turns=3, usage=Usage(input_tokens=5, cost=0.25),
                  first_message="café …"),
    ListingFields(session_id="s", workspace_key="w", usage=Usage(input_tokens=2**70 + 1, output_tokens=2**63)),
    ListingFields(session_id="s", workspace_key="w", turns=2**64, context_window=2**64 - 1, history_count=10**19),
    ListingFields(session_id="s", workspace_key="w", usage=Usage(cost=2**64, duration_ms=2**65)),   # an integer cost
    ListingFields(session_id="s", workspace_key="w", usage=Usage(cost=1e300), first_message="12345678901234567890"),
    ListingFields(session_id="s", workspace_key="w", usage=Usage(cost=float("nan"))),
    ListingFields(session_id="s", workspace_key="w", first_message="lone \ud800 surrogate"),
], ids=["plain", "beyond 64 bits", "counts beyond 64 bits", "integer cost", "large float cost", "nan",
        "lone surrogate"])
def test_stored_fields_read_back_as_json_reads_them(fields):
    """A row's stored fields are read by orjson where it reads them as json does, else by json."""
    from reprise.core import catalog

    text = catalog._details_text(fields)
    values = json.loads(text)
    values[catalog._USAGE_AT] = Usage(*values[catalog._USAGE_AT])
    read = catalog._fields_of(text)
    assert repr(read) == repr(ListingFields(*values)) == repr(fields)   # repr: NaN equals itself there
    assert type(read.usage.input_tokens) is int
