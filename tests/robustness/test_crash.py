"""Crash safety: a writer process SIGKILLed at every named fault point of the write path and at
random moments, more than 200 times, restarted each time from what it left. After every kill the
session file is exactly a version the writer wrote or was writing, it decodes cleanly, every
trim it shows has its archive, no history turn is lost, no temp file is listed and the lock is free.
Undo must also still work after a trim or a restore killed between its archive entry and its write.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from reprise.core import config, faults
from reprise.core.archive import Archive
from reprise.core.errors import ArchiveError
from reprise.core.paths import SessionRef, is_temp_name, workspace_key
from reprise.core.service import Service
from reprise.core.sources.fractal.codec import decode
from reprise.core.trimming import TrimOptions

from .. import factories

WRITER = Path(__file__).with_name("writer.py")
RACE_CHILD = Path(__file__).with_name("race_child.py")
KILLS_PER_POINT = 20
RANDOM_KILLS = 80
SEED = 20260601
CHILD_TIMEOUT_S = 60
MARKER = re.compile(r"\[reprise: [\d,]+ characters cut; archive ([0-9a-f]{64})\]\Z")
DIGEST_TURN = re.compile(r"\A\[reprise\] Condensed turns? \d+(?:-\d+)? \(archive ([0-9a-f]{64})\)")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Writer:
    """The child's state root, session and log, and what the test knows of the file's versions."""

    root: Path
    workspace: Path
    ref: SessionRef
    log: Path
    env: dict[str, str]
    settled: str  # the file's SHA-256 when the last check passed
    log_offset: int = 0
    archived_history: dict[str, set[str]] = field(default_factory=dict)  # digest -> history turn ids

    def spawn(self, seed: int, extra_env: dict[str, str]) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, str(WRITER), str(self.root), str(self.workspace),
                                 self.ref.session_id, str(self.log), str(seed)],
                                env={**self.env, **extra_env}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)

    def new_lines(self) -> list[str]:
        with open(self.log, "rb") as handle:
            handle.seek(self.log_offset)
            data = handle.read()
        return data.decode("ascii").splitlines()

    def consume_lines(self) -> list[str]:
        lines = self.new_lines()
        self.log_offset = self.log.stat().st_size
        return lines

    def wait_for(self, word: str, process: subprocess.Popen, timeout: float = CHILD_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(line.startswith(word) for line in self.new_lines()):
                return
            if process.poll() is not None:
                raise AssertionError(f"the writer exited ({process.returncode}) before {word}: "
                                     f"{process.stderr.read().decode(errors='replace')[-2000:]}")
            time.sleep(0.005)
        raise AssertionError(f"the writer did not log {word} within {timeout} s")


def allowed_versions(settled: str, lines: list[str]) -> set[str]:
    """The last completed version and the one in flight, from the settled version and the new log lines."""
    done, in_flight = settled, None
    for line in lines:
        word, _, rest = line.partition(" ")
        if word == "BEGIN":
            in_flight = rest
        elif word == "DONE":
            assert rest == in_flight, f"DONE {rest} without its BEGIN"
            done, in_flight = rest, None
        elif word == "FAIL":
            in_flight = None
    return {done} | ({in_flight} if in_flight else set())


def history_ids_of(data: bytes, op: str) -> set[str]:
    """The history turn ids an archive entry holds (a whole file, an evict payload or trim records)."""
    payload = json.loads(data)
    if op == "trim":
        return {record["turn"]["turn_id"] for record in payload["history"]}
    return {entry["turn_id"] for entry in payload.get("history", [])}


def read_entry(archive: Archive, ref: SessionRef, name: str, what: str) -> bytes:
    try:
        return archive.read(ref, name)
    except ArchiveError as exc:
        raise AssertionError(f"after a kill {what}: {exc}") from None


def check_after_kill(writer: Writer, service: Service, lines: list[str], what: str) -> list[str]:
    """Every invariant a kill must leave intact; returns the temp files present (they may stay)."""
    ref, archive = writer.ref, Archive(service.sources["fractal"].store.paths)
    path = service.sources["fractal"].store.paths.session_file(ref)
    data = path.read_bytes()
    current = sha(data)
    allowed = allowed_versions(writer.settled, lines)
    assert current in allowed, (f"after a kill {what}, the session file {current[:12]} is neither the last "
                                f"written version nor the one in flight ({sorted(a[:12] for a in allowed)})")
    decoded = decode(data, path=str(path), expected_id=ref.session_id)
    assert decoded.state is not None and not decoded.warnings, (what, decoded.problem, decoded.warnings)
    state = decoded.state

    entries = archive.entries(ref)
    named = set()
    for turn in state.turns:
        match = DIGEST_TURN.match(turn.user.message)
        if match:
            named.add(match.group(1))
        if turn.agent is not None:
            match = MARKER.search(turn.agent.response)
            if match:
                named.add(match.group(1))
    for records_digest in named:  # the file names these archives in its cap markers and digest turns
        read_entry(archive, ref, records_digest, what)
        trims = [e for e in entries if e.op == "trim" and e.digest == records_digest]
        assert trims, f"after a kill {what}, no trim index entry for the archive {records_digest[:12]} the file names"
        read_entry(archive, ref, trims[-1].info["original_sha256"], what)
    for entry in entries:
        if entry.info.get("result_sha256") != current:
            continue
        read_entry(archive, ref, entry.digest, what)
        if entry.op == "trim":
            read_entry(archive, ref, entry.info["original_sha256"], what)

    for entry in entries:
        if entry.digest not in writer.archived_history:
            writer.archived_history[entry.digest] = history_ids_of(read_entry(archive, ref, entry.digest, what),
                                                                   entry.op)
    archived = set().union(*writer.archived_history.values()) if writer.archived_history else set()
    kept = {entry.turn_id for entry in state.history}
    lost = [turn.turn_id for turn in state.turns
            if not DIGEST_TURN.match(turn.user.message) and turn.turn_id not in kept | archived]
    assert not lost, f"after a kill {what}, history turns are neither in the file nor in the archive: {lost[:3]}"

    listing = service.list_sessions(all_workspaces=True)
    assert [row.file_id for row in listing.rows] == [ref.session_id], (what, [r.file_id for r in listing.rows])
    assert not any(is_temp_name(Path(row.path).name) for row in listing.rows)
    assert listing.rows[0].problem_code is None, (what, listing.rows[0].problem_code)
    with service.sources["fractal"].store.lock(ref, timeout=2.0):
        pass
    writer.settled = current
    return [p.name for p in path.parent.iterdir() if is_temp_name(p.name)]


def summary(kills: Counter, random_phases: Counter, temp_files: int) -> str:
    lines = ["kills per fault point:"]
    lines += [f"  {point:20} {kills[point]:4}" for point in faults.WRITE_PATH_POINTS]
    lines.append(f"  {'random moment':20} {kills['random']:4}  (landed: "
                 + ", ".join(f"{phase} {count}" for phase, count in sorted(random_phases.items())) + ")")
    lines.append(f"  {'total':20} {sum(kills.values()):4}; temp files left behind by the kills: {temp_files}")
    return "\n".join(lines)


def phase_of(lines: list[str]) -> str:
    """Where a random kill landed, from the last log line."""
    for line in reversed(lines):
        word = line.split(" ", 1)[0]
        if word == "BEGIN":
            return "mid-write"
        if word in ("DONE", "FAIL", "ERR", "OP", "READY"):
            return "between writes"
    return "before any write"


@pytest.mark.slow
def test_sigkill_at_every_fault_point_and_at_random_moments_never_tears_a_session_or_loses_its_archive(tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    config_file = tmp_path / "writer.toml"
    config_file.write_text("[history]\nmax_turns = 3\n[agent]\ntimeout = 0.001\n")
    env = {**os.environ, "REPRISE_CONFIG": str(config_file), "REPRISE_CACHE_DIR": str(tmp_path / "writer-cache")}
    env.pop(faults.ENV, None)
    service = Service(config.load(state_dir=str(tmp_path / "state"), config_path=config_file),
                      workspace=workspace, cache=tmp_path / "test-cache")
    ref = service.new_session("crash target")
    assert ref.workspace_key == workspace_key(workspace)
    writer = Writer(service.sources["fractal"].store.root, workspace, ref, tmp_path / "writer.log", env,
                    sha(service.sources["fractal"].store.paths.session_file(ref).read_bytes()))
    writer.log.touch()

    rng = random.Random(SEED)
    schedule = [point for point in faults.WRITE_PATH_POINTS for _ in range(KILLS_PER_POINT)] + ["random"] * RANDOM_KILLS
    rng.shuffle(schedule)
    kills, random_phases = Counter(), Counter()
    temp_files = 0
    for cycle, target in enumerate(schedule):
        seed = rng.randrange(1 << 30)
        if target == "random":
            process = writer.spawn(seed, {})
            writer.wait_for("READY", process)
            time.sleep(rng.uniform(0, 0.3))
            process.send_signal(signal.SIGKILL)
            process.wait(CHILD_TIMEOUT_S)
            assert process.returncode == -signal.SIGKILL, (  # not an exit of its own (an uncaught error)
                f"cycle {cycle}: the writer exited {process.returncode} before the random kill: "
                f"{process.stderr.read().decode(errors='replace')[-2000:]}")
            lines = writer.consume_lines()
            random_phases[phase_of(lines)] += 1
            what = f"at a random moment (cycle {cycle})"
        else:
            kill_at = rng.randint(1, 12)
            process = writer.spawn(seed, {faults.ENV: f"{target}=kill", "WRITER_KILL_AT": str(kill_at)})
            try:
                process.wait(CHILD_TIMEOUT_S)
            except subprocess.TimeoutExpired as timeout:
                process.kill()
                raise AssertionError(f"the writer never reached {target} #{kill_at}\n"
                                     + summary(kills, random_phases, temp_files)) from timeout
            lines = writer.consume_lines()
            stderr = process.stderr.read().decode(errors="replace")
            assert process.returncode == -signal.SIGKILL and lines and lines[-1] == f"KILL {target} {kill_at}", (
                f"cycle {cycle}: expected a kill at {target} #{kill_at}, got exit {process.returncode}, "
                f"last log line {lines[-1:]} {stderr[-2000:]}\n" + summary(kills, random_phases, temp_files))
            what = f"at {target} #{kill_at} (cycle {cycle})"
        process.stderr.close()
        kills[target] += 1
        try:
            temps = check_after_kill(writer, service, lines, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{summary(kills, random_phases, temp_files)}") from None
        temp_files = len(temps)

    report = summary(kills, random_phases, temp_files)
    print("\n" + report)
    assert sum(kills.values()) >= 200, report
    assert all(kills[point] == KILLS_PER_POINT for point in faults.WRITE_PATH_POINTS), report
    assert temp_files, "no kill left a temp file behind, so the listing check proved nothing\n" + report
    ops = Counter(entry.op for entry in service.archive_entries(ref))
    assert ops["trim"] >= 20 and ops["restore"] >= 10 and ops["evict"] >= 50, (ops, report)


@pytest.fixture
def trimmed_session(tmp_path):
    """(service, ref, original bytes, bytes after one applied trim) of a 4-turn session."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    service = Service(config.load(state_dir=str(tmp_path / "state")), workspace=workspace, cache=tmp_path / "cache")
    ref = SessionRef(service.workspace_key, "e" * 32, "fractal")
    path = service.sources["fractal"].store.paths.session_file(ref)
    path.parent.mkdir(parents=True)
    path.write_bytes(factories.session_bytes(ref.session_id, turns=4, statuses=("succeeded",), response_chars=300))
    original = path.read_bytes()
    service.trim(ref, TrimOptions(keep_history=1))
    return service, ref, original, path.read_bytes()


