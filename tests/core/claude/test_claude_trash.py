"""Reprise's trash for Claude Code sessions: `rm` moves the file and its sidecar folder into the
trash in Reprise's data folder (copy, fsync, verify, then unlink), `trash restore` gives back the
same bytes where they were, `purge` deletes only when confirmed, a live session is refused, and
`prune` works per source, offering the sessions Claude Code deletes soon to keep instead."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprise.core import contract
from reprise.core.errors import ConflictError, RepriseError, UsageError
from reprise.core.paths import OwnPaths, SessionRef
from reprise.core.retention import PruneCandidate, PruneOptions, PruneSelection
from reprise.core.service import Service
from tests.core.claude.builder import snapshot
from tests.core.claude.test_claude_source import FIXTURE, RECORDED, copy_store
from tests.factories import GATE_TIMEOUT_S, wait_for_file

SUBAGENT = "44444444-4444-4444-8444-444444444444"   # has a <uuid>/subagents/ sidecar folder
THREE_TURNS = "33333333-3333-4333-8333-333333333333"
BASH = "55555555-5555-4555-8555-555555555555"


@pytest.fixture
def store(tmp_path):
    claude_root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    folders = copy_store(claude_root, tmp_path / "work")
    alpha_slug = FIXTURE / "-tmp-reprise-claude-fixture-work-alpha"
    target = claude_root / "projects" / "".join(c if c.isalnum() else "-" for c in str(folders["alpha"]))
    shutil.copytree(alpha_slug / SUBAGENT, target / SUBAGENT)
    for file in (target / SUBAGENT).rglob("*"):
        if file.is_file():
            file.write_bytes(file.read_bytes().replace(f"{RECORDED}/alpha".encode(), str(folders["alpha"]).encode()))
    return claude_root, folders


def opened(folder: Path, session_id: str) -> tuple[Service, SessionRef, Path]:
    """A service in `folder`, the session's ref and its file."""
    service = Service.from_environment(workspace=str(folder))
    ref = service.resolve(session_id)
    return service, ref, Path(service.session_path(ref))


def listed(service: Service) -> set[str]:
    return {row.file_id for row in service.list_sessions(sources=["claude"]).rows}


def test_rm_moves_file_and_sidecars_to_the_trash_and_restore_gives_back_the_same_bytes(store):
    _, folders = store
    service, ref, path = opened(folders["alpha"], SUBAGENT)
    service.rename(ref, "Subagent run")
    before = snapshot(path)
    assert any("subagents/" in name for name in before)

    entry = service.remove(ref)
    assert entry.origin == str(path) and entry.title == "Subagent run"
    assert not path.exists() and not path.with_suffix("").exists()
    assert SUBAGENT not in listed(service)
    trash = OwnPaths(Path(os.environ["REPRISE_DATA_DIR"]), "claude").trash_dir(ref.workspace_key)
    assert (trash / f"{SUBAGENT}.jsonl").read_bytes() and (trash / SUBAGENT / "subagents").is_dir()
    entries = service.trash_entries()
    assert [(e.ref.session_id, e.ref.source) for e in entries] == [(SUBAGENT, "claude")]
    document = contract.dump(contract.trash_list(entries))["trash"][0]
    assert document["session_id"] == SUBAGENT
    assert service.resolve_trashed(SUBAGENT[:8]) == ref
    ops = [record.op for record in service.audit_records()]
    assert "rm" in ops

    restored = service.trash_restore(service.resolve_trashed(SUBAGENT))
    assert restored.ref == ref
    assert snapshot(path) == before
    assert SUBAGENT in listed(service)
    assert service.trash_entries() == []
    assert service.source(ref).read_meta(ref).title == "Subagent run"
    assert [p for p in trash.rglob("*") if not p.is_dir()] == []   # nothing of it left in the trash
    assert "trash-restore" in [record.op for record in service.audit_records()]


def test_restore_refuses_when_something_is_where_the_session_was(store):
    _, folders = store
    service, ref, path = opened(folders["alpha"], THREE_TURNS)
    original = path.read_bytes()
    service.remove(ref)
    path.write_bytes(b'{"type":"user"}\n')   # a new file under the same name
    with pytest.raises(ConflictError, match="exists again"):
        service.trash_restore(ref)
    assert path.read_bytes() == b'{"type":"user"}\n'
    assert [e.ref.session_id for e in service.trash_entries()] == [THREE_TURNS]
    path.unlink()
    service.trash_restore(ref)
    assert path.read_bytes() == original


def _touch_now(path: Path, session_id: str, cwd: Path) -> None:
    record = {"type": "user", "uuid": "bbbbbbbb-0000-4000-8000-00000000000f", "parentUuid": None,
              "sessionId": session_id, "cwd": str(cwd),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
              "message": {"role": "user", "content": "still going"}}
    with path.open("ab") as handle:
        handle.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")


