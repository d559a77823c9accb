"""The catalog is a cache: a corrupt, newer, locked or unreachable database never breaks a command,
is never deleted (another process may hold it open), and is said once in one line. Its files are
private. Broken and future-dated session files are cached like any row, so they cost one read per
change of the file, not one per listing (counted in decodes, never timed).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprise.core.catalog import SCHEMA, Catalog
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.sources.fractal import codec as codec_module
from reprise.core.sources.fractal import store as store_module
from reprise.core.sources.fractal.codec import encode
from reprise.core.sources.fractal.listing import FractalListing
from reprise.core.sources.fractal.store import Store

from ..core.test_store import make_state
from .test_hostile import environment, run

KEY = workspace_key("/home/dev/project")
DAY_S = 86_400


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "state")


def put(store: Store, session_id: str, turns: int, *, data: bytes | None = None, mtime: float | None = None) -> Path:
    path = store.paths.session_file(SessionRef(KEY, session_id, "fractal"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(make_state(turns, session_id)) if data is None else data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def filled_catalog(store: Store, cache: Path, sessions: int = 60) -> Catalog:
    """A catalog on disk with enough rows to span several pages, closed (its WAL checkpointed)."""
    for number in range(sessions):
        put(store, f"{number:032x}", 2, mtime=time.time() - 3600)
    catalog = Catalog([FractalListing(store)], cache)
    assert len(catalog.refresh(None)) == sessions
    catalog.close()
    return catalog


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def broken_names(cache: Path) -> list[str]:
    return sorted(path.name for path in cache.iterdir() if ".broken-" in path.name)


@pytest.fixture
def decodes(monkeypatch):
    """Count every decode of a session file; no pause between the store's mid-write retries (the
    count, not the time, is what these tests pin down)."""
    counted = []
    original = codec_module.decode   # the store imports it when it reads a file

    def counting(data, **kwargs):
        counted.append(kwargs.get("path"))
        return original(data, **kwargs)

    monkeypatch.setattr(codec_module, "decode", counting)
    monkeypatch.setattr(store_module, "_SETTLE_PAUSE_S", 0.0)
    return counted


# --- 5. the catalog is a cache: it never breaks a command --------------------------------------

def test_a_catalog_with_corrupt_pages_is_moved_aside_not_deleted_and_rebuilt_once(store, tmp_path):
    cache = tmp_path / "cache"
    db_path = filled_catalog(store, cache).db_path
    data = bytearray(db_path.read_bytes())
    data[4096:] = b"\xa5" * (len(data) - 4096)  # every page but the header page: "malformed"
    db_path.write_bytes(bytes(data))
    broken_digest, broken_inode = digest(db_path), db_path.stat().st_ino

    catalog = Catalog([FractalListing(store)], cache)
    assert len(catalog.refresh(None)) == 60
    [aside] = broken_names(cache)
    assert digest(cache / aside) == broken_digest and (cache / aside).stat().st_ino == broken_inode
    [notice] = catalog.take_notices()
    assert str(db_path) in notice and aside in notice and "\n" not in notice
    assert len(catalog.refresh(None)) == 60 and catalog.take_notices() == []
    catalog.close()
    warm = Catalog([FractalListing(store)], cache)
    assert len(warm.refresh(None)) == 60 and warm.take_notices() == [] and len(broken_names(cache)) == 1


def test_a_file_that_is_not_a_database_is_moved_aside_with_its_wal_and_shm(store, tmp_path):
    cache = tmp_path / "cache"
    db_path = filled_catalog(store, cache).db_path
    db_path.write_bytes(b"this is not a database" * 400)
    for suffix, content in (("-wal", b"old wal"), ("-shm", b"old shm")):
        Path(f"{db_path}{suffix}").write_bytes(content)
    catalog = Catalog([FractalListing(store)], cache)
    assert len(catalog.refresh(None)) == 60
    names = broken_names(cache)
    assert len(names) == 3, names
    [main] = [name for name in names if name.endswith(".sqlite")]
    assert (cache / main).read_bytes() == b"this is not a database" * 400
    assert (cache / f"{main}-wal").read_bytes() == b"old wal" and (cache / f"{main}-shm").read_bytes() == b"old shm"
    assert len(catalog.take_notices()) == 1


def test_a_catalog_that_goes_bad_while_open_is_recovered_and_the_call_retried(store, tmp_path):
    cache = tmp_path / "cache"
    catalog = filled_catalog(store, cache)
    assert len(catalog.refresh(None)) == 60
    catalog.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(catalog.db_path.read_bytes())
    data[4096:] = b"\x5a" * (len(data) - 4096)
    with open(catalog.db_path, "r+b") as handle:  # in place, under the open connection
        handle.write(data)
    catalog.db.execute("PRAGMA cache_size = 0")
    put(store, "f" * 32, 1)
    rows = catalog.refresh(None)
    assert len(rows) == 61 and {row.turns for row in rows} == {1, 2}
    assert len(broken_names(cache)) >= 1 and len(catalog.take_notices()) == 1


def test_a_catalog_from_a_newer_reprise_is_left_as_it_is_and_the_listing_reads_through(store, tmp_path):
    cache = tmp_path / "cache"
    db_path = filled_catalog(store, cache, sessions=3).db_path
    with sqlite3.connect(db_path) as newer:
        newer.execute("CREATE TABLE future_feature (x)")
        newer.execute(f"PRAGMA user_version = {(SCHEMA + 1) << 16}")
    newer.close()
    before = digest(db_path)
    catalog = Catalog([FractalListing(store)], cache)
    assert len(catalog.refresh(None)) == 3
    assert len(catalog.refresh(None)) == 3
    [notice] = catalog.take_notices()
    assert "newer" in notice and str(db_path) in notice
    catalog.close()
    assert digest(db_path) == before and broken_names(cache) == []
    with sqlite3.connect(db_path) as check:
        assert check.execute("PRAGMA user_version").fetchone()[0] == (SCHEMA + 1) << 16
    check.close()


HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA locking_mode=EXCLUSIVE")
db.execute("BEGIN EXCLUSIVE")
db.execute("CREATE TABLE IF NOT EXISTS held (x)")
print("held", flush=True)
sys.stdin.read()
"""


