"""The catalog's stored rows: what a screen draws first, before a refresh looks at the disk. They
are the rows the last refresh stored, read without a stat or a read of any session file."""

from __future__ import annotations

import pytest

from reprise.core.catalog import Catalog
from reprise.core.sources.fractal.listing import FractalListing
from reprise.core.sources.fractal.store import Store

from .test_catalog import KEY_A, KEY_B, age, put


@pytest.fixture
def listed(tmp_path) -> tuple[Store, Catalog]:
    """A Fractal store and its catalog."""
    store = Store(tmp_path / "state")
    return store, Catalog([FractalListing(store)], tmp_path / "cache")


def _view(rows):
    return sorted((row.source, row.workspace_key, row.file_id, row.path, row.size, row.mtime_ns, row.turns,
                   row.fields.first_message) for row in rows)


@pytest.mark.parametrize("keys", [None, [KEY_A]], ids=["all", "one workspace"])
def test_stored_rows_are_the_last_refreshs_rows(listed, keys):
    store, catalog = listed
    for index in range(6):
        ref = put(store, KEY_A if index % 2 else KEY_B, f"{index:032x}", index)
        age(store.paths.session_file(ref))
    refreshed = catalog.refresh(keys)
    catalog.load_details(refreshed)
    stored = catalog.stored_rows(keys)
    catalog.load_details(stored)
    assert len(stored) == (6 if keys is None else 3) and _view(stored) == _view(refreshed)


def test_stored_rows_look_at_no_file(listed):
    store, catalog = listed
    refs = [put(store, KEY_A, f"{index:032x}", 2) for index in range(3)]
    for ref in refs:
        age(store.paths.session_file(ref))
    catalog.refresh(None)
    store.paths.session_file(refs[0]).unlink()   # gone on disk: only a look at the disk would know
    assert {row.file_id for row in catalog.stored_rows(None)} == {ref.session_id for ref in refs}
    assert {row.file_id for row in catalog.refresh(None)} == {ref.session_id for ref in refs[1:]}


def test_a_catalog_never_refreshed_has_no_stored_rows(listed):
    store, catalog = listed
    put(store, KEY_A, "a" * 32, 1)
    assert catalog.stored_rows(None) == [] and catalog.stored_rows([KEY_A]) == []
