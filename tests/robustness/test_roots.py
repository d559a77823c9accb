"""No path leaves its root: a hostile state root whose `reprise/` folders (trash, archive, meta,
locks, the whole folder) are symlinks to a folder outside makes purge, trim, rm and rename do
nothing outside and name the link; a move across filesystems is a verified copy."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reprise.core.archive import Archive
from reprise.core.errors import RepriseError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.session_meta import SessionMeta
from reprise.core.sources.fractal.store import Store
from reprise.core.sources.fractal.trash import Trash
from reprise.core.sources.fractal.trim import TrimOptions, trim_session

from ..core.test_trim import OLD_NOW, build_state, write

KEY = workspace_key("/home/dev/project")
VICTIM = "Documents"  # a valid session id that names a folder a user cares about


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under a folder with its bytes (None for folders), to show nothing changed."""
    found: dict[str, bytes | None] = {}
    for directory, dirs, files in os.walk(folder):
        for name in dirs:
            found[os.path.relpath(Path(directory) / name, folder)] = None
        for name in files:
            found[os.path.relpath(Path(directory) / name, folder)] = (Path(directory) / name).read_bytes()
    return found


def outside_folder(tmp_path: Path) -> Path:
    outside = tmp_path / "home"
    (outside / VICTIM).mkdir(parents=True)
    (outside / VICTIM / "thesis.txt").write_text("years of work\n")
    (outside / f"{VICTIM}.json").write_text('{"not": "a session"}\n')
    (outside / "meta.txt").write_text("kept\n")
    return outside


def link(store: Store, where: str, outside: Path) -> Path:
    """Replace `<key>/<where>` by a symlink to `outside` (its parents real folders)."""
    path = store.paths.workspace(KEY) / where
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        for item in path.iterdir():
            os.rename(item, outside / item.name)
        path.rmdir()
    path.symlink_to(outside, target_is_directory=True)
    return path


def session(store: Store, session_id: str = VICTIM) -> SessionRef:
    ref = SessionRef(KEY, session_id, "fractal")
    write(store, ref, build_state(4, session_id=session_id))
    return ref


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "state")


def test_purge_through_a_linked_archive_folder_deletes_nothing_outside_and_names_the_link(store, tmp_path):
    ref = session(store)
    trash = Trash(store)
    trash.remove(ref, now=OLD_NOW)
    outside = outside_folder(tmp_path)
    before = tree(outside)
    linked = link(store, "reprise/archive", outside)
    with pytest.raises(RepriseError) as raised:
        trash.purge([KEY], confirmed=True, now=OLD_NOW)
    assert str(linked) in raised.value.message and "still in the trash" in raised.value.message
    assert tree(outside) == before
    assert [entry.ref for entry in trash.entries([KEY])] == [ref]  # still restorable


@pytest.mark.parametrize("where", ["reprise", "reprise/trash"])
def test_purge_of_a_linked_trash_deletes_nothing_outside(store, tmp_path, where):
    ref = session(store)
    Trash(store).remove(ref, now=OLD_NOW)
    outside = outside_folder(tmp_path)
    linked = link(store, where, outside)
    before = tree(outside)
    with pytest.raises(RepriseError) as raised:
        Trash(store).purge([KEY], confirmed=True, now=OLD_NOW)
    assert str(linked) in raised.value.message
    assert tree(outside) == before


@pytest.mark.parametrize("where", ["reprise", "reprise/archive"])
def test_trim_writes_no_archive_entry_outside_and_leaves_the_session(store, tmp_path, where):
    ref = session(store, "s1")
    data = store.paths.session_file(ref).read_bytes()
    outside = outside_folder(tmp_path)
    linked = link(store, where, outside)
    before = tree(outside)
    with pytest.raises(RepriseError) as raised:
        trim_session(store, Archive(store.paths), ref, TrimOptions(keep_history=1), now=OLD_NOW)
    assert str(linked) in raised.value.message
    assert tree(outside) == before
    assert store.paths.session_file(ref).read_bytes() == data


@pytest.mark.parametrize("where", ["reprise", "reprise/trash", "reprise/meta", "reprise/locks",
                                   "reprise/trash/records"])
def test_rm_moves_nothing_outside_and_names_the_link(store, tmp_path, where):
    ref = session(store, "s1")
    store.write_meta(ref, SessionMeta(title="mine"))
    data = store.paths.session_file(ref).read_bytes()
    outside = outside_folder(tmp_path)
    (outside / "s1.json").write_text('{"title": "theirs"}')
    linked = link(store, where, outside)
    before = tree(outside)
    with pytest.raises(RepriseError) as raised:
        Trash(store).remove(ref, now=OLD_NOW)
    assert str(linked) in raised.value.message, raised.value.message
    assert tree(outside) == before
    assert store.paths.session_file(ref).read_bytes() == data


@pytest.mark.parametrize("where", ["reprise", "reprise/meta", "reprise/locks"])
def test_rename_writes_no_metadata_or_lock_outside(store, tmp_path, where):
    ref = session(store, "s1")
    outside = outside_folder(tmp_path)
    linked = link(store, where, outside)
    before = tree(outside)
    with pytest.raises(RepriseError) as raised:
        store.update_meta(ref, lambda meta: setattr(meta, "title", "new"))
    assert str(linked) in raised.value.message
    assert tree(outside) == before