def test_a_catalog_locked_by_another_process_beyond_the_busy_wait_lists_read_through(store, tmp_path,
                                                                                    monkeypatch):
    from reprise.core import catalog_db

    monkeypatch.setattr(catalog_db, "BUSY_TIMEOUT_S", 0.3)
    cache = tmp_path / "cache"
    db_path = filled_catalog(store, cache, sessions=4).db_path
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"held\n"
        catalog = Catalog([FractalListing(store)], cache)
        assert len(catalog.refresh(None)) == 4
        put(store, "e" * 32, 1)
        assert len(catalog.refresh(None)) == 5
        [notice] = catalog.take_notices()
        assert "locked" in notice and str(db_path) in notice
        assert broken_names(cache) == [], "a locked catalog is not broken: nothing is moved"
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def test_an_unusable_cache_folder_lists_read_through_and_search_still_works(store, tmp_path):
    put(store, "a" * 32, 2)
    (tmp_path / "a-file").write_text("")
    catalog = Catalog([FractalListing(store)], tmp_path / "a-file")
    assert [row.file_id for row in catalog.refresh(None)] == ["a" * 32]
    assert {hit.row.file_id for hit in catalog.search("message 1")} == {"a" * 32}
    [notice] = catalog.take_notices()
    assert "a-file" in notice and "listing without it" in notice


def test_the_command_line_says_a_rebuild_once_in_one_line_and_still_lists(tmp_path):
    from .. import factories

    session_id = factories.session_id_for("catalog-cli")
    factories.write_session(tmp_path / "state", tmp_path, factories.session_bytes(session_id, turns=1))
    (tmp_path / "home").mkdir()
    cache = tmp_path / "cache"
    env = environment(tmp_path, cache)
    args = ["list", "--all", "--json", "--state-dir", str(tmp_path / "state")]
    assert run(args, env, cwd=tmp_path).returncode == 0
    [db_path] = cache.glob("catalog-*.sqlite")
    db_path.write_bytes(b"garbage" * 1000)
    for suffix in ("-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    first = run(args, env, cwd=tmp_path)
    err = first.stderr.decode()
    assert first.returncode == 0 and session_id in first.stdout.decode(), err
    assert err.count("\n") == 1 and err.startswith("reprise: ") and "Traceback" not in err, err
    second = run(args, env, cwd=tmp_path)
    assert second.returncode == 0 and second.stderr == b"" and session_id in second.stdout.decode()


async def test_the_tui_says_once_in_a_notice_that_it_lists_without_the_cache(tmp_path):
    from reprise.core import config
    from reprise.core.service import Service

    from .. import factories
    from ..tui.conftest import build_app, settle

    session_id = factories.session_id_for("catalog-tui")
    factories.write_session(tmp_path / "state", tmp_path / "project", factories.session_bytes(session_id, turns=1))
    (tmp_path / "a-file").write_text("")
    service = Service(config.load(state_dir=str(tmp_path / "state")), workspace=tmp_path / "project",
                      cache=tmp_path / "a-file")
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.screen.load_rows()
        await settle(pilot)
        assert [row.file_id for row in app.screen.all_rows] == [session_id]
        notices = [n.message for n in app._notifications if "catalog cache" in n.message]
        assert len(notices) == 1 and "listing without it" in notices[0] and "a-file" in notices[0], notices


@contextlib.contextmanager
def small_disk(folder: Path):
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], check=False).returncode:  # a failing catalog may leak a handle
            subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(folder: Path) -> None:
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"x" * 4096)
    finally:
        os.close(fd)


