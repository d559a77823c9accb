"""A full disk tells the truth: on a small tmpfs state root, trim reports the archive failure
(not a later audit failure), rm, trash restore and relink put back what they moved when a
later step finds no space, the audit log claims nothing that was undone, and purge renames
each session into a tombstone first (a purge killed there leaves it wholly gone, finished by
the next purge)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

from reprise.core.archive import Archive
from reprise.core.audit import AuditLog
from reprise.core.errors import ArchiveError, RepriseError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.session_meta import SessionMeta
from reprise.core.sources.fractal.store import Store
from reprise.core.sources.fractal.trash import Trash, relink
from reprise.core.sources.fractal.trim import TrimOptions, trim_session

from ..core.test_trim import OLD_NOW, build_state, write

KEY = workspace_key("/home/dev/project")
PAGE = 4096


@pytest.fixture
def store(tmp_path):
    root = tmp_path / "state"
    root.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(root)], check=True)
    try:
        yield Store(root)
    finally:
        subprocess.run(["umount", "-l", str(root)], check=True)


def fill(store: Store, *, leave_pages: int = 0) -> None:
    """Fill the state root's filesystem, leaving `leave_pages` pages free."""
    filler = store.root / "filler"
    with filler.open("ab") as handle:
        info = os.statvfs(store.root)
        handle.write(b"\0" * max(0, info.f_bavail * info.f_frsize - leave_pages * PAGE))
    with pytest.raises(OSError) as full:
        (store.root / "probe").write_bytes(b"x" * (leave_pages + 1) * PAGE)
    (store.root / "probe").unlink(missing_ok=True)
    assert full.value.errno == errno.ENOSPC


def free(store: Store) -> None:
    (store.root / "filler").unlink()


def full_audit_page(store: Store) -> None:
    """End the audit log on a page boundary, so that the next line needs a new page (blank lines are skipped)."""
    path = store.paths.audit_file(KEY)
    size = path.stat().st_size if path.exists() else 0
    with path.open("ab") as handle:
        handle.write(b"\n" * (-size % PAGE or PAGE))


def session(store: Store, session_id: str = "s1") -> SessionRef:
    ref = SessionRef(KEY, session_id, "fractal")
    write(store, ref, build_state(4, session_id=session_id))
    return ref


def ops(store: Store, key: str = KEY) -> list[tuple[str, str]]:
    return [(record.op, record.result) for record in AuditLog(store.paths).read([key])]


def test_trim_on_a_full_disk_reports_the_archive_failure_and_changes_nothing(store):
    ref = session(store)
    data = store.paths.session_file(ref).read_bytes()
    fill(store)
    with pytest.raises(ArchiveError) as raised:
        trim_session(store, Archive(store.paths), ref, TrimOptions(keep_history=1), now=OLD_NOW)
    assert "No space left" in raised.value.message and "audit log" in (raised.value.hint or "")
    assert store.paths.session_file(ref).read_bytes() == data
    free(store)
    assert ops(store) == [] or all(result.startswith("failed") for _, result in ops(store))


def test_rm_whose_audit_line_finds_no_space_puts_the_session_back(store):
    ref = session(store)
    store.write_meta(ref, SessionMeta(title="kept"))
    data = store.paths.session_file(ref).read_bytes()
    fill(store, leave_pages=1)  # room for the trash record, none for the audit line
    with pytest.raises(RepriseError) as raised:
        Trash(store).remove(ref, now=OLD_NOW)
    message = raised.value.message
    assert "audit log" in message and "No space left" in message and "nothing was changed" in message
    assert store.paths.session_file(ref).read_bytes() == data and store.read_meta(ref).title == "kept"
    assert not store.paths.trash_file(ref).exists() and not store.paths.trash_record_file(ref).exists()
    free(store)
    assert ops(store) == []


