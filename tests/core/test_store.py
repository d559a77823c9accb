from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from reprise.core.archive import Archive
from reprise.core.errors import (
    ArchiveError,
    ChangedOnDiskError,
    LockedError,
    NotFoundError,
    ProblemFileError,
)
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.sources.fractal.codec import encode
from reprise.core.sources.fractal.models import (
    AgentTurn,
    HistoryTurn,
    SessionState,
    SummaryTurn,
    UserTurn,
)
from reprise.core.sources.fractal.store import Store, digest

ID = "0123456789abcdef0123456789abcdef"


def make_state(turns: int, session_id: str = ID) -> SessionState:
    state = SessionState(session_id=session_id)
    for i in range(turns):
        tid = f"turn-{i:032x}"
        state.summary.turns.append(SummaryTurn(turn_id=tid, user=UserTurn(message=f"message {i}"),
                                               agent=AgentTurn(status="succeeded", response=f"reply {i}")))
        state.history.append(HistoryTurn(turn_id=tid, user_message=f"message {i}", status="succeeded",
                                         created_at="2026-01-01T00:00:00+00:00",
                                         updated_at=f"2026-01-01T00:{i % 60:02d}:00+00:00"))
    return state


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "state")


@pytest.fixture
def ref():
    return SessionRef(workspace_key("/home/dev/project"), ID, "fractal")


def test_saved_file_is_fractal_bytes_mode_0600_in_0700_dirs_with_no_temp_left(store, ref):
    store.save(ref, make_state(2), expected=None)
    path = store.paths.session_file(ref)
    assert path.read_bytes() == (json.dumps(make_state(2).model_dump(mode="json"), indent=2) + "\n").encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for directory in (path.parent, path.parent.parent, store.root / "workspaces"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == [f"{ID}.json"]


def test_load_then_save_unchanged_gives_identical_bytes(store, ref):
    store.save(ref, make_state(3), expected=None)
    before = store.paths.session_file(ref).read_bytes()
    loaded = store.load(ref)
    store.save(ref, loaded.state, expected=loaded.version)
    assert store.paths.session_file(ref).read_bytes() == before


def test_change_on_disk_between_read_and_write_is_detected_and_nothing_written(store, ref):
    store.save(ref, make_state(1), expected=None)
    loaded = store.load(ref)
    path = store.paths.session_file(ref)
    other = encode(make_state(2))
    path.write_bytes(other)  # another writer, in place, like Fractal
    with pytest.raises(ChangedOnDiskError, match="changed on disk"):
        store.save(ref, make_state(5), expected=loaded.version)
    assert path.read_bytes() == other


def test_same_size_same_mtime_rewrite_is_still_detected_by_content_hash(store, ref):
    store.save(ref, make_state(1), expected=None)
    loaded = store.load(ref)
    path = store.paths.session_file(ref)
    info = path.stat()
    changed = loaded.data.replace(b"message 0", b"message X")
    path.write_bytes(changed)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    with pytest.raises(ChangedOnDiskError):
        store.save(ref, make_state(3), expected=loaded.version)
    assert path.read_bytes() == changed


def test_creating_over_an_existing_session_is_refused(store, ref):
    store.save(ref, make_state(1), expected=None)
    with pytest.raises(ChangedOnDiskError, match="already exists"):
        store.save(ref, make_state(0), expected=None)


def test_a_state_is_never_written_under_another_id(store, ref):
    with pytest.raises(Exception, match="Refusing"):
        store.save(ref, make_state(0, session_id="f" * 32), expected=None)
    assert not store.exists(ref)


def test_missing_and_broken_files_raise_typed_errors(store, ref):
    with pytest.raises(NotFoundError):
        store.load(ref)
    path = store.paths.session_file(ref)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"{not json")
    with pytest.raises(ProblemFileError) as info:
        store.load(ref)
    assert info.value.problem.code == "invalid_json"
    assert str(path) in str(info.value)


