from __future__ import annotations

import json
from datetime import timedelta

import pytest

from reprise.core import contract
from reprise.core.archive import Archive
from reprise.core.audit import AuditLog
from reprise.core.errors import (
    ConflictError,
    NotFoundError,
    PendingTurnError,
    UsageError,
)
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.session_meta import SessionMeta
from reprise.core.sources.fractal.store import Store
from reprise.core.sources.fractal.trash import Trash, relink
from reprise.core.sources.fractal.trim import TrimOptions, trim_session

from .test_trim import BASE, OLD_NOW, build_state, write

KEY = workspace_key("/home/dev/project")
DAY = 86400


def sid(n: int) -> str:
    return f"{n:032x}"


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "state")


@pytest.fixture
def trash(store):
    return Trash(store)


def make(store: Store, n: int, key: str = KEY, *, title: str | None = None, **kwargs) -> SessionRef:
    ref = SessionRef(key, sid(n), "fractal")
    write(store, ref, build_state(3, session_id=ref.session_id, **kwargs))
    if title:
        store.write_meta(ref, SessionMeta(title=title, pinned=False))
    return ref


def ops(store: Store, key: str = KEY) -> list[tuple[str, str | None, str]]:
    return [(r.op, r.session_id, r.result) for r in AuditLog(store.paths).read([key])]


def test_rm_moves_the_session_and_its_metadata_to_the_trash(store, trash):
    ref = make(store, 1, title="Fix login")
    data = store.paths.session_file(ref).read_bytes()
    entry = trash.remove(ref, now=OLD_NOW)
    assert not store.exists(ref) and not store.paths.meta_file(ref).exists()
    assert store.paths.trash_file(ref).read_bytes() == data
    assert json.loads(store.paths.trash_meta_file(ref).read_text())["title"] == "Fix login"
    assert entry.size == len(data) and entry.title == "Fix login"
    assert ops(store) == [("rm", ref.session_id, "ok")]


def test_rm_of_a_missing_session_is_not_found(store, trash):
    with pytest.raises(NotFoundError):
        trash.remove(SessionRef(KEY, sid(9), "fractal"), now=OLD_NOW)


def test_rm_refuses_a_session_with_a_recent_pending_turn_unless_forced(store, trash):
    ref = make(store, 1, pending_last=True)
    soon = (BASE + timedelta(minutes=5)).timestamp()
    with pytest.raises(PendingTurnError):
        trash.remove(ref, now=soon)
    assert store.exists(ref)
    trash.remove(ref, now=soon, force=True)
    assert not store.exists(ref)


def test_rm_moves_a_broken_file_too(store, trash):
    ref = SessionRef(KEY, sid(4), "fractal")
    path = store.paths.session_file(ref)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"{broken")
    trash.remove(ref, now=OLD_NOW)
    assert store.paths.trash_file(ref).read_bytes() == b"{broken"


def test_trash_list_shows_each_session_with_its_age_newest_first(store, trash):
    first, second = make(store, 1, title="one"), make(store, 2)
    trash.remove(first, now=OLD_NOW)
    trash.remove(second, now=OLD_NOW + 3600)
    entries = trash.entries([KEY])
    assert [e.ref for e in entries] == [second, first]
    assert entries[1].age(OLD_NOW + 2 * 3600) == 2 * 3600
    shown = contract.dump(contract.trash_entry(entries[1], OLD_NOW + 7200))
    assert (shown["title"], shown["age_s"]) == ("one", 7200)


def test_trash_restore_puts_the_session_and_metadata_back(store, trash):
    ref = make(store, 1, title="keep me")
    data = store.paths.session_file(ref).read_bytes()
    trash.remove(ref, now=OLD_NOW)
    trash.restore(ref, now=OLD_NOW)
    assert store.paths.session_file(ref).read_bytes() == data
    assert store.read_meta(ref).title == "keep me"
    assert trash.entries([KEY]) == []
    assert [op for op, _, _ in ops(store)] == ["rm", "trash-restore"]


def test_trash_restore_refuses_when_a_session_with_that_id_exists_again(store, trash):
    ref = make(store, 1)
    trash.remove(ref, now=OLD_NOW)
    make(store, 1)
    with pytest.raises(ConflictError, match="exists again"):
        trash.restore(ref, now=OLD_NOW)
    assert store.paths.trash_file(ref).exists()


