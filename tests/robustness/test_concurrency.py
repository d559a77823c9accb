"""Concurrency: two Reprise processes appending to one session, a Fractal-style in-place writer
racing Reprise at exact moments (held there by the `wait:` fault points), and listings and the
TUI while another program rewrites session files in place."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from reprise.core import config
from reprise.core.archive import Archive
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.sources.fractal.codec import decode
from reprise.core.sources.fractal.store import digest
from reprise.tui.messages import RowsLoaded
from reprise.tui.widgets.session_list import SessionList

from .. import factories
from ..factories import wait_for_file
from ..tui.conftest import build_app, settle

RACE_CHILD = Path(__file__).with_name("race_child.py")
CHILD_TIMEOUT_S = 120
# The rewrite tests run at least REWRITE_MIN_S and until they have seen enough listings and
# rewrites, giving up (and failing) only at REWRITE_DEADLINE_S: no luck with the clock needed.
REWRITE_MIN_S = 3
REWRITE_DEADLINE_S = 90
MIN_LISTINGS = 40
MIN_REWRITES = 2000


def child(root: Path, workspace: Path, session_id: str, *args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(RACE_CHILD), str(root), str(workspace), session_id, *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def outcome(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=CHILD_TIMEOUT_S)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def child_env(tmp_path: Path, config_text: str = "", faults: str | None = None) -> dict[str, str]:
    config_file = tmp_path / "child.toml"
    config_file.write_text(config_text)
    env = {**os.environ, "REPRISE_CONFIG": str(config_file), "REPRISE_CACHE_DIR": str(tmp_path / "child-cache")}
    env.pop("REPRISE_FAULTS", None)
    if faults:
        env["REPRISE_FAULTS"] = faults
    return env


def fractal_append(path: Path, message: str) -> str:
    """What Fractal does to add a turn: read, append, write in place (truncate and write, no lock)."""
    data = json.loads(path.read_bytes())
    turn_id = f"turn-{digest(message.encode())[:32]}"
    now = "2026-05-01T10:00:00.123456+00:00"
    data["summary"]["turns"].append({"turn_id": turn_id, "user": {"message": message}, "agent": {
        "status": "succeeded", "response": "done", "files_read_count": 0, "files_changed_count": 0,
        "commands_run_count": 0, "error": None, "usage": None}})
    data["history"].append({"turn_id": turn_id, "user_message": message, "status": "succeeded", "files_read": [],
                            "files_modified": [], "commands_run": [], "trace": None, "error": None,
                            "created_at": now, "updated_at": now})
    data["history"] = data["history"][-20:]
    with open(path, "w") as handle:
        handle.write(json.dumps(data, indent=2) + "\n")
    return turn_id


@pytest.fixture
def session(tmp_path):
    """(state root, workspace folder, ref) of a Fractal-written 3-turn session with long replies."""
    root, workspace = tmp_path / "state", tmp_path / "project"
    workspace.mkdir()
    ref = SessionRef(workspace_key(workspace), factories.session_id_for("race"), "fractal")
    factories.write_session(root, workspace, factories.session_bytes(ref.session_id, turns=3, response_chars=300,
                                                                     statuses=("succeeded",), seed=5))
    return root, workspace, ref


# --- two Reprise processes ---------------------------------------------------------------------------

@pytest.mark.slow
def test_two_processes_appending_100_turns_each_lose_none_and_archive_every_evicted_history_turn(session, tmp_path):
    root, workspace, _ = session
    ref = SessionRef(workspace_key(workspace), "c" * 32, "fractal")
    factories.write_session(root, workspace, factories.dumps(factories.session_dict(ref.session_id, turns=0)))
    start = tmp_path / "start"
    env = {**child_env(tmp_path, "[history]\nmax_turns = 20\n"), "RACE_START_GATE": str(start)}
    processes = [child(root, workspace, ref.session_id, "append", name, "100", env=env) for name in ("A", "B")]
    for name, process in zip("AB", processes, strict=True):
        wait_for_file(Path(f"{start}.{name}"), process)
    start.touch()
    results = [outcome(process) for process in processes]
    assert all(result["ok"] for result in results), results

    state = decode(Path(root, "workspaces", ref.workspace_key, "sessions", f"{ref.session_id}.json").read_bytes(),
                   path="session", expected_id=ref.session_id).state
    messages = [turn.user.message for turn in state.turns]
    assert sorted(messages) == sorted(f"{name} {n}" for name in "AB" for n in range(100))
    assert all(turn.agent is not None and turn.agent.status == "succeeded" for turn in state.turns)
    for name in "AB":  # each process's turns in its own order
        own = [int(m.split()[1]) for m in messages if m.startswith(name)]
        assert own == sorted(own)
    switches = sum(a[0] != b[0] for a, b in itertools.pairwise(messages))
    print(f"\nthe two writers alternated {switches} times; retries {[r['retries'] for r in results]}")
    ids = [turn.turn_id for turn in state.turns]
    assert [entry.turn_id for entry in state.history] == ids[-20:]

    archive = Archive(Service(config.load(state_dir=str(root)), workspace=workspace).sources["fractal"].own_paths)
    evicts = [entry for entry in archive.entries(ref) if entry.op == "evict"]
    anchors = [anchor for entry in evicts for anchor in entry.anchors]
    assert sorted(anchors) == sorted(ids[:180]), "every evicted history turn is archived exactly once"
    for entry in evicts:
        payload = json.loads(archive.read(ref, entry.digest))
        assert [turn["turn_id"] for turn in payload["history"]] == entry.anchors
        assert all(turn["status"] == "succeeded" for turn in payload["history"]), "only finished turns are evicted"


# --- a Fractal-style writer at exact moments -----------------------------------------------------------

def test_fractal_write_while_a_trim_is_at_before_archive_makes_the_trim_write_nothing(session, tmp_path):
    root, workspace, ref = session
    path = root / "workspaces" / ref.workspace_key / "sessions" / f"{ref.session_id}.json"
    gate = tmp_path / "gate"
    process = child(root, workspace, ref.session_id, "trim",
                    env=child_env(tmp_path, faults=f"before_archive=wait:{gate}"))
    wait_for_file(Path(f"{gate}.reached"), process)  # Reprise has read the file and checked it
    fractal_turn = fractal_append(path, "written by Fractal during the trim")
    fractal_bytes = path.read_bytes()
    gate.touch()
    result = outcome(process)

    assert result == {"ok": False, "error": "changed_on_disk", "message": result.get("message")}
    assert path.read_bytes() == fractal_bytes, "the session file is exactly what Fractal wrote"
    assert fractal_turn in [t["turn_id"] for t in json.loads(fractal_bytes)["summary"]["turns"]]
    # Nothing archived either: the original is copied into the archive from the file itself, and the
    # copy no longer has the digest the trim was planned from (no entry, no temp file).
    archive = Archive(Service(config.load(state_dir=str(root)), workspace=workspace).sources["fractal"].own_paths)
    assert archive.entries(ref) == []
    folder = archive.directory(ref)
    assert not folder.exists() or list(folder.iterdir()) == []
    audit = [json.loads(line) for line in
             (root / "workspaces" / ref.workspace_key / "reprise" / "audit.jsonl").read_text().splitlines()]
    assert audit[-1]["op"] == "trim" and audit[-1]["result"] == "failed: changed_on_disk"
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")], "no temp file left"


def test_fractal_write_while_a_turn_evicts_history_at_before_archive_makes_the_turn_write_nothing(session, tmp_path):
    root, workspace, ref = session
    path = root / "workspaces" / ref.workspace_key / "sessions" / f"{ref.session_id}.json"
    gate = tmp_path / "gate"
    env = child_env(tmp_path, "[history]\nmax_turns = 3\n", faults=f"before_archive=wait:{gate}")
    process = child(root, workspace, ref.session_id, "turn", env=env)
    wait_for_file(Path(f"{gate}.reached"), process)  # under the lock, between Reprise's read and its save
    fractal_turn = fractal_append(path, "written by Fractal during Reprise's turn")
    fractal_bytes = path.read_bytes()
    gate.touch()
    result = outcome(process)

    assert result["ok"] is False and result["error"] == "changed_on_disk", result
    assert path.read_bytes() == fractal_bytes
    assert json.loads(fractal_bytes)["summary"]["turns"][-1]["turn_id"] == fractal_turn
    archive = Archive(Service(config.load(state_dir=str(root)), workspace=workspace).sources["fractal"].own_paths)
    assert [entry.op for entry in archive.entries(ref)] == ["evict"]  # an extra copy of a turn still in the file


def test_fractal_write_at_before_replace_is_the_one_window_reprise_cannot_close(session, tmp_path):
    """Between Store._save_locked's version check and os.replace, Reprise has already decided to
    write: a Fractal save landing in exactly that instant goes to the old inode and is replaced, so
    the last writer (Reprise) wins. Closing it would need Fractal to take the lock. What must still
    hold: the file is one whole version, never a mix, and Reprise's own turn is complete."""
    root, workspace, ref = session
    path = root / "workspaces" / ref.workspace_key / "sessions" / f"{ref.session_id}.json"
    before = json.loads(path.read_bytes())
    gate = tmp_path / "gate"
    env = child_env(tmp_path, faults=f"before_replace=wait:{gate}")
    process = child(root, workspace, ref.session_id, "turn", env=env)
    wait_for_file(Path(f"{gate}.reached"), process)  # the temp file is written and fsynced; the check passed
    fractal_turn = fractal_append(path, "written by Fractal in the unclosable instant")
    gate.touch()
    result = outcome(process)

    assert result["ok"] is True, result
    decoded = decode(path.read_bytes(), path=str(path), expected_id=ref.session_id)
    assert decoded.state is not None and not decoded.warnings
    ids = [turn.turn_id for turn in decoded.state.turns]
    assert ids == [t["turn_id"] for t in before["summary"]["turns"]] + [result["turn_id"]]
    assert decoded.state.turns[-1].agent.status == "succeeded"
    assert fractal_turn not in ids  # the documented lost update: README "Safety"