def test_a_second_process_waits_for_the_lock_and_gives_up_with_a_clear_error(store, ref, tmp_path):
    holder = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from reprise.core.sources.fractal.store import Store
        from reprise.core.paths import SessionRef
        store = Store(Path({str(store.root)!r}))
        with store.lock(SessionRef({ref.workspace_key!r}, {ref.session_id!r}, "fractal")):
            print("locked", flush=True)
            time.sleep(3)
    """)
    proc = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(LockedError, match="another Reprise process"):
            with store.lock(ref, timeout=0.3):
                pass
    finally:
        proc.wait(timeout=10)
    with store.lock(ref, timeout=1):
        pass


def test_killed_after_temp_write_leaves_the_old_file_and_only_a_hidden_temp(store, ref, tmp_path):
    store.save(ref, make_state(1), expected=None)
    old = store.paths.session_file(ref).read_bytes()
    child = textwrap.dedent(f"""
        from pathlib import Path
        from reprise.core.sources.fractal.store import Store
        from reprise.core.paths import SessionRef
        from reprise.core.sources.fractal.codec import decode
        store = Store(Path({str(store.root)!r}))
        ref = SessionRef({ref.workspace_key!r}, {ref.session_id!r}, "fractal")
        loaded = store.load(ref)
        loaded.state.summary.turns.clear()
        store.save(ref, loaded.state, expected=loaded.version)
    """)
    env = {**os.environ, "REPRISE_FAULTS": "after_temp_write=kill"}
    result = subprocess.run([sys.executable, "-c", child], env=env)
    assert result.returncode == -9
    assert store.paths.session_file(ref).read_bytes() == old
    leftovers = store.temp_files()
    assert len(leftovers) == 1 and leftovers[0].name.startswith(f".{ID}.tmp-")
    assert not leftovers[0].name.endswith(".json")


def test_archive_entries_are_content_addressed_verified_and_ordered(store, ref):
    archive = Archive(store.paths)
    first = archive.put(ref, b"one", op="trim", anchors=["turn-a"])
    second = archive.put(ref, b"two", op="snapshot")
    assert first.digest == digest(b"one")
    assert [e.digest for e in archive.entries(ref)] == [first.digest, second.digest]
    assert archive.entries(ref)[0].anchors == ["turn-a"]
    assert archive.read(ref, first.digest) == b"one"
    (archive.directory(ref) / f"{second.digest}.json").write_bytes(b"tampered")
    with pytest.raises(ArchiveError, match="corrupt"):
        archive.read(ref, second.digest)


def test_archive_index_survives_a_torn_last_line(store, ref):
    archive = Archive(store.paths)
    entry = archive.put(ref, b"kept", op="trim")
    with open(archive.directory(ref) / "index.jsonl", "ab") as index:
        index.write(b'{"digest": "abc')
    assert [e.digest for e in archive.entries(ref)] == [entry.digest]


def test_archive_write_failure_is_an_archive_error(store, ref):
    archive = Archive(store.paths)
    archive.directory(ref).parent.mkdir(parents=True)
    archive.directory(ref).write_bytes(b"a file where the folder should be")
    with pytest.raises(ArchiveError, match="nothing in the session was changed"):
        archive.put(ref, b"data", op="trim")


def test_a_load_without_the_bytes_has_the_same_version_and_current_version_hashes_the_file(tmp_path):
    store = Store(tmp_path / "state")
    ref = SessionRef(workspace_key("/home/dev/project"), "0123456789abcdef0123456789abcdef", "fractal")
    state = SessionState.model_validate({"schema_version": 1, "session_id": ref.session_id,
                                         "summary": {"turns": []}, "history": [], "x": "y" * 3_000_000})
    store.save(ref, state, expected=None)
    full, light = store.load(ref), store.load(ref, keep_data=False)
    assert light.data is None and full.data == store.paths.session_file(ref).read_bytes()
    assert light.version == full.version == store.current_version(store.paths.session_file(ref))
    assert full.version.sha256 == digest(full.data) and full.version.size == len(full.data)
    with store.chunks(store.paths.session_file(ref)) as chunks:
        assert b"".join(chunks) == full.data