def test_purge_asks_for_confirmation(store, trash):
    ref = make(store, 1)
    trash.remove(ref, now=OLD_NOW)
    with pytest.raises(UsageError, match="for good"):
        trash.purge([KEY], confirmed=False)
    assert store.paths.trash_file(ref).exists()


def test_purge_deletes_only_entries_older_than_the_age_with_their_archives(store, trash):
    old, new = make(store, 1, response_chars=900), make(store, 2)
    trim_session(store, Archive(store.paths), old, TrimOptions(cap_replies=10, spare=0), now=OLD_NOW)
    trash.remove(old, now=OLD_NOW - 10 * DAY)
    trash.remove(new, now=OLD_NOW)
    result = trash.purge([KEY], confirmed=True, older_than=7 * DAY, now=OLD_NOW)
    assert [e.ref for e in result.purged] == [old] and [e.ref for e in result.kept] == [new]
    assert not store.paths.trash_file(old).exists() and not store.paths.archive_dir(old).exists()
    assert result.archives_deleted == [old.session_id]
    assert store.paths.trash_file(new).exists()
    purge = [r for r in AuditLog(store.paths).read([KEY]) if r.op == "purge"]
    assert purge[0].sessions == [old.session_id] and purge[0].counts == {"sessions": 1, "archives": 1}


def test_relink_moves_sessions_metadata_archives_and_trash_to_the_new_folders_key(store, trash, tmp_path):
    old_key = workspace_key("/home/dev/old-place")
    kept = make(store, 1, old_key, title="moved", response_chars=900)
    trim_session(store, Archive(store.paths), kept, TrimOptions(cap_replies=10, spare=0), now=OLD_NOW)
    trashed = make(store, 2, old_key)
    trash.remove(trashed, now=OLD_NOW)
    data = store.paths.session_file(kept).read_bytes()
    folder = tmp_path / "new-place"
    folder.mkdir()
    result = relink(store, old_key, folder, now=OLD_NOW)
    new_key = workspace_key(folder)
    moved = SessionRef(new_key, kept.session_id, "fractal")
    assert result.new_key == new_key and result.sessions == [kept.session_id] and result.trashed == [trashed.session_id]
    assert store.paths.session_file(moved).read_bytes() == data and not store.exists(kept)
    assert store.read_meta(moved).title == "moved"
    assert [e.op for e in Archive(store.paths).entries(moved)] == ["trim-original", "trim"]
    assert store.paths.trash_file(SessionRef(new_key, trashed.session_id, "fractal")).exists()
    assert store.workspace_path(new_key) == str(folder.resolve())
    assert [r.op for r in AuditLog(store.paths).read([new_key])][-1] == "relink"
    assert [r.op for r in AuditLog(store.paths).read([old_key])][-1] == "relink"


def test_relink_refuses_on_id_collisions_and_moves_nothing(store, tmp_path):
    old_key = workspace_key("/home/dev/old-place")
    folder = tmp_path / "new-place"
    folder.mkdir()
    first, _ = make(store, 1, old_key), make(store, 2, old_key)
    make(store, 1, workspace_key(folder))
    with pytest.raises(ConflictError, match=first.session_id):
        relink(store, old_key, folder, now=OLD_NOW)
    assert store.exists(first) and store.exists(SessionRef(old_key, sid(2), "fractal"))
    assert not store.exists(SessionRef(workspace_key(folder), sid(2), "fractal"))


def test_relink_refuses_a_session_whose_agent_is_probably_running(store, tmp_path):
    old_key = workspace_key("/home/dev/old-place")
    ref = make(store, 1, old_key, pending_last=True)
    with pytest.raises(PendingTurnError):
        relink(store, old_key, tmp_path, now=(BASE + timedelta(minutes=3)).timestamp())
    assert store.exists(ref)


def test_relink_to_the_same_key_or_from_an_unknown_key_is_refused(store, tmp_path):
    with pytest.raises(NotFoundError):
        relink(store, workspace_key("/nowhere"), tmp_path, now=OLD_NOW)
    make(store, 1, workspace_key(tmp_path))
    with pytest.raises(UsageError):
        relink(store, workspace_key(tmp_path), tmp_path, now=OLD_NOW)