# --- listing and the TUI while files are rewritten in place -------------------------------------------

class InPlaceRewriter:
    """Rewrites session files in place (truncate, then write, as Fractal saves) as fast as it can."""

    def __init__(self, paths: list[Path], versions: dict[Path, list[bytes]]):
        self.paths = paths
        self.versions = versions
        self.stop = threading.Event()
        self.writes = 0
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def enough(self, listings: int) -> bool:
        """True once the minimum time, listings and rewrites are reached; fails past the deadline."""
        elapsed = time.monotonic() - self.started
        assert elapsed < REWRITE_DEADLINE_S, f"only {listings} listings and {self.writes} rewrites in {elapsed:.0f} s"
        return elapsed >= REWRITE_MIN_S and listings >= MIN_LISTINGS and self.writes >= MIN_REWRITES

    def run(self) -> None:
        while not self.stop.is_set():
            for path in self.paths:
                data = self.versions[path][self.writes % len(self.versions[path])]
                with open(path, "w") as handle:
                    handle.write(data.decode("ascii"))
                self.writes += 1

    def __enter__(self) -> InPlaceRewriter:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10)


@pytest.fixture
def rewritten(tmp_path):
    """A service over a workspace of 3 sessions, each with 4 versions of different sizes."""
    root, workspace = tmp_path / "state", tmp_path / "project"
    workspace.mkdir()
    versions = {}
    for index in range(3):
        session_id = factories.session_id_for(f"rewritten-{index}")
        variants = [factories.session_bytes(session_id, turns=turns, seed=index, response_chars=200 * turns)
                    for turns in (1, 3, 6, 10)]
        path = factories.write_session(root, workspace, variants[0])
        versions[path] = variants
    service = Service(config.load(state_dir=str(root)), workspace=workspace, cache=tmp_path / "cache")
    return service, list(versions), versions


