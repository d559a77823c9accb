"""Processes racing on the catalog never crash on it. SQLite's connections tell other processes that
they use the shared memory (`-shm`) through POSIX locks, and closing any descriptor of a file drops
every such lock the process holds on it: a process that opened the catalog's files while it held a
connection left the next process to connect taking itself for the only user and resetting the memory
the others had mapped (SIGBUS, exit -7, or wrong rows). Pinned down two ways: the locks a connection
holds are still held after every way this process opens the catalog (deterministic), and real
listers, a refreshing TUI-like process and agents appending race for a bounded number of listings.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from reprise.core.catalog import Catalog
from reprise.core.sources.fractal.listing import FractalListing
from reprise.core.sources.fractal.store import Store

from ..core.claude.builder import ClaudeFile
from ..core.codex.builder import CodexRollout
from .test_catalog_cache import put
from .test_hostile import COMMAND_TIMEOUT_S, REPRISE, environment

LISTERS = 3
LISTINGS_EACH = 12
REFRESHES = 12
CLAUDE_SESSIONS = 6
CODEX_SESSIONS = 6


def locked_inodes(pid: int) -> set[int]:
    """The inodes on which process `pid` holds a POSIX lock, from /proc/locks."""
    inodes = set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields:   # a request waiting for a lock, not a lock held
            continue
        if fields[1] == "POSIX" and fields[4] == str(pid):
            inodes.add(int(fields[5].rsplit(":", 1)[1]))
    return inodes


def assert_holds_its_locks(catalog: Catalog) -> None:
    """This process holds a lock on the database (a reader's) and on its shared memory (the one that
    says it is in use): with either dropped, another process resets what this one has mapped."""
    held = locked_inodes(os.getpid())
    for suffix in ("", "-shm"):
        path = Path(f"{catalog.db_path}{suffix}")
        assert path.stat().st_ino in held, f"no lock held on {path.name}: {Path('/proc/locks').read_text()}"


def test_a_catalog_connection_keeps_its_locks_however_this_process_opens_the_catalog(tmp_path):
    store = Store(tmp_path / "state")
    put(store, "a" * 32, 2)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    first = Catalog([FractalListing(store)], cache)
    first.refresh(None)
    assert_holds_its_locks(first)
    for suffix in ("", "-wal", "-shm"):   # as an older Reprise left them: the opener narrows them
        os.chmod(f"{first.db_path}{suffix}", 0o644)
    second = Catalog([FractalListing(store)], cache)   # a second catalog of the same roots, same process
    assert len(second.refresh(None)) == 1
    assert_holds_its_locks(first)
    second.close()
    assert_holds_its_locks(first)
    first.close()
    reopened = Catalog([FractalListing(store)], cache)   # alone again: the modes are narrowed now
    assert len(reopened.refresh(None)) == 1
    assert_holds_its_locks(reopened)
    for suffix in ("", "-wal", "-shm"):
        assert os.stat(f"{reopened.db_path}{suffix}").st_mode & 0o077 == 0, suffix
    reopened.close()


# --- racing processes ----------------------------------------------------------------------------

def slug(folder: Path) -> str:
    return "".join(c if c.isalnum() else "-" for c in str(folder))


class Agents:
    """Claude Code and Codex sessions in one folder, each appended to one whole turn at a time."""

    def __init__(self, base: Path, work: Path):
        self.claude_root, self.codex_root = base / "claude", base / "codex"
        self.sessions: dict[str, tuple[ClaudeFile | CodexRollout, Path]] = {}
        for number in range(CLAUDE_SESSIONS):
            claude = ClaudeFile(f"5e551011-0000-4000-8000-{number:012d}", cwd=str(work), seed=number)
            claude.turn(f"prompt {number}", "reply")
            self.sessions[claude.session_id] = claude, claude.write(
                self.claude_root / "projects" / slug(work) / f"{claude.session_id}.jsonl")
        for number in range(CODEX_SESSIONS):
            codex = CodexRollout(cwd=str(work), seed=100 + number)
            codex.turn(f"prompt {number}", "reply")
            self.sessions[codex.session_id] = codex, codex.write(self.codex_root)
        self.turns = dict.fromkeys(self.sessions, 1)
        self._lock = threading.Lock()

    def append(self, number: int) -> None:
        """One more turn on one session, written as an agent writes it: appended in one write."""
        with self._lock:
            session_id = list(self.sessions)[number % len(self.sessions)]
            session, path = self.sessions[session_id]
            before = len(session.data())
            session.turn(f"prompt {number}", f"reply {number}")
            with path.open("ab") as file:
                file.write(session.data()[before:])
            self.turns[session_id] += 1


REFRESHER = textwrap.dedent("""
    import json, sys
    from reprise.core.service import Service
    service = Service.from_environment(state_dir=sys.argv[1], parallel_scan=True)
    seen = []
    for _ in range(int(sys.argv[2])):
        listing = service.list_sessions(all_workspaces=True)
        service.load_details(listing.rows)
        service.search("reply")
        seen.append({row.file_id: row.turns for row in listing.rows if row.problem_code is None})
    print(json.dumps(seen))
