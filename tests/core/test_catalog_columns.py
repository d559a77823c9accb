"""The catalog's columns by name (core/catalog_columns.py): one table makes the `files` table, its
insert and select, the snapshot's layout, the rows and the schema's version. A figure added in this
test as one entry (and a row class with its field) round-trips through a real catalog: read, stored,
snapshot, warm listing, stored rows, a changed file. And a store whose file id is not the session's
id has it in a column, which the row's ref uses."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from reprise.core import catalog as catalog_module
from reprise.core import row_snapshot
from reprise.core.catalog import Catalog
from reprise.core.catalog_columns import COLUMNS, LAYOUT, Column, Layout
from reprise.core.paths import workspace_key
from reprise.core.rows import SessionRow
from reprise.core.sources.base import ListedFile, ListingFields, SessionFile
from reprise.core.sources.fractal.listing import FractalListing
from reprise.core.sources.fractal.store import Store

from .test_catalog import age, put
from .test_workspace_rules import MappedListing, write

KEY_A = workspace_key("/home/dev/a")
KEY_B = workspace_key("/home/dev/b")


@dataclasses.dataclass(slots=True, eq=False, repr=False)
class RowWithFigure(SessionRow):
    """A row with one more sortable figure, as a change that adds one would declare it."""

    figure: int = -1


# The new figure: a read of a file gives it from the listing fields (here a sum of two of them).
FIGURE = Column("figure", "INTEGER NOT NULL", "figure", read="listing.turns * 1000 + listing.context_tokens")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "state")


def table_columns(catalog: Catalog) -> tuple[str, ...]:
    return tuple(name for _, name, *_ in catalog.db.execute("PRAGMA table_info(files)"))


def figures(rows: list[SessionRow]) -> dict[str, int]:
    return {row.file_id: row.figure for row in rows}  # type: ignore[attr-defined]


def test_every_part_comes_from_the_one_table(store, tmp_path):
    age(store.paths.session_file(put(store, KEY_A, "a" * 32, 2)))
    catalog = Catalog([FractalListing(store)], tmp_path / "cache")
    [row] = catalog.refresh()
    assert table_columns(catalog) == ("source", "grp", *(column.name for column in COLUMNS))
    assert LAYOUT.select.startswith(f"SELECT grp, {', '.join(column.name for column in COLUMNS)} FROM files")
    assert (row_snapshot.FILE_ID, row_snapshot.SIZE, row_snapshot.MTIME, row_snapshot.RACY) == tuple(
        [column.name for column in COLUMNS].index(name) for name in ("file_id", "size", "mtime_ns", "racy"))
    [stored] = catalog.db.execute(LAYOUT.select, ("fractal",)).fetchall()
    assert stored == (row.group, *LAYOUT.values(row, False, None))   # a Fractal row records no folder
    rebuilt = LAYOUT.build("fractal", stored[0], [stored[1:]], {}, "/", lambda group, file_id: row.path)
    again = rebuilt[("fractal", row.group, row.file_id)]
    assert type(again) is SessionRow and again is not row
    assert [getattr(again, f.name) for f in dataclasses.fields(SessionRow)] == \
        [getattr(row, f.name) for f in dataclasses.fields(SessionRow)]
    catalog.close()


def test_a_column_must_name_a_field_of_the_row():
    with pytest.raises(TypeError, match="figure"):
        Layout((*COLUMNS, FIGURE), SessionRow)
    with pytest.raises(TypeError, match="twice"):
        Layout((*COLUMNS, COLUMNS[-1]), SessionRow)


def test_a_new_figure_is_one_entry_and_round_trips(store, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    refs = [put(store, key, f"{n:032x}", n % 3 + 1) for key in (KEY_A, KEY_B) for n in range(1, 5)]
    for ref in refs:
        age(store.paths.session_file(ref))
    Catalog([FractalListing(store)], cache).refresh()   # a cache of today's layout first
    layout = Layout((*COLUMNS, FIGURE), RowWithFigure)
    monkeypatch.setattr(catalog_module, "LAYOUT", layout)

    catalog = Catalog([FractalListing(store)], cache)   # another layout: the cache is rebuilt, not refused
    cold = catalog.refresh()
    assert catalog.take_notices() == [] and table_columns(catalog)[-1] == "figure"
    expected = {row.file_id: row.turns * 1000 + row.context_tokens for row in cold}
    assert figures(cold) == expected and len(set(expected.values())) > 1
    catalog.close()

    warm_catalog = Catalog([FractalListing(store)], cache)
    assert row_snapshot.load(warm_catalog.db, "fractal", layout.select).from_snapshot
    assert figures(warm_catalog.refresh()) == expected                     # the snapshot's columns
    assert figures(warm_catalog.stored_rows()) == expected                 # the same, without a stat
    assert figures(warm_catalog.refresh([KEY_A])) == {ref.session_id: expected[ref.session_id]
                                                      for ref in refs if ref.workspace_key == KEY_A}   # the table's
    put(store, KEY_B, refs[-1].session_id, 7)
    age(store.paths.session_file(refs[-1]), 60)
    changed = figures(warm_catalog.refresh())
    assert changed[refs[-1].session_id] // 1000 == 7 and changed[refs[-1].session_id] != expected[refs[-1].session_id]
    assert {k: v for k, v in changed.items() if k != refs[-1].session_id} == \
        {k: v for k, v in expected.items() if k != refs[-1].session_id}
    warm_catalog.close()

    monkeypatch.setattr(catalog_module, "LAYOUT", LAYOUT)   # and back: rebuilt again, no figure
    back = Catalog([FractalListing(store)], cache)
    assert "figure" not in table_columns(back) and len(back.refresh()) == len(refs)
    back.close()


class SessionInside(MappedListing):
    """A store whose files are named apart from their sessions: each file holds its session's id."""

    file_is_session = False

    def read_listing(self, file: SessionFile, now_ns: int) -> ListedFile:
        listed = super().read_listing(file, now_ns)
        assert isinstance(listed.fields, ListingFields)
        listed.fields.session_id = Path(file.path).read_text(encoding="utf-8")
        return listed


