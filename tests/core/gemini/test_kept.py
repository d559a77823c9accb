"""A Gemini CLI session Reprise kept, once Gemini CLI's sweep deleted its files: listed under its folder
from the kept copy, shown, searched, and resumed by putting the kept files back where the client had
them (on the real client's store)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reprise.core.errors import ConflictError, RepriseError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "gemini"
STORE = FIXTURES / "store-0.61.0" / "home" / ".gemini"
LEGACY = FIXTURES / "legacy-0.38.2" / "home" / ".gemini"
THREE = "e9b105e8-2eb0-4bfb-b1f9-a0e942bfdde1"   # three turns, and a stub a resume left beside it
MAIN = "session-2026-12-06T19-46-e9b105e8.jsonl"
STUB = "session-2026-12-06T19-48-e9b105e8.jsonl"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(the client's store, the alpha project's folder): the fixture with its projects mapped under tmp_path."""
    root = tmp_path / "home" / ".gemini"
    shutil.copytree(STORE, root)
    folder = tmp_path / "work" / "alpha"
    folder.mkdir(parents=True)
    (root / "tmp" / "alpha" / ".project_root").write_text(str(folder))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "home"))
    return root, folder


def _on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `gemini` on PATH (never run: a resume plan puts the files back only when the client can run)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gemini").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "gemini").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")


def _rows(service: Service, *, everywhere: bool = False) -> dict[str, object]:
    listing = service.list_sessions(all_workspaces=everywhere)
    service.load_details(listing.rows)
    return {row.id: row for row in listing.rows if row.source == "gemini"}


def _swept(chats: Path) -> dict[str, bytes]:
    """Delete the session's files as Gemini CLI's sweep does; their bytes."""
    files = {name: (chats / name).read_bytes() for name in (MAIN, STUB)}
    for name in files:
        (chats / name).unlink()
    return files


@pytest.fixture
def swept(store: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
          ) -> tuple[Path, Path, dict[str, bytes]]:
    """(the alpha project's chats folder, its folder, the session's files' bytes): the session kept, then
    deleted by the sweep, and a `gemini` on PATH."""
    root, folder = store
    _on_path(tmp_path, monkeypatch)
    chats = root / "tmp" / "alpha" / "chats"
    service = Service.from_environment(workspace=str(folder))
    assert service.keep(service.resolve(THREE)).added == ["session", f"companions/{STUB}"]
    return chats, folder, _swept(chats)


def test_a_kept_session_is_listed_shown_and_searched_once_the_sweep_deleted_it(swept, capsys) -> None:
    _, folder, _ = swept
    again = Service.from_environment(workspace=str(folder))
    row = _rows(again)[THREE]
    assert row.kept and row.turns == 3 and row.workspace_key == workspace_key(str(folder))   # type: ignore[attr-defined]
    assert (row.fields.warning or "").startswith("Gemini CLI deleted its file")   # type: ignore[attr-defined]
    assert row.fields.workspace_path == str(folder) and row.group == "kept"   # type: ignore[attr-defined]
    assert row.agent_deletion is None   # type: ignore[attr-defined]   # out of the sweep's reach
    detail = again.show(again.resolve(THREE))
    assert [turn.user_message for turn in detail.transcript.turns][-1] == "Finish the plan MARKthird"
    assert any(w.code == "deleted_by_agent" and MAIN in w.path for w in detail.warnings)
    assert THREE in {hit.row.id for hit in again.search("MARKsecond")}
    from reprise.tui import cli

    assert cli.main(["list", "--source", "gemini", "--json", "--workspace", str(folder)]) == 0
    listed = {item["session_id"]: item for item in json.loads(capsys.readouterr()[0])["sessions"]}
    assert listed[THREE]["kept"] and listed[THREE]["workspace_path"] == str(folder)


def test_resuming_it_puts_the_kept_files_back_in_the_clients_form_first(swept) -> None:
    chats, folder, files = swept
    service = Service.from_environment(workspace=str(folder))
    ref = service.resolve(THREE)
    plan = service.resume_plan(ref, for_exec=False)   # a plan only: nothing is written
    assert not (chats / MAIN).exists() and any("puts the copy it kept back" in note for note in plan.notes)
    plan = service.resume_plan(ref, for_exec=True)
    assert {name: (chats / name).read_bytes() for name in files} == files
    assert THREE in plan.argv and plan.cwd == str(folder)
    assert any("put the copy it kept back (2 file(s)" in note for note in plan.notes)
    row = _rows(Service.from_environment(workspace=str(folder)))[THREE]
    assert row.group == str(chats) and row.path == str(chats / MAIN)   # type: ignore[attr-defined]