def test_a_session_claude_code_is_writing_is_refused_unless_forced(store):
    _, folders = store
    service, ref, path = opened(folders["alpha"], BASH)
    _touch_now(path, BASH, folders["alpha"])
    data = path.read_bytes()
    with pytest.raises(ConflictError, match="may be writing"):
        service.remove(ref)
    assert path.read_bytes() == data and service.trash_entries() == []
    service.remove(ref, force=True)
    assert not path.exists() and [e.ref.session_id for e in service.trash_entries()] == [BASH]


def test_a_file_that_changes_while_it_is_copied_stays_where_it_is(store, monkeypatch):
    _, folders = store
    service, ref, path = opened(folders["alpha"], THREE_TURNS)
    from reprise.core import rooted

    real_copy = rooted.Root.copy_in

    def copy_then_append(self, other, source, target):
        digest = real_copy(self, other, source, target)
        with path.open("ab") as handle:   # Claude Code appends right after the copy
            handle.write(b'{"type":"last-prompt","lastPrompt":"late"}\n')
        return digest

    monkeypatch.setattr(rooted.Root, "copy_in", copy_then_append)
    with pytest.raises(RepriseError, match="changed while Reprise moved it"):
        service.remove(ref)
    monkeypatch.setattr(rooted.Root, "copy_in", real_copy)
    assert path.read_bytes().endswith(b'"late"}\n')
    assert service.trash_entries() == []
    trash = OwnPaths(Path(os.environ["REPRISE_DATA_DIR"]), "claude").trash_dir(ref.workspace_key)
    assert not (trash / f"{THREE_TURNS}.jsonl").exists() and not (trash / "records" / f"{THREE_TURNS}.json").exists()


def test_the_move_crosses_filesystems_by_a_verified_copy(store, tmp_path, monkeypatch):
    _, folders = store
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        pytest.skip("no writable /dev/shm here")
    data = Path(tempfile_dir := os.path.join(shm, f"reprise-trash-{os.getpid()}-{time.time_ns()}"))
    try:
        monkeypatch.setenv("REPRISE_DATA_DIR", str(data))
        data.mkdir()
        claude_file_dev = Path(os.environ["CLAUDE_CONFIG_DIR"]).stat().st_dev
        assert data.stat().st_dev != claude_file_dev, "the test needs the data folder on another filesystem"
        service = Service.from_environment(workspace=str(folders["alpha"]))
        ref = service.resolve(SUBAGENT)
        path = Path(service.session_path(ref))
        before = snapshot(path)
        service.remove(ref)
        assert not path.exists() and not path.with_suffix("").exists()
        assert [e.ref.session_id for e in service.trash_entries()] == [SUBAGENT]
        service.trash_restore(ref)
        assert snapshot(path) == before
    finally:
        shutil.rmtree(tempfile_dir, ignore_errors=True)


def test_purge_deletes_only_when_confirmed(store):
    _, folders = store
    service = Service.from_environment(workspace=str(folders["alpha"]))
    ref = service.resolve(SUBAGENT)
    service.remove(ref)
    with pytest.raises(UsageError, match="for good"):
        service.purge(confirmed=False)
    assert [e.ref.session_id for e in service.trash_entries()] == [SUBAGENT]
    kept = service.purge(older_than=3600, confirmed=True)
    assert [e.ref.session_id for e in kept.kept] == [SUBAGENT] and kept.purged == []
    result = service.purge(confirmed=True)
    assert [e.ref.session_id for e in result.purged] == [SUBAGENT]
    assert service.trash_entries() == []
    trash = OwnPaths(Path(os.environ["REPRISE_DATA_DIR"]), "claude").trash_dir(ref.workspace_key)
    assert not [p for p in trash.rglob("*") if p.is_file()]
    assert "purge" in [record.op for record in service.audit_records()]
    with pytest.raises(RepriseError):
        service.trash_restore(ref)


def test_a_kept_session_trashed_leaves_the_list_and_comes_back(store):
    _, folders = store
    service = Service.from_environment(workspace=str(folders["alpha"]))
    ref = service.resolve(THREE_TURNS)
    service.keep(ref)
    service.remove(ref)
    assert THREE_TURNS not in listed(service)   # not listed from the kept copy while it is in the trash
    service.trash_restore(ref)
    assert THREE_TURNS in listed(service)


def _age(path: Path, days: float) -> None:
    moment = time.time() - days * 86400
    os.utime(path, (moment, moment))


