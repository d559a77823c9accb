"""A new user's pass over Gemini CLI sessions on the command line (the real client's store): what
each command says names Gemini CLI and its files, never another agent."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parents[2] / "fixtures" / "gemini" / "store-0.61.0" / "home" / ".gemini"
SOLO = "0b721226-5368-4866-8a0c-9350b728f142"


@pytest.fixture
def gemini_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the real client's store, GEMINI_CLI_HOME pointed at it."""
    shutil.copytree(FIXTURE, tmp_path / "home" / ".gemini")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / ".gemini"


def test_keep_of_a_gemini_session_names_gemini_cli_s_clean_up(gemini_home: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from reprise.tui import cli

    assert cli.main(["keep", SOLO[:8]]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"Kept {SOLO}: ") and "Gemini CLI's clean-up cannot reach it." in said
    assert "Claude Code" not in said


THREE = "e9b105e8-2eb0-4bfb-b1f9-a0e942bfdde1"   # its first file and a stub a resume left later


def test_a_kept_session_whose_stub_is_newer_reads_as_kept_in_its_detail_as_in_its_row(gemini_home: Path) -> None:
    """The row compares the kept copy with the newest mtime of the session's files, the detail did with
    the first file's alone: with the stub written later, the detail said the session was due and only
    "an older copy is kept", while the list said it was kept."""
    import os

    from reprise.core.service import Service

    chats = gemini_home / "tmp" / "alpha" / "chats"
    first, stub = chats / "session-2026-12-06T19-46-e9b105e8.jsonl", chats / "session-2026-12-06T19-48-e9b105e8.jsonl"
    os.utime(first, ns=(1_800_000_000_000_000_000, 1_800_000_000_000_000_000))
    os.utime(stub, ns=(1_800_000_060_000_000_000, 1_800_000_060_000_000_000))   # a minute later
    service = Service.from_environment(workspace=str(gemini_home.parent))
    ref = service.resolve(THREE)
    before = service.show(ref)
    assert before.deletion is not None and "holds no conversation" in before.deletion
    service.keep(ref)
    row = next(row for row in service.list_sessions(all_workspaces=True).rows if row.id == THREE)
    assert row.kept and row.agent_deletion is None
    after = service.show(ref)
    assert after.deletion == "Reprise keeps a copy of this session as it is, out of reach of Gemini CLI's clean-up."
    assert not after.deletion_soon


def test_a_file_listed_as_unreadable_moves_to_the_trash_and_back_by_its_name(gemini_home: Path) -> None:
    """A file whose header names no session (a sessionId of the wrong type) is a row whose id is its
    name: `doctor` says `reprise rm <name>`, and that moved it to the trash (it said the name is not a
    session id); restored, its bytes are the same, and its neighbours were never touched."""
    import hashlib
    import json

    from reprise.core.errors import RepriseError
    from reprise.core.service import Service

    chats = gemini_home / "tmp" / "alpha" / "chats"
    lines = (chats / "session-2026-12-06T19-48-0b721226.jsonl").read_text().splitlines()
    header = {**json.loads(lines[0]), "sessionId": 12345}
    name = "session-2026-12-06T19-50-deadbeef.jsonl"
    (chats / name).write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    digests = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in chats.iterdir()}
    service = Service.from_environment(workspace=str(gemini_home.parent))
    row = next(row for row in service.list_sessions(all_workspaces=True).rows if row.id == name)
    assert row.problem_code == "no_session"
    ref = service.resolve(name)
    service.remove(ref)
    assert not (chats / name).exists() and len(list(chats.iterdir())) == len(digests) - 1
    assert [entry.ref.session_id for entry in service.trash_entries(all_workspaces=True)] == [name]
    service.trash_restore(service.resolve_trashed(name))
    assert {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in chats.iterdir()} == digests
    for refused in (lambda: service.keep(ref), lambda: service.resume_plan(ref, for_exec=False)):
        with pytest.raises(RepriseError, match="not a Gemini CLI session id"):
            refused()   # only the trash takes a file's name: it names no session the client resumes