def test_trash_restore_whose_audit_line_finds_no_space_leaves_it_in_the_trash(store):
    ref = session(store)
    trash = Trash(store)
    trash.remove(ref, now=OLD_NOW)
    data = store.paths.trash_file(ref).read_bytes()
    full_audit_page(store)
    fill(store)
    with pytest.raises(RepriseError) as raised:
        trash.restore(ref, now=OLD_NOW)
    assert "No space left" in raised.value.message and "nothing was changed" in raised.value.message
    assert not store.paths.session_file(ref).exists()
    assert store.paths.trash_file(ref).read_bytes() == data and store.paths.trash_record_file(ref).exists()
    free(store)
    assert ops(store) == [("rm", "ok")]
    trash.restore(ref, now=OLD_NOW)
    assert store.paths.session_file(ref).read_bytes() == data
    assert ops(store) == [("rm", "ok"), ("trash-restore", "ok")]


def test_relink_on_a_full_disk_moves_every_session_back(store, tmp_path):
    refs = [session(store, f"s{n}") for n in range(3)]
    before = {ref: store.paths.session_file(ref).read_bytes() for ref in refs}
    folder = tmp_path / "moved"
    folder.mkdir()
    fill(store)
    with pytest.raises(RepriseError) as raised:
        relink(store, KEY, folder, now=OLD_NOW)
    assert "No space left" in raised.value.message and "nothing was changed" in raised.value.message
    assert {ref: store.paths.session_file(ref).read_bytes() for ref in refs} == before
    new_key = workspace_key(folder)
    assert not list(store.paths.sessions(new_key).glob("*.json")) if store.paths.sessions(new_key).exists() else True
    free(store)
    assert ops(store) == [] and ops(store, new_key) == []


def test_purge_reports_exactly_what_it_purged_and_leaves_the_rest_restorable(store):
    first, second = session(store, "s1"), session(store, "s2")
    trash = Trash(store)
    trash.remove(first, now=OLD_NOW)
    trash.remove(second, now=OLD_NOW)
    lock = store.paths.lock_file(second)
    lock.unlink()
    os.mkfifo(lock)  # a hostile lock file: that session cannot be purged now
    with pytest.raises(RepriseError) as raised:
        trash.purge([KEY], confirmed=True, now=OLD_NOW)
    assert "Purged 1 trashed session(s) (s1)" in raised.value.message
    assert "s2 is still in the trash" in raised.value.message
    assert [entry.ref for entry in trash.entries([KEY])] == [second]
    purge_lines = [r for r in AuditLog(store.paths).read([KEY]) if r.op == "purge"]
    assert [r.sessions for r in purge_lines] == [["s1"]]


def test_a_purge_killed_after_the_tombstone_leaves_the_session_wholly_gone_and_is_finished_next_time(store, tmp_path):
    ref = session(store)
    archive = Archive(store.paths)
    trim_session(store, archive, ref, TrimOptions(keep_history=1), now=OLD_NOW)
    Trash(store).remove(ref, now=OLD_NOW)
    script = ("import sys; from reprise.core.sources.fractal.store import Store; "
              "from reprise.core.sources.fractal.trash import Trash; "
              "Trash(Store(sys.argv[1])).purge([sys.argv[2]], confirmed=True)")
    child = subprocess.run([sys.executable, "-c", script, str(store.root), KEY], timeout=60, check=False,
                           env={**os.environ, "REPRISE_FAULTS": "after_tombstone=kill"})
    assert child.returncode == -9
    trash = Trash(store)
    tomb = store.paths.trash_dir(KEY) / f".purge-{ref.session_id}"
    assert trash.entries([KEY]) == [] and (tomb / "session.json").exists()  # not restorable: gone or going
    result = trash.purge([KEY], confirmed=True, now=OLD_NOW)
    assert not tomb.exists() and not store.paths.archive_dir(ref).exists()
    assert result.archives_deleted == [ref.session_id] and result.finished == [ref]
    assert not store.paths.trash_meta_file(ref).exists() and not store.paths.trash_record_file(ref).exists()
    last = json.loads(store.paths.audit_file(KEY).read_text().splitlines()[-1])
    assert (last["op"], last["sessions"]) == ("purge", [ref.session_id])
