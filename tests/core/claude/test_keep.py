"""Keeping Claude Code sessions in Reprise's archive: verified copies with their sidecars, new versions
added and none dropped, listed and read back after the original is gone, never outside the roots."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime

import pytest

from reprise.core.archive import Archive
from reprise.core.errors import ArchiveError, ChangedOnDiskError, NotFoundError
from reprise.core.paths import OwnPaths, SessionRef, workspace_key
from reprise.core.rooted import OutsideRootError
from reprise.core.sources import file_keep
from reprise.core.sources.claude import keep as keeping

UUID = "0b7c1f4e-8d2a-4c3e-9f10-2a6b5c4d3e21"
OTHER = "5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"


def _line(kind, text, uuid):
    return json.dumps({"type": kind, "uuid": uuid, "sessionId": UUID, "message": {"content": text}},
                      separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


@pytest.fixture
def store(tmp_path):
    """A Claude root with one session, two subagent files and a tool result."""
    root = tmp_path / "claude"
    project = root / "projects" / "-home-me-proj"
    (project / UUID / "subagents").mkdir(parents=True)
    (project / UUID / "tool-results").mkdir()
    session = project / f"{UUID}.jsonl"
    session.write_bytes(_line("user", "héllo", "u1") + _line("assistant", "hi", "a1"))
    (project / UUID / "subagents" / "agent-a1.jsonl").write_bytes(_line("user", "sub task", "s1"))
    (project / UUID / "subagents" / "agent-b2.jsonl").write_bytes(_line("user", "other task", "s2"))
    (project / UUID / "tool-results" / "toolu_01.txt").write_bytes(b"long output\n")
    return root, session


@pytest.fixture
def paths(tmp_path):
    return OwnPaths(tmp_path / "data", "claude")


def _ref(key_folder="/home/me/proj", session=UUID):
    return SessionRef(workspace_key(key_folder), session, "claude")


def test_keep_copies_the_session_and_its_sidecars_verified(store, paths):
    root, session = store
    archive = Archive(paths)
    result = keeping.keep(archive, _ref(), session, root)
    data = session.read_bytes()
    assert result.session.digest == hashlib.sha256(data).hexdigest() and result.session.size == len(data)
    assert result.session.original == session and result.problems == [] and result.unchanged == []
    assert sorted(f.part for f in result.added) == ["session", "subagents/agent-a1.jsonl",
                                                   "subagents/agent-b2.jsonl", "tool-results/toolu_01.txt"]
    stored = paths.archive_dir(_ref())
    assert str(stored).startswith(str(paths.root / "workspaces")) and "/archive/claude/" in str(stored)
    assert keeping.read_kept(archive, _ref()) == data
    assert keeping.read_kept(archive, _ref(), "subagents/agent-b2.jsonl") == _line("user", "other task", "s2")
    assert keeping.kept_path(archive, _ref()).read_bytes() == data
    entries = archive.entries(_ref())
    assert {e.op for e in entries} == {"keep"} and len({e.info["keep"] for e in entries}) == 1
    assert entries[0].info["path"] == str(session) and entries[0].info["root"] == str(root.resolve())


def test_keeping_an_unchanged_session_again_adds_nothing(store, paths):
    root, session = store
    archive = Archive(paths)
    keeping.keep(archive, _ref(), session, root)
    lines = archive.index_path(_ref()).read_bytes()
    again = keeping.keep(archive, _ref(), session, root)
    assert again.added == [] and len(again.unchanged) == 4
    assert archive.index_path(_ref()).read_bytes() == lines


def test_keeping_after_the_file_grew_adds_the_new_version_and_keeps_the_old(store, paths):
    root, session = store
    archive = Archive(paths)
    first = keeping.keep(archive, _ref(), session, root).session
    with session.open("ab") as handle:
        handle.write(_line("user", "more", "u2"))
    second = keeping.keep(archive, _ref(), session, root)
    assert [f.part for f in second.added] == ["session"] and len(second.unchanged) == 3
    assert second.session.digest != first.digest and second.session.size > first.size
    assert keeping.read_kept(archive, _ref()) == session.read_bytes()
    assert archive.read(_ref(), first.digest).count(b"\n") == 2
    kept = keeping.kept_session(archive, _ref())
    assert kept is not None and kept.versions == 2 and kept.digest == second.session.digest


def test_a_kept_session_lists_and_reads_after_claude_deleted_the_original(store, paths, tmp_path):
    root, session = store
    archive = Archive(paths)
    data = session.read_bytes()
    keeping.keep(archive, _ref(), session, root)
    other_root = tmp_path / "work-claude"
    other = other_root / "projects" / "-srv-x" / f"{OTHER}.jsonl"
    other.parent.mkdir(parents=True)
    other.write_bytes(_line("user", "work", "w1"))
    keeping.keep(archive, _ref("/srv/x", OTHER), other, other_root)
    session.unlink()
    os.remove(root / "projects" / "-home-me-proj" / UUID / "subagents" / "agent-a1.jsonl")

    listing = keeping.kept_sessions(paths)
    assert listing.problems == []
    assert sorted(k.ref.session_id for k in listing.sessions) == sorted([UUID, OTHER])
    mine = keeping.kept_sessions(paths, store_root=root)
    assert [k.ref for k in mine.sessions] == [_ref()]
    kept = mine.sessions[0]
    assert (kept.digest, kept.size, kept.original) == (hashlib.sha256(data).hexdigest(), len(data), session)
    assert kept.store_root == root.resolve()
    assert datetime.fromisoformat(kept.kept_at).tzinfo is not None and kept.session.mtime_ns is not None
    assert [s.part for s in kept.sidecars] == ["subagents/agent-a1.jsonl", "subagents/agent-b2.jsonl",
                                              "tool-results/toolu_01.txt"]
    assert keeping.read_kept(archive, kept.ref) == data
    assert keeping.read_kept(archive, kept.ref, "subagents/agent-a1.jsonl") == _line("user", "sub task", "s1")


def test_a_kept_copy_covers_the_file_until_it_grows(store, paths):
    root, session = store
    archive = Archive(paths)
    keeping.keep(archive, _ref(), session, root)
    kept = keeping.kept_session(archive, _ref())
    info = session.stat()
    assert kept is not None and kept.covers(info.st_size, info.st_mtime_ns)
    with session.open("ab") as handle:
        handle.write(_line("user", "more", "u2"))
    info = session.stat()
    assert not kept.covers(info.st_size, info.st_mtime_ns)


def test_a_touched_but_unchanged_file_is_indexed_again_not_copied_again(store, paths):
    root, session = store
    archive = Archive(paths)
    first = keeping.keep(archive, _ref(), session, root).session
    os.utime(session, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    again = keeping.keep(archive, _ref(), session, root)
    assert [f.part for f in again.added] == [] and again.session.digest == first.digest
    kept = keeping.kept_session(archive, _ref())
    assert kept is not None and kept.versions == 1 and kept.covers(session.stat().st_size, 1_700_000_000_000_000_000)
    assert len([e for e in archive.entries(_ref()) if e.info["part"] == "session"]) == 2
    assert sorted(p.name for p in paths.archive_dir(_ref()).iterdir() if p.name.endswith(".json")) == sorted(
        {e.digest + ".json" for e in archive.entries(_ref())})


def test_a_damaged_index_line_is_a_problem_and_the_rest_still_lists(store, paths):
    root, session = store
    archive = Archive(paths)
    keeping.keep(archive, _ref(), session, root)
    with archive.index_path(_ref()).open("ab") as handle:
        handle.write(b"{not json\n")
    listing = keeping.kept_sessions(paths)
    assert [k.ref for k in listing.sessions] == [_ref()]
    assert len(listing.problems) == 1 and listing.problems[0].code == "bad_index_line"


def test_reading_a_never_kept_session_says_so(paths):
    archive = Archive(paths)
    with pytest.raises(NotFoundError, match="no copy"):
        keeping.read_kept(archive, _ref())
    assert keeping.kept_session(archive, _ref()) is None
    assert keeping.kept_sessions(paths).sessions == []


def test_a_corrupted_kept_copy_is_refused_on_reading(store, paths):
    root, session = store
    archive = Archive(paths)
    keeping.keep(archive, _ref(), session, root)
    keeping.kept_path(archive, _ref()).write_bytes(b"tampered\n")
    with pytest.raises(ArchiveError, match="corrupt"):
        keeping.read_kept(archive, _ref())


def test_a_file_rewritten_while_it_is_copied_is_not_kept(store, paths, monkeypatch):
    root, session = store
    archive = Archive(paths)
    real = file_keep._prefix
    calls = []

    def rewriting(fd, size, path):
        calls.append(path)
        if len(calls) == 2:  # between the hash and the copy
            session.write_bytes(b"X" * size)
        return real(fd, size, path)

    monkeypatch.setattr(file_keep, "_prefix", rewriting)
    with pytest.raises(ChangedOnDiskError):
        keeping.keep(archive, _ref(), session, root)
    assert archive.entries(_ref()) == []
    assert not any(p.name.endswith(".json") for p in paths.archive_dir(_ref()).iterdir())


def test_the_session_file_must_be_named_after_the_session(store, paths):
    root, session = store
    with pytest.raises(ArchiveError, match="not the file of Claude Code session"):
        keeping.keep(Archive(paths), _ref(session=OTHER), session, root)


def test_a_file_outside_the_claude_root_is_refused(store, paths, tmp_path):
    root, _session = store
    outside = tmp_path / "elsewhere" / f"{UUID}.jsonl"
    outside.parent.mkdir()
    outside.write_bytes(b"{}\n")
    with pytest.raises(OutsideRootError):
        keeping.keep(Archive(paths), _ref(), outside, root)


def test_a_symlinked_session_or_folder_is_refused(store, paths, tmp_path):
    root, session = store
    target = tmp_path / "real.jsonl"
    session.rename(target)
    session.symlink_to(target)
    with pytest.raises(ArchiveError, match="symlink"):
        keeping.keep(Archive(paths), _ref(), session, root)
    project = root / "projects" / "-home-me-proj"
    moved = tmp_path / "moved-project"
    project.rename(moved)
    project.symlink_to(moved)
    with pytest.raises(OutsideRootError, match="symlink"):
        keeping.keep(Archive(paths), _ref(), session, root)


def test_a_missing_session_file_is_a_clear_error(store, paths):
    root, session = store
    session.unlink()
    with pytest.raises(NotFoundError, match=str(session)):
        keeping.keep(Archive(paths), _ref(), session, root)


def test_a_sidecar_that_cannot_be_kept_is_a_problem_and_the_rest_is_kept(store, paths, tmp_path):
    root, session = store
    subagents = root / "projects" / "-home-me-proj" / UUID / "subagents"
    (tmp_path / "secret.jsonl").write_bytes(b"not ours\n")
    (subagents / "agent-link.jsonl").symlink_to(tmp_path / "secret.jsonl")
    (subagents / "nested").mkdir()
    result = keeping.keep(Archive(paths), _ref(), session, root)
    assert sorted(p.path for p in result.problems) == [str(subagents / "agent-link.jsonl"), str(subagents / "nested")]
    assert len(result.added) == 4
    assert b"not ours\n" not in [keeping.read_kept(Archive(paths), _ref(), f.part) for f in result.added]
