"""The trash kit of agents whose sessions are files in their own store (core/sources/file_trash.py),
through a small agent of its own: `rm` moves a session file (and its sidecar folder when the agent
names one) into Reprise's trash, `trash restore` gives back the same bytes where they were, only
under a root Reprise reads and at a place the agent's rule accepts, and `purge` deletes for good."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from reprise.core.audit import AuditLog
from reprise.core.errors import ConflictError, UsageError
from reprise.core.own_files import OwnFiles
from reprise.core.paths import OwnPaths, SessionRef, workspace_key
from reprise.core.rooted import Root
from reprise.core.sources.file_trash import AgentFileTrash

SESSION_ID = "0d0d0d0d-1111-4222-8333-444444444444"


class ChatTrash(AgentFileTrash):
    """An agent keeping `chats/<id>.jsonl` and, beside each, a `<id>.d/` sidecar folder. (Its
    source name is one of today's: `SessionRef` accepts no other yet.)"""

    agent = "Chat Agent"
    source = "codex"

    def is_session_id(self, text: str) -> bool:
        return text.count("-") == 4 and len(text) == 36

    def is_session_file(self, path: Path, session_id: str) -> bool:
        return path.name == f"{session_id}.jsonl"

    def is_place(self, target: Path, root: Path, session_id: str) -> bool:
        return self.is_session_file(target, session_id) and target.parent == root / "chats"

    def sidecar_folder(self, session_file: Path, session_id: str) -> Path | None:
        return session_file.parent / f"{session_id}.d"


class PlainTrash(ChatTrash):
    """The same agent without sidecars: the kit's default."""

    def sidecar_folder(self, session_file: Path, session_id: str) -> Path | None:
        return AgentFileTrash.sidecar_folder(self, session_file, session_id)


def _trash(kind: type[ChatTrash], data: Path) -> ChatTrash:
    paths = OwnPaths(data, "codex")
    return kind(paths, AuditLog(paths), OwnFiles(paths, Root(data)).lock)


def _tree(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture
def chat(tmp_path: Path) -> tuple[Path, Path, SessionRef]:
    root = tmp_path / "agent"
    session = root / "chats" / f"{SESSION_ID}.jsonl"
    (root / "chats" / f"{SESSION_ID}.d").mkdir(parents=True)
    session.write_bytes(b'{"type":"user","text":"hello"}\n')
    (root / "chats" / f"{SESSION_ID}.d" / "tool-1.txt").write_bytes(b"a tool's output\n")
    return root, session, SessionRef(workspace_key(tmp_path), SESSION_ID, "codex")


def test_rm_and_restore_move_the_file_and_its_sidecars_and_give_back_the_same_bytes(chat, tmp_path):
    root, session, ref = chat
    trash = _trash(ChatTrash, tmp_path / "data")
    before = _tree(root)
    entry = trash.remove(ref, session, root)
    assert entry.origin == str(session) and entry.size == len(b'{"type":"user","text":"hello"}\n')
    assert _tree(root) == {}   # nothing left in the agent's folder, no hidden original either
    assert [found.ref for found in trash.entries([ref.workspace_key])] == [ref]
    files = trash.files(ref)
    assert files.session.read_bytes() == b'{"type":"user","text":"hello"}\n'
    assert (files.sidecars / "tool-1.txt").read_bytes() == b"a tool's output\n"
    with pytest.raises(ConflictError, match="is not a session file of a Chat Agent root Reprise reads"):
        trash.restore(ref, [tmp_path / "another-root"])
    assert trash.restore(ref, [root]).ref == ref
    assert _tree(root) == before and trash.entries([ref.workspace_key]) == []
    assert sorted(record.op for record in trash.audit.read([ref.workspace_key])) == ["rm", "trash-restore"]


def test_an_agent_without_sidecars_moves_the_file_alone(chat, tmp_path):
    root, session, ref = chat
    trash = _trash(PlainTrash, tmp_path / "data")
    trash.remove(ref, session, root)
    assert not session.exists() and (root / "chats" / f"{SESSION_ID}.d" / "tool-1.txt").exists()
    assert not trash.files(ref).sidecars.exists()
    trash.restore(ref, [root])
    assert session.read_bytes() == b'{"type":"user","text":"hello"}\n'


def test_rm_refuses_a_file_not_named_as_the_session_and_restore_a_place_the_agent_would_not_use(chat, tmp_path):
    root, session, ref = chat
    trash = _trash(ChatTrash, tmp_path / "data")
    other = root / "chats" / "notes.jsonl"
    other.write_bytes(b"{}\n")
    with pytest.raises(UsageError, match="is not the file of Chat Agent session"):
        trash.remove(ref, other, root)
    moved = root / "elsewhere" / session.name
    moved.parent.mkdir()
    session.rename(moved)
    trash.remove(ref, moved, root)
    with pytest.raises(ConflictError, match="it was left in the trash"):
        trash.restore(ref, [root])   # `elsewhere/` is not where this agent keeps a session
    assert trash.files(ref).session.exists()


def test_purge_deletes_for_good_only_when_confirmed(chat, tmp_path):
    root, session, ref = chat
    trash = _trash(ChatTrash, tmp_path / "data")
    trash.remove(ref, session, root)
    with pytest.raises(UsageError):
        trash.purge([ref.workspace_key], confirmed=False)
    assert trash.files(ref).session.exists()
    result = trash.purge([ref.workspace_key], confirmed=True)
    assert [entry.ref for entry in result.purged] == [ref]
    assert not trash.files(ref).session.exists() and not trash.files(ref).sidecars.exists()
    assert trash.entries([ref.workspace_key]) == []


def test_an_agent_must_say_what_its_session_files_are():
    class Unsaid(AgentFileTrash):
        agent = "Unsaid"
        source = "codex"

    with pytest.raises(TypeError):
        Unsaid(OwnPaths(Path("/nonexistent"), "codex"), None, None)  # type: ignore[abstract,arg-type]


# --- a session kept in several files (`file_is_session` False: a stub a resume left beside it) -----------


class StubTrash(ChatTrash):
    """The agent with stubs: a resume may leave `chats/<id>.stub-<n>.jsonl` beside a session's file."""

    def is_place(self, target: Path, root: Path, session_id: str) -> bool:
        stub = target.name.startswith(f"{session_id}.stub-") and target.name.endswith(".jsonl")
        return (self.is_session_file(target, session_id) or stub) and target.parent == root / "chats"

    def companions(self, session_file: Path, session_id: str) -> list[Path]:
        return sorted(session_file.parent.glob(f"{session_id}.stub-*.jsonl"))


@pytest.fixture
def stubbed(chat) -> tuple[Path, Path, SessionRef]:
    root, session, ref = chat
    (root / "chats" / f"{SESSION_ID}.stub-1.jsonl").write_bytes(b'{"type":"header"}\n')
    (root / "chats" / f"{SESSION_ID}.stub-2.jsonl").write_bytes(b'{"type":"header","again":true}\n')
    return root, session, ref


def test_rm_and_restore_move_every_file_of_a_session_kept_in_several(stubbed, tmp_path):
    root, session, ref = stubbed
    trash = _trash(StubTrash, tmp_path / "data")
    before = _tree(root)
    trash.remove(ref, session, root)
    assert _tree(root) == {}
    files = trash.files(ref)
    assert sorted(path.name for path in files.companions.iterdir()) == [f"{SESSION_ID}.stub-1.jsonl",
                                                                       f"{SESSION_ID}.stub-2.jsonl"]
    trash.restore(ref, [root])
    assert _tree(root) == before
    assert not files.companions.exists() and trash.entries([ref.workspace_key]) == []


def test_a_stub_written_while_it_moves_puts_every_file_back(stubbed, tmp_path, monkeypatch):
    from reprise.core import faults

    root, session, ref = stubbed
    stub = root / "chats" / f"{SESSION_ID}.stub-2.jsonl"
    trash = _trash(StubTrash, tmp_path / "data")
    plain = faults.point

    def the_agent_writes(name: str) -> None:
        if name == "claude_trash_before_unlink":
            with stub.open("ab") as handle:
                handle.write(b'{"type":"user","text":"more"}\n')
        plain(name)

    monkeypatch.setattr(faults, "point", the_agent_writes)
    changed = _tree(root)
    with pytest.raises(ConflictError, match="was not moved to the trash"):
        trash.remove(ref, session, root)
    changed[str(stub.relative_to(root))] = hashlib.sha256(stub.read_bytes()).hexdigest()
    assert _tree(root) == changed and stub.read_bytes().endswith(b'"more"}\n')   # every file back, none hidden
    assert not trash.files(ref).companions.exists() and not trash.files(ref).record.exists()
    assert trash.entries([ref.workspace_key]) == []


def test_an_rm_cut_short_after_its_copies_is_finished_with_every_file(stubbed, tmp_path, monkeypatch):
    from reprise.core import faults

    root, session, ref = stubbed
    before = _tree(root)
    trash = _trash(StubTrash, tmp_path / "data")
    plain = faults.point

    def crash(name: str) -> None:
        if name == "claude_trash_before_unlink":
            raise SystemExit("the process ended here")   # as a kill: nothing after this point runs
        plain(name)

    monkeypatch.setattr(faults, "point", crash)
    with pytest.raises(SystemExit):
        trash.remove(ref, session, root)
    assert _tree(root) == before   # the copies are recorded in the trash; every original is still there
    monkeypatch.setattr(faults, "point", plain)
    trash.remove(ref, session, root)   # the next rm finishes it
    assert _tree(root) == {}
    trash.restore(ref, [root])
    assert _tree(root) == before


def test_restore_refuses_while_a_stub_of_the_session_is_back(stubbed, tmp_path):
    root, session, ref = stubbed
    trash = _trash(StubTrash, tmp_path / "data")
    trash.remove(ref, session, root)
    stub = root / "chats" / f"{SESSION_ID}.stub-1.jsonl"
    stub.write_bytes(b'{"type":"header","new":true}\n')
    with pytest.raises(ConflictError, match="exists again"):
        trash.restore(ref, [root])
    assert not session.exists() and stub.read_bytes() == b'{"type":"header","new":true}\n'
    assert trash.files(ref).session.exists() and len(list(trash.files(ref).companions.iterdir())) == 2


def test_purge_deletes_the_other_files_of_a_session_too(stubbed, tmp_path):
    root, session, ref = stubbed
    trash = _trash(StubTrash, tmp_path / "data")
    trash.remove(ref, session, root)
    trash.purge([ref.workspace_key], confirmed=True)
    assert not trash.files(ref).companions.exists() and not trash.files(ref).session.exists()
    left = sorted(str(path.relative_to(trash.paths.trash_dir(ref.workspace_key)))
                  for path in trash.paths.trash_dir(ref.workspace_key).rglob("*"))
    assert not any(SESSION_ID in name for name in left), left