@pytest.mark.slow
def test_listing_never_shows_a_file_rewritten_in_place_as_a_problem(rewritten):
    service, paths, versions = rewritten
    listings = 0
    with InPlaceRewriter(paths, versions) as writer:
        while not writer.enough(listings):
            rows = service.list_sessions().rows
            listings += 1
            assert sorted(row.path for row in rows) == sorted(map(str, paths))
            problems = [(row.file_id[:8], row.problem_code, row.problem_message) for row in rows if row.problem_code]
            assert not problems, f"listing {listings} after {writer.writes} rewrites: {problems}"


@pytest.mark.slow
async def test_tui_following_the_disk_never_shows_a_file_rewritten_in_place_as_a_problem(rewritten):
    service, paths, versions = rewritten
    delivered: list[list] = []

    def hook(message) -> None:
        if isinstance(message, RowsLoaded):
            delivered.append([(row.file_id[:8], row.problem_code) for row in message.rows])

    app = build_app(service, follow_disk=True)
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await settle(pilot)
        with InPlaceRewriter(paths, versions) as writer:
            while not writer.enough(len(delivered)):
                app.screen.load_rows()
                await pilot.press("down" if len(delivered) % 4 else "up")
                await asyncio.sleep(0.1)
        await settle(pilot)
        assert app.is_running
        assert len(app.screen.query_one(SessionList).rows) == 3
        errors = [n.message for n in app._notifications if n.severity == "error"]
    problems = [rows for rows in delivered if any(code for _, code in rows)]
    assert not problems, f"{len(problems)} of {len(delivered)} listings showed problem rows: {problems[:2]}"
    assert not errors, errors