""")


def test_racing_listers_a_refreshing_tui_and_appending_agents_never_crash_or_list_a_wrong_row(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "config.toml").write_text("")
    agents = Agents(tmp_path, work)
    first_turns = dict(agents.turns)
    env = environment(tmp_path, tmp_path / "cache")
    env.update(CLAUDE_CONFIG_DIR=str(agents.claude_root), CODEX_HOME=str(agents.codex_root))
    state = str(tmp_path / "state")
    refresher = subprocess.Popen([sys.executable, "-c", REFRESHER, state, str(REFRESHES)], env=env, cwd=work,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    failures: list[str] = []
    listings: list[dict[str, int]] = []

    def lister(number: int) -> None:
        for index in range(LISTINGS_EACH):
            try:
                result = subprocess.run([str(REPRISE), "list", "--all", "--json", "--state-dir", state], env=env,
                                        cwd=work, capture_output=True, timeout=COMMAND_TIMEOUT_S,
                                        stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                failures.append(f"lister {number}: a listing did not finish within {COMMAND_TIMEOUT_S} s")
                return
            if result.returncode != 0 or result.stderr:
                failures.append(f"lister {number}, listing {index}: exit {result.returncode}, "
                                f"{result.stderr.decode(errors='replace')[-2000:]}")
            else:
                sessions = json.loads(result.stdout)["sessions"]
                listings.append({row["session_id"]: row["turns"] for row in sessions if row["problem"] is None})
            agents.append(number * LISTINGS_EACH + index)

    threads = [threading.Thread(target=lister, args=(number,)) for number in range(LISTERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        out, err = refresher.communicate(timeout=COMMAND_TIMEOUT_S * 2)
    finally:
        refresher.kill()
    assert not failures, "\n".join(failures)
    assert refresher.returncode == 0, f"the refreshing process ended with {refresher.returncode}: {err.decode()}"
    assert len(listings) == LISTERS * LISTINGS_EACH
    for seen in [*listings, *json.loads(out)]:
        assert set(seen) == set(agents.sessions), seen   # every session, none a problem row
        for session_id, turns in seen.items():
            assert first_turns[session_id] <= turns <= agents.turns[session_id], (session_id, turns)
    [db_path] = (tmp_path / "cache").glob("catalog-*.sqlite")
    db = sqlite3.connect(db_path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        db.close()
    final = subprocess.run([str(REPRISE), "list", "--all", "--json", "--state-dir", state], env=env, cwd=work,
                           capture_output=True, timeout=COMMAND_TIMEOUT_S)
    assert {row["session_id"]: row["turns"] for row in json.loads(final.stdout)["sessions"]} == agents.turns