def test_a_linked_workspace_record_is_not_read_nor_replaced(store, tmp_path):
    session(store, "s1")
    outside = outside_folder(tmp_path)
    record = store.paths.workspace_record(KEY)
    record.parent.mkdir(parents=True, exist_ok=True)
    (outside / "record.json").write_text('{"path": "/etc"}')
    record.symlink_to(outside / "record.json")
    assert store.workspace_path(KEY) is None
    with pytest.raises(RepriseError) as raised:
        store.record_workspace(KEY, Path("/home/dev/project"))
    assert str(record) in raised.value.message and record.is_symlink()
    assert (outside / "record.json").read_text() == '{"path": "/etc"}'


def test_the_rooted_walk_refuses_dotdot_and_paths_outside_the_root(tmp_path):
    from reprise.core.rooted import OutsideRootError, Root

    root = Root(tmp_path / "state")
    for bad in (tmp_path / "elsewhere" / "x", tmp_path / "state" / ".." / "x", "../x"):
        with pytest.raises(OutsideRootError):
            root.write_atomic(bad, b"x")
    assert not (tmp_path / "x").exists() and not (tmp_path / "elsewhere").exists()


def test_rm_and_trash_restore_across_filesystems_copy_verify_and_remove_the_source(store, tmp_path):
    ref = session(store, "s1")
    store.write_meta(ref, SessionMeta(title="kept"))
    data = store.paths.session_file(ref).read_bytes()
    trash_dir = store.paths.trash_dir(KEY)
    trash_dir.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(trash_dir)], check=True)
    try:
        trash = Trash(store)
        trash.remove(ref, now=OLD_NOW)
        assert not store.paths.session_file(ref).exists()
        assert store.paths.trash_file(ref).read_bytes() == data
        assert SessionMeta.model_validate_json(store.paths.trash_meta_file(ref).read_bytes()).title == "kept"
        assert os.stat(store.paths.trash_file(ref)).st_dev != os.stat(store.paths.sessions(KEY)).st_dev
        trash.restore(ref, now=OLD_NOW)
        assert store.paths.session_file(ref).read_bytes() == data and not store.paths.trash_file(ref).exists()
        assert store.read_meta(ref).title == "kept"
        assert [name for name in os.listdir(trash_dir / "meta")] == []
    finally:
        subprocess.run(["umount", "-l", str(trash_dir)], check=True)


def test_doctor_clean_deletes_no_temp_file_outside_through_a_linked_workspace(tmp_path):
    from reprise.core import config
    from reprise.core.service import Service

    workspace = tmp_path / "project"
    workspace.mkdir()
    service = Service(config.load(state_dir=str(tmp_path / "state")), workspace=workspace, cache=tmp_path / "cache")
    outside = outside_folder(tmp_path)
    stale = outside / "sessions" / ".s1.tmp-1-abcd1234"
    stale.parent.mkdir()
    stale.write_text("someone's file")
    os.utime(stale, (0, 0))
    key = workspace_key("/somewhere/else")
    (service.sources["fractal"].store.paths.workspaces).mkdir(parents=True)
    (service.sources["fractal"].store.paths.workspaces / key).symlink_to(outside, target_is_directory=True)
    service.doctor(clean=True)
    assert stale.read_text() == "someone's file"


def test_the_cli_purge_of_a_linked_archive_names_the_link_in_one_line_and_keeps_the_outside(tmp_path):
    from .test_hostile import environment, json_of, run

    workspace = tmp_path / "project"
    workspace.mkdir()
    (tmp_path / "config.toml").write_text("")
    store = Store(tmp_path / "state")
    ref = SessionRef(workspace_key(workspace), VICTIM, "fractal")
    write(store, ref, build_state(4, session_id=VICTIM))
    Trash(store).remove(ref, now=OLD_NOW)
    outside = outside_folder(tmp_path)
    before = tree(outside)
    linked = store.paths.reprise_dir(ref.workspace_key) / "archive"
    linked.symlink_to(outside, target_is_directory=True)
    result = run(["trash", "purge", "--yes", "--json", "--state-dir", str(store.root)],
                 environment(tmp_path, tmp_path / "cache"), cwd=workspace)
    error = json_of(result, "trash purge")["error"]
    assert result.returncode == 1 and str(linked) in error["message"], error
    assert tree(outside) == before


def test_a_streamed_write_replaces_only_with_the_digest_it_was_meant_to_have(tmp_path):
    import hashlib

    from reprise.core.rooted import ContentMismatch, Root

    root = Root(tmp_path / "root")
    target = tmp_path / "root" / "entries" / "entry.json"
    chunks = [b"a" * 1000, b"b" * 10, b"c"]
    good = hashlib.sha256(b"".join(chunks)).hexdigest()
    root.write_atomic(target, iter(chunks), sha256=good)
    assert target.read_bytes() == b"".join(chunks)
    with pytest.raises(ContentMismatch, match="does not have the digest"):
        root.write_atomic(target, iter([b"other"]), sha256=good)
    assert target.read_bytes() == b"".join(chunks)
    assert sorted(p.name for p in target.parent.iterdir()) == ["entry.json"]   # no temp file left
    (tmp_path / "root" / "linked").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(RepriseError):
        root.write_atomic(tmp_path / "root" / "linked" / "x.json", iter([b"x"]), sha256=good)
    assert not (tmp_path / "x.json").exists()