def test_the_way_back_never_writes_over_a_file_now_at_its_place(swept) -> None:
    chats, folder, _ = swept
    (chats / STUB).write_bytes(b"someone else's\n")   # a file named for the session, not its main one
    service = Service.from_environment(workspace=str(folder))
    ref = service.resolve(THREE)
    with pytest.raises(RepriseError, match="exists again"):
        service.resume_plan(ref, for_exec=True)
    assert not (chats / MAIN).exists() and (chats / STUB).read_bytes() == b"someone else's\n"


def test_put_back_removes_what_it_copied_when_one_file_fails(swept, monkeypatch) -> None:
    from reprise.core.archive import Archive
    from reprise.core.paths import OwnPaths, data_dir
    from reprise.core.rooted import Root
    from reprise.core.sources import kept_listing
    from reprise.core.sources.gemini.keep import kept_session

    chats, folder, _ = swept
    archive = Archive(OwnPaths(data_dir(), "gemini"))
    kept = kept_session(archive, SessionRef(workspace_key(str(folder)), THREE, "gemini"))
    assert kept is not None
    calls: list[Path] = []
    real = Root.copy_in

    def failing(self: Root, other: Root, source: Path | str, target: Path | str) -> str:
        calls.append(Path(target))
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(self, other, source, target)

    monkeypatch.setattr(Root, "copy_in", failing)
    with pytest.raises(RepriseError, match="was not put back: No space left"):
        kept_listing.put_back(archive, kept, kept.store_root, "Gemini CLI")
    assert not (chats / MAIN).exists() and not (chats / STUB).exists()


def test_a_trashed_session_is_not_listed_from_its_kept_copy(store) -> None:
    root, folder = store
    service = Service.from_environment(workspace=str(folder))
    ref = service.resolve(THREE)
    service.keep(ref)
    service.remove(ref)
    assert THREE not in _rows(Service.from_environment(workspace=str(folder)))


def test_a_kept_session_of_an_older_clients_whole_json_is_read_as_one(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "home" / ".gemini"
    shutil.copytree(LEGACY, root)
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "home"))
    service = Service.from_environment(workspace=str(tmp_path))
    rows = _rows(service, everywhere=True)
    assert rows
    session_id, row = next(iter(rows.items()))
    path = Path(row.path)   # type: ignore[attr-defined]
    assert path.name.endswith(".json")
    service.keep(service.resolve(session_id))
    turns = row.turns   # type: ignore[attr-defined]
    path.unlink()
    kept = _rows(Service.from_environment(workspace=str(tmp_path)), everywhere=True)[session_id]
    assert kept.group == "kept" and kept.turns == turns and turns > 0   # type: ignore[attr-defined]


def test_a_kept_copy_from_a_root_reprise_no_longer_reads_is_not_put_back(swept, tmp_path, monkeypatch) -> None:
    chats, folder, _ = swept
    root = chats.parents[2]
    moved = tmp_path / "other" / ".gemini"
    shutil.copytree(root, moved)
    monkeypatch.setenv("GEMINI_CLI_HOME", str(moved.parent))
    service = Service.from_environment(workspace=str(folder))
    ref = SessionRef(workspace_key(str(folder)), THREE, "gemini")
    with pytest.raises(ConflictError, match="not a Gemini CLI root Reprise reads"):
        service.resume_plan(ref, for_exec=True)
    assert not (moved / "tmp" / "alpha" / "chats" / MAIN).exists()


def test_a_folder_named_kept_where_reprise_runs_is_never_taken_for_the_kept_group(swept, tmp_path, monkeypatch) -> None:
    chats, folder, files = swept
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "kept").mkdir(parents=True)
    (elsewhere / "kept" / MAIN).write_bytes(files[MAIN])
    monkeypatch.chdir(elsewhere)
    service = Service.from_environment(workspace=str(folder))
    plan = service.resume_plan(service.resolve(THREE), for_exec=False)
    assert any("puts the copy it kept back" in note for note in plan.notes)