def test_prune_moves_claude_sessions_per_source_and_offers_those_claude_code_deletes_soon(store):
    _, folders = store
    service = Service.from_environment(workspace=str(folders["alpha"]))
    old = Path(service.session_path(service.resolve(THREE_TURNS)))
    soon = Path(service.session_path(service.resolve(BASH)))
    _age(soon, 27.5)   # Claude Code deletes it within the week; its turns are newer than the criterion
    options = PruneOptions(older_than=3650 * 86400.0, empty=True)
    # the fixture's sessions all have turns: nothing is selected by --empty, and no turn is ten years old
    preview = service.prune(options)
    assert preview.selection.selected == []
    assert BASH in [c.ref.session_id for c in preview.selection.keep_instead]
    document = contract.dump(contract.prune(preview))
    assert BASH in [c["session_id"] for c in document["keep_instead"]]
    assert "deleted by Claude Code in 2 days" in next(c["reason"] for c in document["keep_instead"]
                                                   if c["session_id"] == BASH)

    rows = {row.file_id: row for row in service.list_sessions(sources=["claude"]).rows}
    newest = max(rows.values(), key=lambda row: row.activity_ts or 0).file_id
    options = PruneOptions(older_than=60.0, keep_last=1)
    preview = service.prune(options)
    chosen = {c.ref.session_id for c in preview.selection.selected}
    assert THREE_TURNS in chosen and newest not in chosen and not preview.applied
    assert old.exists()
    applied = service.prune(options, confirmed=True)
    assert set(ref.session_id for ref in applied.moved) == chosen and applied.failed == []
    assert not old.exists() and {e.ref.session_id for e in service.trash_entries()} == chosen
    assert "prune" in [record.op for record in service.audit_records()]


def test_prune_protects_a_session_claude_code_is_writing(store):
    _, folders = store
    service, ref, path = opened(folders["alpha"], BASH)
    _touch_now(path, BASH, folders["alpha"])
    candidate = PruneCandidate(ref, "newest turn 40d ago", 1, path.stat().st_size, None, False)
    selection = PruneSelection(PruneOptions(older_than=60.0), [candidate])
    result = service.sources["claude"].prune(selection, confirmed=True)
    assert result.moved == [] and result.selection.selected == []
    assert [c.ref for c in result.selection.protected] == [ref]
    assert "Claude Code may be writing it" in result.selection.protected[0].reason
    assert path.exists() and service.trash_entries() == []
    forced = PruneSelection(PruneOptions(older_than=60.0, force=True), [candidate])
    assert service.sources["claude"].prune(forced, confirmed=True).moved == [ref]
    assert not path.exists()


def test_an_rm_killed_before_the_original_goes_loses_nothing_and_the_next_rm_finishes_it(store):
    _, folders = store
    service, ref, path = opened(folders["alpha"], SUBAGENT)
    before = snapshot(path)
    script = ("import sys; from reprise.core.service import Service; "
              "s = Service.from_environment(workspace=sys.argv[1]); s.sources['claude'].remove(s.resolve(sys.argv[2]))")
    child = subprocess.run([sys.executable, "-c", script, str(folders["alpha"]), SUBAGENT], timeout=60, check=False,
                           env={**os.environ, "REPRISE_FAULTS": "claude_trash_before_unlink=kill"})
    assert child.returncode == -9
    assert snapshot(path) == before   # the original is untouched, and its verified copy is in the trash
    assert [e.ref.session_id for e in service.trash_entries()] == [SUBAGENT]
    with pytest.raises(ConflictError, match="exists again"):
        service.trash_restore(ref)
    service.remove(ref)   # the same bytes from the same place: the interrupted rm is finished
    assert not path.exists() and not path.with_suffix("").exists()
    service.trash_restore(ref)
    assert snapshot(path) == before


# --- rm racing Claude Code (issue 24): the original is taken off its path, compared, then unlinked ---------

LATE = b'{"type":"last-prompt","lastPrompt":"written during the rm","sessionId":"x"}\n'
RM_CHILD = ("import json, sys\n"
            "from reprise.core.errors import RepriseError\n"
            "from reprise.core.service import Service\n"
            "s = Service.from_environment(workspace=sys.argv[1])\n"
            "try:\n"
            "    s.sources['claude'].remove(s.resolve(sys.argv[2]), force=True)\n"
            "except RepriseError as exc:\n"
            "    print(json.dumps({'ok': False, 'error': exc.code, 'message': exc.message}))\n"
            "else:\n"
            "    print(json.dumps({'ok': True}))\n")


def _rm_held(folder: Path, session_id: str, point: str, gate: Path) -> subprocess.Popen:
    """An rm in another process (forced: Claude Code holds the file open), held at the fault point
    `point` until `gate` exists."""
    return subprocess.Popen([sys.executable, "-c", RM_CHILD, str(folder), session_id], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "REPRISE_FAULTS": f"{point}=wait:{gate}"})


def _outcome(gate: Path, process: subprocess.Popen) -> dict:
    gate.touch()
    out, err = process.communicate(timeout=GATE_TIMEOUT_S)
    assert process.returncode == 0, err
    return json.loads(out)


