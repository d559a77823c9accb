"""Right answers on odd stores of Claude Code and Codex: a project folder the user cannot enter costs
only its own sessions, the audit log they share is read once, a file rewritten in place at the same
size is read again, and a warm listing finds the kept copies without opening every archive index.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from reprise.core.archive import Archive
from reprise.core.paths import OwnPaths, SessionRef, workspace_key
from reprise.core.rows import SessionRow
from reprise.core.service import Service
from reprise.core.sources.claude.listing import ClaudeListing
from reprise.core.sources.codex.listing import CodexListing
from reprise.core.sources.grown import EDGE, GrownRead
from reprise.tui import cli

from ..core.claude.builder import ClaudeFile
from ..core.codex.builder import CodexRollout
from .test_hostile import AS_ROOT, COMMAND_TIMEOUT_S, NOBODY, REPRISE, environment, permissive_base


def slug(folder: Path) -> str:
    return "".join(c if c.isalnum() else "-" for c in str(folder))


def claude_session(claude_root: Path, work: Path, number: int, *, project: str | None = None) -> ClaudeFile:
    session = ClaudeFile(f"5e551011-0000-4000-8000-{number:012d}", cwd=str(work), seed=number)
    session.turn(f"prompt {number}", f"reply {number}")
    session.write(claude_root / "projects" / (project or slug(work)) / f"{session.session_id}.jsonl")
    return session


# --- a project folder the user cannot enter ---------------------------------------------------------

def chown_tree_to_nobody(base: Path) -> None:
    if AS_ROOT:
        for folder, _, names in os.walk(base):
            os.chown(folder, 65534, 65534)
            for name in names:
                os.chown(Path(folder) / name, 65534, 65534)


@pytest.fixture
def shut_project():
    """A Claude Code root whose first project folder (by name) belongs to another user and cannot be
    entered, and a session in a project folder sorted after it; every command runs unprivileged."""
    base = permissive_base("reprise-shut-project-")
    try:
        work = base / "work"
        work.mkdir()
        (base / "home").mkdir()
        (base / "config.toml").write_text("")
        claude_root = base / "claude"
        later = claude_session(claude_root, work, 1, project=f"-zz{slug(work)}")
        claude_session(claude_root, work, 2, project="-aa-other-user")
        chown_tree_to_nobody(base)
        shut = claude_root / "projects" / "-aa-other-user"
        if AS_ROOT:
            os.chown(shut, 0, 0)
        shut.chmod(0o700 if AS_ROOT else 0o000)
        env = environment(base, base / "cache")
        env.update(CLAUDE_CONFIG_DIR=str(claude_root), CODEX_HOME=str(base / "codex"),
                   REPRISE_DATA_DIR=str(base / "data"))
        yield base, work, later.session_id, shut, env
    finally:
        (base / "claude" / "projects" / "-aa-other-user").chmod(0o700)
        shutil.rmtree(base, ignore_errors=True)


def unprivileged(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*NOBODY, str(REPRISE), *args], env=env, cwd=cwd, capture_output=True,
                          timeout=COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL)


def test_a_project_folder_the_user_cannot_enter_costs_only_its_own_sessions(shut_project):
    base, work, session_id, shut, env = shut_project
    state = ["--state-dir", str(base / "state")]
    listed = unprivileged(["list", "--all", "--json", *state], env, work)
    assert listed.returncode == 0, listed.stderr.decode()
    assert session_id in {row["session_id"] for row in json.loads(listed.stdout)["sessions"]}
    for args in (["show", session_id, "--json"], ["resume", session_id, "--print"], ["keep", session_id],
                 ["rm", session_id, "--force"]):
        result = unprivileged([*args, *state], env, work)
        err = result.stderr.decode()
        assert result.returncode == 0, f"{args}: exit {result.returncode}: {err}"
        assert "Permission denied" not in err and "Traceback" not in err, (args, err)
    assert not (work.parent / "claude" / "projects" / f"-zz{slug(work)}" / f"{session_id}.jsonl").exists()


# --- the audit log Claude Code's and Codex's sources share -------------------------------------------

def test_audit_shows_each_claude_and_codex_operation_once(tmp_path, isolated_paths, capsys, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    claude = claude_session(Path(os.environ["CLAUDE_CONFIG_DIR"]), work, 1)
    codex = CodexRollout(cwd=str(work), seed=7)
    codex.turn("hello", "hi")
    codex.write(Path(os.environ["CODEX_HOME"]))
    service = Service.from_environment(workspace=str(work))
    for session_id in (claude.session_id, codex.session_id):
        service.remove(service.resolve(session_id))
    service.catalog.close()
    assert cli.main(["audit", "--json"]) == 0
    removed = [record["session_id"] for record in json.loads(capsys.readouterr().out)["audit"]
               if record["op"] == "rm"]
    assert sorted(removed) == sorted([claude.session_id, codex.session_id])


# --- a file rewritten in place at the same size ------------------------------------------------------

HOUR_S = 3600


def middle_line(data: bytes) -> int:
    """The offset of a line that lies past the file's first 4 KB and before its last 4 KB: the edges
    the check of a grown file compares."""
    offset = 0
    for line in data.split(b"\n"):
        if offset > 2 * EDGE and offset + len(line) < len(data) - 2 * EDGE:
            return offset
        offset += len(line) + 1
    raise AssertionError("the file is too small to have a middle line")


def agent_files(work: Path) -> dict[str, Path]:
    """One Claude Code session and one Codex rollout of several turns each (well over 8 KB)."""
    claude = ClaudeFile("5e551011-0000-4000-8000-00000000000a", cwd=str(work))
    codex = CodexRollout(cwd=str(work), seed=3)
    for number in range(6):
        claude.turn(f"prompt {number}", f"reply {number} " + "words " * 300)
        codex.turn(f"prompt {number}", f"reply {number} " + "words " * 300)
    return {"claude": claude.write(Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / slug(work)
                                   / f"{claude.session_id}.jsonl"),
            "codex": codex.write(Path(os.environ["CODEX_HOME"]))}


def rewrite_in_place(path: Path, offset: int, data: bytes) -> None:
    """What an editor or a sync tool does: the same file (inode), new bytes, the same size."""
    before = path.stat()
    with path.open("r+b") as file:
        file.seek(offset)
        file.write(data)
    assert path.stat().st_size == before.st_size and path.stat().st_ino == before.st_ino


@pytest.mark.parametrize("source", ["claude", "codex"])
def test_a_session_rewritten_in_place_at_the_same_size_is_listed_as_it_is_now(source, tmp_path, isolated_paths):
    work = tmp_path / "work"
    work.mkdir()
    path = agent_files(work)[source]
    old = time.time() - HOUR_S   # settled: the catalog trusts its stat
    os.utime(path, (old, old))
    service = Service.from_environment(workspace=str(work))

    def listed() -> SessionRow:
        [row] = service.list_sessions(sources=[source]).rows
        service.load_details([row])
        return row

    row = listed()
    assert row.problem_code is None and not row.fields.warning
    rewrite_in_place(path, middle_line(path.read_bytes()), b"#")   # one line no longer JSON
    os.utime(path, (old + 1, old + 1))   # a new mtime, as a sync tool sets it
    row = listed()
    assert row.fields.warning and "line" in row.fields.warning, row.fields.warning
    assert any("line" in warning.message for warning in service.show(row.ref).warnings)


@pytest.mark.parametrize("source", ["claude", "codex"])
def test_a_same_size_rewrite_that_keeps_the_mtime_is_read_whole_by_its_ctime(source, tmp_path, isolated_paths):
    work = tmp_path / "work"
    work.mkdir()
    path = agent_files(work)[source]
    root = Path(os.environ["CLAUDE_CONFIG_DIR" if source == "claude" else "CODEX_HOME"])

    listing = (ClaudeListing if source == "claude" else CodexListing)([root], OwnPaths(tmp_path / "data", source))

    def read(previous: bytes | None) -> GrownRead:
        return listing.read_file(path, root, previous)

    first = read(None)
    assert not first.warnings
    info = path.stat()
    rewrite_in_place(path, middle_line(path.read_bytes()), b"#")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))   # the mtime set back: only the ctime says it changed
    again = read(first.carry.to_bytes())
    assert again.read_bytes == info.st_size and any("line" in warning for warning in again.warnings)
    unchanged = read(again.carry.to_bytes())
    assert unchanged.read_bytes == 0 and unchanged.warnings == again.warnings   # nothing new: nothing read


# --- the kept copies, found without opening every archive index --------------------------------------

@pytest.fixture
def archive_reads(monkeypatch):
    """The sessions whose archive index is read, in order."""
    read: list[SessionRef] = []
    original = Archive.reading

    def counting(self: Archive, ref: SessionRef):
        read.append(ref)
        return original(self, ref)

    monkeypatch.setattr(Archive, "reading", counting)
    return read


def kept_and_deleted(tmp_path: Path, archived: int) -> tuple[Service, SessionRef, OwnPaths]:
    """A kept Claude Code session whose file Claude Code has since deleted, beside `archived` other
    sessions with archive entries (trims, forks) and no kept copy."""
    work = tmp_path / "work"
    work.mkdir()
    session = claude_session(Path(os.environ["CLAUDE_CONFIG_DIR"]), work, 1)
    paths = OwnPaths(Path(os.environ["REPRISE_DATA_DIR"]), "claude")
    archive = Archive(paths)
    for number in range(archived):
        other = SessionRef(workspace_key(work), f"0ddba11e-0000-4000-8000-{number:012d}", "claude")
        archive.put(other, f"cut text {number}".encode(), op="trim")
    service = Service.from_environment(workspace=str(work))
    ref = service.resolve(session.session_id)
    path = Path(service.session_path(ref))
    service.keep(ref)
    path.unlink()   # Claude Code's age sweep
    return service, ref, paths


def listed_kept(service: Service, ref: SessionRef) -> bool:
    return {row.file_id: row.kept for row in service.list_sessions(sources=["claude"]).rows}.get(ref.session_id, False)


def test_a_warm_listing_reads_the_archive_index_of_kept_sessions_only(tmp_path, isolated_paths, archive_reads):
    service, ref, _ = kept_and_deleted(tmp_path, archived=40)
    assert listed_kept(service, ref)
    archive_reads.clear()
    assert listed_kept(service, ref)   # warm: the catalog has every row
    assert archive_reads and set(archive_reads) == {ref}, sorted({read.session_id for read in archive_reads})


def test_kept_copies_made_before_the_kept_index_are_found_by_one_walk(tmp_path, isolated_paths, archive_reads):
    service, ref, paths = kept_and_deleted(tmp_path, archived=5)
    index = paths.kept_index()
    index.write_bytes(b'{"workspace_key": 5}\n')   # an older Reprise's data folder: no index it can trust
    assert listed_kept(service, ref)   # walked: every archive index read once
    assert {read.session_id for read in archive_reads} >= {ref.session_id, "0ddba11e-0000-4000-8000-000000000004"}
    assert json.loads(index.read_bytes().splitlines()[-1]) == {"walked": True}
    archive_reads.clear()
    assert listed_kept(Service.from_environment(workspace=str(tmp_path / "work")), ref)
    assert set(archive_reads) == {ref}
