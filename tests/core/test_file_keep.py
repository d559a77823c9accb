"""The keep kit (core/sources/file_keep.py) through a small agent of its own: a session file and the
files of the sidecar folders the agent names are copied into the archive, verified, listed, and
read back once the originals are gone; a misnamed file is refused with the name it should have."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from reprise.core.archive import Archive
from reprise.core.errors import ArchiveError, NotFoundError
from reprise.core.paths import OwnPaths, SessionRef, workspace_key
from reprise.core.sources.file_keep import FileKeep, kept_session, kept_sessions

SESSION_ID = "0d0d0d0d-1111-4222-8333-444444444444"


def _misnamed(path: Path, session_id: str) -> str | None:
    name = f"chat-{session_id}.json"
    return None if path.name == name else name


def _sidecar_folders(session_file: Path, session_id: str) -> list[tuple[str, Path]]:
    return [("tools", session_file.parent / f"{session_id}-tools")]


CHAT = FileKeep("Chat Agent", _misnamed, _sidecar_folders)


@pytest.fixture
def chat(tmp_path: Path) -> tuple[Path, Path, SessionRef]:
    root = tmp_path / "agent"
    tools = root / "chats" / f"{SESSION_ID}-tools"
    (tools / "nested").mkdir(parents=True)
    session = root / "chats" / f"chat-{SESSION_ID}.json"
    session.write_bytes(b'{"messages":["hello"]}\n')
    (tools / "call-1.txt").write_bytes(b"a tool's output\n")
    # Its source name is one of today's: SessionRef accepts no other yet.
    return root, session, SessionRef(workspace_key(tmp_path), SESSION_ID, "codex")


def test_the_session_and_the_files_of_its_sidecar_folders_are_kept_and_read_back_once_gone(chat, tmp_path):
    root, session, ref = chat
    archive = Archive(OwnPaths(tmp_path / "data", "codex"))
    result = CHAT.keep(archive, ref, session, root)
    assert sorted(kept.part for kept in result.added) == ["session", "tools/call-1.txt"]
    assert result.session.digest == hashlib.sha256(b'{"messages":["hello"]}\n').hexdigest()
    assert [(problem.path, problem.severity) for problem in result.problems] == [
        (str(session.parent / f"{SESSION_ID}-tools" / "nested"), "warning")]
    again = CHAT.keep(archive, ref, session, root)
    assert again.added == [] and sorted(kept.part for kept in again.unchanged) == ["session", "tools/call-1.txt"]
    session.unlink()
    (session.parent / f"{SESSION_ID}-tools" / "call-1.txt").unlink()
    assert CHAT.read_kept(archive, ref) == b'{"messages":["hello"]}\n'
    assert CHAT.read_kept(archive, ref, "tools/call-1.txt") == b"a tool's output\n"
    assert CHAT.kept_path(archive, ref).read_bytes() == b'{"messages":["hello"]}\n'
    listed = kept_sessions(archive.paths, store_root=root)
    assert [found.ref for found in listed.sessions] == [ref] and listed.problems == []
    found = kept_session(archive, ref)
    assert found is not None and found.versions == 1 and [kept.part for kept in found.sidecars] == ["tools/call-1.txt"]
    assert kept_sessions(archive.paths, store_root=tmp_path / "another-root").sessions == []


def test_a_file_not_named_as_the_session_is_refused_with_the_name_it_should_have(chat, tmp_path):
    root, session, ref = chat
    archive = Archive(OwnPaths(tmp_path / "data", "codex"))
    other = session.with_name("notes.json")
    other.write_bytes(b"{}\n")
    with pytest.raises(ArchiveError) as raised:
        CHAT.keep(archive, ref, other, root)
    assert raised.value.message == (f"{other} is not the file of Chat Agent session {SESSION_ID} "
                                    f"(chat-{SESSION_ID}.json); nothing was kept.")
    with pytest.raises(NotFoundError, match=f"kept no copy of it for Chat Agent session {SESSION_ID}"):
        CHAT.read_kept(archive, ref)


def _stubs(session_file: Path, session_id: str) -> list[Path]:
    return sorted(session_file.parent.glob(f"chat-{session_id}.stub-*.json"))


STUBBED = FileKeep("Chat Agent", _misnamed, _sidecar_folders, _stubs)


def test_a_session_kept_in_several_files_is_kept_whole_and_read_back_once_gone(chat, tmp_path):
    """An agent that keeps one session in several files (a stub a resume left): each is kept as a
    part of its own, added once, and read back after the agent deleted them all."""
    root, session, ref = chat
    stub = session.with_name(f"chat-{SESSION_ID}.stub-1.json")
    stub.write_bytes(b'{"header":true}\n')
    archive = Archive(OwnPaths(tmp_path / "data", "codex"))
    result = STUBBED.keep(archive, ref, session, root)
    part = f"companions/{stub.name}"
    assert sorted(kept.part for kept in result.added) == [part, "session", "tools/call-1.txt"]
    assert STUBBED.keep(archive, ref, session, root).added == []
    stub.unlink()
    session.unlink()
    assert STUBBED.read_kept(archive, ref, part) == b'{"header":true}\n'
    assert STUBBED.read_kept(archive, ref) == b'{"messages":["hello"]}\n'
    assert CHAT.companions(session, SESSION_ID) == ()   # by default a session is one file