def _rm_lines(ref: SessionRef) -> list[dict]:
    log = OwnPaths(Path(os.environ["REPRISE_DATA_DIR"]), "claude").root
    lines = []
    for file in log.rglob("*.jsonl"):
        for line in file.read_text().splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and item.get("op") == "rm" and item.get("session_id") == ref.session_id:
                lines.append(item)
    return lines


@pytest.mark.parametrize("point", ["claude_trash_before_unlink", "claude_trash_set_aside"])
def test_a_record_appended_while_rm_runs_is_never_lost(store, tmp_path, point):
    _, folders = store
    service, ref, path = opened(folders["alpha"], SUBAGENT)
    before = path.read_bytes()
    gate = tmp_path / "gate"
    with path.open("ab") as agent:   # Claude Code holds the file open and appends
        process = _rm_held(folders["alpha"], SUBAGENT, point, gate)
        wait_for_file(Path(f"{gate}.reached"), process)
        agent.write(LATE)
        agent.flush()
        result = _outcome(gate, process)
    assert result["ok"] is False and "changed while Reprise moved it" in result["message"], result
    assert path.read_bytes() == before + LATE   # put back, the append in it
    assert path.with_suffix("").is_dir() and service.trash_entries() == []
    assert not any(p.name.endswith(".reprise-rm") for p in path.parent.iterdir())
    assert _rm_lines(ref) == []   # nothing happened, nothing audited


def _set_aside(store, tmp_path: Path) -> tuple[Service, SessionRef, Path, bytes, Path, subprocess.Popen]:
    """An rm held with the original off its path: (service, ref, path, its bytes, gate, the rm)."""
    _, folders = store
    service, ref, path = opened(folders["alpha"], SUBAGENT)
    before = path.read_bytes()
    gate = tmp_path / "gate"
    process = _rm_held(folders["alpha"], SUBAGENT, "claude_trash_set_aside", gate)
    wait_for_file(Path(f"{gate}.reached"), process)
    return service, ref, path, before, gate, process


def test_a_file_renamed_over_the_path_while_rm_runs_is_kept_with_the_original(store, tmp_path):
    service, ref, path, before, gate, process = _set_aside(store, tmp_path)
    rewritten = path.parent / ".rewrite.tmp"
    rewritten.write_bytes(before + LATE)
    os.rename(rewritten, path)   # an atomic rewrite of the session by another program
    result = _outcome(gate, process)
    hidden = path.parent / f".{path.name}.reprise-rm"
    assert result["ok"] is False and result["error"] == "conflict", result
    assert str(path) in result["message"] and str(hidden) in result["message"]
    assert path.read_bytes() == before + LATE and hidden.read_bytes() == before   # both kept
    assert service.trash_entries() == [] and _rm_lines(ref) == []


def test_a_new_file_at_the_emptied_path_while_rm_runs_is_kept_and_rm_refuses_naming_both(store, tmp_path):
    service, ref, path, before, gate, process = _set_aside(store, tmp_path)
    assert not path.exists()   # the original is off its path
    with path.open("ab") as agent:   # Claude Code appends by path: a new file
        agent.write(LATE)
    result = _outcome(gate, process)
    hidden = path.parent / f".{path.name}.reprise-rm"
    assert result["ok"] is False and result["error"] == "conflict", result
    assert str(path) in result["message"] and str(hidden) in result["message"]
    assert path.read_bytes() == LATE and hidden.read_bytes() == before
    assert path.with_suffix("").is_dir()   # the sidecar folder went back: nothing was at its place
    assert service.trash_entries() == [] and _rm_lines(ref) == []
    # A later rm refuses while the hidden original lies there, naming it.
    with pytest.raises(ConflictError, match="reprise-rm"):
        service.remove(service.resolve(SUBAGENT), force=True)



def test_an_rm_killed_with_the_original_off_its_path_loses_nothing_and_restore_renames_it_back(store):
    _, folders = store
    service, ref, path = opened(folders["alpha"], SUBAGENT)
    before = snapshot(path)
    child = subprocess.run([sys.executable, "-c", RM_CHILD, str(folders["alpha"]), SUBAGENT], timeout=60,
                           check=False, env={**os.environ, "REPRISE_FAULTS": "claude_trash_set_aside=kill"})
    assert child.returncode == -9
    hidden = path.parent / f".{path.name}.reprise-rm"
    assert not path.exists() and hidden.exists()   # off its path, not gone: the trash holds its copy too
    assert [e.ref.session_id for e in service.trash_entries()] == [SUBAGENT]
    inode = hidden.stat().st_ino
    service.trash_restore(ref)
    assert snapshot(path) == before and path.stat().st_ino == inode   # the very file, renamed back
    assert not hidden.exists() and service.trash_entries() == []
