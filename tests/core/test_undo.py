"""What undo takes back (`Service.undo_step` / `Service.undo`, the policy of `core/undo.py`): the
session last moved to the trash here, else the current session's newest trim (a fork goes to the
trash), else the newest trashed session; nothing when there is neither."""

from __future__ import annotations

import pytest

from reprise.core import config
from reprise.core.service import Service
from reprise.core.trimming import TrimOptions
from reprise.core.undo import FORKED, TRASHED, TRIMMED

from .. import factories


@pytest.fixture
def service(tmp_path, isolated_paths):
    folder = tmp_path / "project"
    folder.mkdir()
    for name in ("undo-one", "undo-two"):
        factories.write_session(isolated_paths, folder, factories.session_bytes(name, turns=6))
    return Service(config.load(state_dir=str(isolated_paths)), workspace=folder)


def test_nothing_to_undo_without_a_trim_or_a_trashed_session(service):
    one = service.resolve("undo-one")
    assert service.undo_step(one, "one") is None
    assert service.undo_step(None) is None


def test_the_session_last_trashed_comes_back_even_with_another_session_current(service):
    one, two = service.resolve("undo-one"), service.resolve("undo-two")
    service.trim(two, TrimOptions(drop=("1",)))      # the current row has a trim to undo...
    service.remove(one, title="Fix the login")       # ...but the last change was a move to the trash
    step = service.undo_step(two, "two")
    assert step is not None and (step.kind, step.ref) == (TRASHED, one)
    assert service.undo(step) == []
    assert service.sources["fractal"].store.exists(one)
    after = service.undo_step(two, "two")             # the log is cleared: the trim is next
    assert after is not None and (after.kind, after.ref, after.title) == (TRIMMED, two, "two")


def test_a_trim_in_place_is_undone_from_the_archive(service):
    one = service.resolve("undo-one")
    path = service.session_path(one)
    before = open(path, "rb").read()
    service.trim(one, TrimOptions(drop=("1", "2")))
    step = service.undo_step(one, "one")
    assert step is not None and step.kind == TRIMMED
    service.undo(step)
    assert open(path, "rb").read() == before


def test_a_fork_is_moved_to_the_trash_and_its_source_untouched(service):
    one = service.resolve("undo-one")
    source_bytes = open(service.session_path(one), "rb").read()
    fork = service.trim(one, TrimOptions(drop=("1",)), fork=True).ref
    step = service.undo_step(fork, "the fork")
    assert step is not None and (step.kind, step.ref, step.grown) == (FORKED, fork, False)
    service.undo(step)
    assert [entry.ref for entry in service.trash_entries()] == [fork]
    assert open(service.session_path(one), "rb").read() == source_bytes


def test_with_no_trim_the_newest_trashed_session_in_scope_is_offered(service, tmp_path):
    one, two = service.resolve("undo-one"), service.resolve("undo-two")
    service.remove(one)
    service.undo_log.clear()      # as in a later run of Reprise: only the trash remembers
    step = service.undo_step(two, "two")
    assert step is not None and (step.kind, step.ref) == (TRASHED, one)