def test_a_row_of_a_store_whose_file_is_not_the_session_carries_its_id(tmp_path):
    root = tmp_path / "store"
    write(root, "alpha", "chat-1", "5f0c0d4e-0000-4000-8000-00000000000a")
    write(root, "beta", "chat-1", "5f0c0d4e-0000-4000-8000-00000000000b")
    listing = SessionInside(root, tmp_path / "data", {"alpha": "/work/alpha"})
    catalog = Catalog([listing], tmp_path / "cache")
    for rows in (catalog.refresh(), Catalog([listing], tmp_path / "cache").refresh(),
                 Catalog([listing], tmp_path / "cache").stored_rows()):
        by_group = {row.group: row for row in rows}
        assert {group: row.session_id for group, row in by_group.items()} == {
            "alpha": "5f0c0d4e-0000-4000-8000-00000000000a", "beta": "5f0c0d4e-0000-4000-8000-00000000000b"}
        assert {group: (row.ref.session_id if row.ref else None) for group, row in by_group.items()} == {
            "alpha": "5f0c0d4e-0000-4000-8000-00000000000a", "beta": "5f0c0d4e-0000-4000-8000-00000000000b"}
        assert all(row.file_id == "chat-1" for row in rows)
    catalog.close()


def test_a_row_whose_file_is_its_session_stores_no_session_id(store, tmp_path):
    put(store, KEY_A, "a" * 32, 1)
    catalog = Catalog([FractalListing(store)], tmp_path / "cache")
    [row] = catalog.refresh()
    assert row.session_id is None and row.ref is not None and row.ref.session_id == "a" * 32
    assert catalog.db.execute("SELECT count(*) FROM files WHERE session_id IS NOT NULL").fetchone()[0] == 0
    catalog.close()


def test_the_generated_code_is_the_table_s(tmp_path):
    """Each part's text names every column, in the table's order (what a reader of a failure sees)."""
    names = [column.name for column in COLUMNS]
    assert LAYOUT.insert.count("?") == len(names) + 2 and f"(source, grp, {', '.join(names)})" in LAYOUT.insert
    assert all(f"{column.name} {column.sql}" in LAYOUT.table for column in COLUMNS)
    assert set(LAYOUT.figures(ListingFields(session_id="s", workspace_key="k", turns=3), FractalListing(
        Store(tmp_path))).items()) == {("hidden_by_agent", False), ("context_window", None), ("turns", 3),
                                       ("context_tokens", 0), ("session_id", None), ("sweep_facts", None)}
