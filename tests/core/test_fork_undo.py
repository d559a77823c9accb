"""Undoing the trim that wrote a Fractal fork moves the fork to Reprise's trash (restorable from
there), as for a Claude Code fork, instead of filling the fork back with the trimmed turns."""

from __future__ import annotations

import pytest

from reprise.core import config
from reprise.core.errors import ChangedOnDiskError
from reprise.core.service import Service
from reprise.core.trimming import TrimOptions

from .. import factories


@pytest.fixture
def service(tmp_path, isolated_paths):
    folder = tmp_path / "project"
    folder.mkdir()
    factories.write_session(isolated_paths, folder, factories.session_bytes("fork-undo", turns=6))
    return Service(config.load(state_dir=str(isolated_paths)), workspace=folder)


def the_session(service: Service):
    return service.resolve("fork-undo")


def test_undoing_a_fork_moves_it_to_the_trash_and_the_trash_brings_it_back(service):
    original = the_session(service)
    before = service.session_path(original)
    original_bytes = open(before, "rb").read()
    fork = service.trim(original, TrimOptions(drop=("1", "2")), fork=True).ref
    fork_path = service.session_path(fork)
    fork_bytes = open(fork_path, "rb").read()
    assert service.can_undo_trim(fork)

    preview = service.restore(fork, dry_run=True)
    assert [step.mode for step in preview.steps] == ["trashed"] and not preview.applied
    assert open(fork_path, "rb").read() == fork_bytes   # a preview moves nothing

    result = service.restore(fork)
    assert result.applied and [step.mode for step in result.steps] == ["trashed"]
    assert not service.sources["fractal"].store.exists(fork)
    assert [entry.ref for entry in service.trash_entries()] == [fork]
    assert open(before, "rb").read() == original_bytes   # the session it came from never changed

    service.trash_restore(fork)
    assert open(fork_path, "rb").read() == fork_bytes   # back exactly as Reprise wrote it, turns still trimmed


def test_a_fork_its_agent_added_to_needs_force_and_then_goes_whole(service):
    fork = service.trim(the_session(service), TrimOptions(drop=("1",)), fork=True).ref
    store = service.sources["fractal"].store
    state = store.load(fork).state
    state.turns.append(state.turns[-1].model_copy(update={"turn_id": "turn-added-later"}))
    store.save(fork, state, expected=store.current_version(store.paths.session_file(fork)))
    grown = open(service.session_path(fork), "rb").read()

    assert any("needs --force" in note for note in service.restore(fork, dry_run=True).notes)
    with pytest.raises(ChangedOnDiskError):
        service.restore(fork)
    assert store.exists(fork)
    service.restore(fork, force=True)
    service.trash_restore(fork)
    assert open(service.session_path(fork), "rb").read() == grown   # the added turn went to the trash and back


def test_an_in_place_trim_of_a_fork_is_undone_first_by_putting_its_text_back(service):
    fork = service.trim(the_session(service), TrimOptions(drop=("1",)), fork=True).ref
    forked = open(service.session_path(fork), "rb").read()
    service.trim(fork, TrimOptions(drop=("1",)))
    assert [step.mode for step in service.restore(fork, dry_run=True).steps] != ["trashed"]
    service.restore(fork)
    assert open(service.session_path(fork), "rb").read() == forked
    assert [step.mode for step in service.restore(fork, dry_run=True).steps] == ["trashed"]