def kill_child_at(service: Service, ref: SessionRef, op: str, point: str, nth: int) -> None:
    env = {**os.environ, faults.ENV: f"{point}=kill", "WRITER_KILL_AT": str(nth),
           "REPRISE_CACHE_DIR": str(service.catalog.db_path.parent / "child")}
    child = subprocess.run([sys.executable, str(RACE_CHILD), str(service.state_root), str(service.workspace),
                            ref.session_id, op], env=env, capture_output=True, timeout=CHILD_TIMEOUT_S)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]


def test_undo_after_a_trim_killed_before_its_write_still_undoes_the_applied_trim(trimmed_session):
    service, ref, original, trimmed = trimmed_session
    kill_child_at(service, ref, "trim", "after_index_append", 2)  # after the records' index line
    path = service.sources["fractal"].store.paths.session_file(ref)
    assert path.read_bytes() == trimmed, "the killed trim never wrote the file"
    assert [entry.op for entry in service.archive_entries(ref)][-2:] == ["trim-original", "trim"]
    service.restore(ref)
    assert service.sources["fractal"].store.paths.session_file(ref).read_bytes() == original


def test_undo_after_a_restore_killed_before_its_write_still_undoes_the_trim(trimmed_session):
    service, ref, original, trimmed = trimmed_session
    kill_child_at(service, ref, "restore", "after_index_append", 1)  # after the restore entry's index line
    path = service.sources["fractal"].store.paths.session_file(ref)
    assert path.read_bytes() == trimmed, "the killed restore never wrote the file"
    assert service.archive_entries(ref)[-1].op == "restore"
    service.restore(ref)
    assert service.sources["fractal"].store.paths.session_file(ref).read_bytes() == original