def test_a_cache_folder_on_a_full_disk_lists_read_through(store, tmp_path):
    with small_disk(tmp_path / "full") as cache:
        catalog = Catalog([FractalListing(store)], cache)
        try:
            fill(cache)
            for number in range(30):
                put(store, f"{number:032x}", 2)
            assert len(catalog.refresh(None)) == 30
            [notice] = catalog.take_notices()
            assert "listing without it" in notice and str(cache) in notice and "full" in notice
        finally:
            catalog.close()


def test_a_disk_that_fills_up_under_an_open_catalog_switches_it_to_read_through(store, tmp_path):
    with small_disk(tmp_path / "filling") as cache:
        catalog = Catalog([FractalListing(store)], cache)
        try:
            put(store, "a" * 32, 1)
            assert len(catalog.refresh(None)) == 1
            fill(cache)
            for number in range(40):
                put(store, f"{number:032x}", 3)
            rows = catalog.refresh(None)
            assert len(rows) == 41 and {row.problem_code for row in rows} == {None}
            assert len(catalog.refresh(None)) == 41
            [notice] = catalog.take_notices()  # one, for the switch: none before it, none after
            assert "full" in notice and "listing without it" in notice
        finally:
            catalog.close()


def test_catalog_files_are_private_even_in_an_existing_world_readable_cache_folder(store, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    cache.chmod(0o755)
    put(store, "a" * 32, 1)
    old_umask = os.umask(0o022)
    try:
        catalog = Catalog([FractalListing(store)], cache)
        catalog.refresh(None)
        catalog.search("message")
        files = {path.name[len(catalog.db_path.name):] or "db": stat.S_IMODE(path.stat().st_mode)
                 for path in cache.iterdir() if path.name.startswith(catalog.db_path.name)}
        assert {"db", "-wal", "-shm"} <= set(files)
        assert set(files.values()) == {0o600}, files
        catalog.close()
        catalog.db_path.chmod(0o644)  # as an older Reprise left it
        reopened = Catalog([FractalListing(store)], cache)
        reopened.refresh(None)
        assert stat.S_IMODE(reopened.db_path.stat().st_mode) == 0o600
        for suffix in ("-wal", "-shm"):
            assert stat.S_IMODE(os.stat(f"{reopened.db_path}{suffix}").st_mode) == 0o600
    finally:
        os.umask(old_umask)


# --- 6. broken files cost one read, not one per listing ----------------------------------------

def test_a_hundred_future_dated_broken_files_are_decoded_once_then_never_again(store, tmp_path, decodes):
    future = time.time() + DAY_S
    for number in range(100):
        put(store, f"{number:032x}", 0, data=b'{"schema_version": 1, "session_id": ', mtime=future)
    catalog = Catalog([FractalListing(store)], tmp_path / "cache")
    rows = catalog.refresh(None)
    assert len(rows) == 100 and {row.problem_code for row in rows} == {"invalid_json"}
    assert len(decodes) == 100, "a file dated in the future is not being written: no mid-write retries"
    decodes.clear()
    assert len(catalog.refresh(None)) == 100
    assert decodes == []
    catalog.close()
    assert len(Catalog([FractalListing(store)], tmp_path / "cache").refresh(None)) == 100 and decodes == []


def test_a_just_written_broken_file_is_retried_once_per_change_of_the_file(store, tmp_path, decodes):
    path = put(store, "b" * 32, 0, data=b'{"schema_version": 1,')
    catalog = Catalog([FractalListing(store)], tmp_path / "cache")
    [row] = catalog.refresh(None)
    assert row.problem_code == "invalid_json" and len(decodes) > 1, "a fresh broken file may be mid-write"
    decodes.clear()
    for _ in range(3):
        [row] = catalog.refresh(None)
        assert row.problem_code == "invalid_json"
    assert decodes == []
    path.write_bytes(b'{"schema_version": 1, "x":')
    [row] = catalog.refresh(None)
    assert row.problem_code == "invalid_json" and len(decodes) > 1
    decodes.clear()
    path.write_bytes(encode(make_state(3, "b" * 32)))
    [row] = catalog.refresh(None)
    assert row.problem_code is None and row.turns == 3 and len(decodes) == 1


def test_a_future_dated_session_is_cached_and_its_rewrite_is_seen(store, tmp_path, decodes):
    path = put(store, "c" * 32, 2, mtime=time.time() + DAY_S)
    catalog = Catalog([FractalListing(store)], tmp_path / "cache")
    [row] = catalog.refresh(None)
    assert row.turns == 2 and len(decodes) == 1
    decodes.clear()
    [row] = catalog.refresh(None)
    assert decodes == []
    path.write_bytes(encode(make_state(5, "c" * 32)))  # an agent writes it now: the mtime moves back
    [row] = catalog.refresh(None)
    assert row.turns == 5 and len(decodes) == 1
