"""An agent's store the user cannot write (left by an agent run as another user, a read-only
mount), with Reprise's own folders writable: what fails, fails whole and says where. rm undoes its
copy in the trash and audits nothing; a fork that cannot be written takes back the archive entries
it wrote; every error names the real path, never a temp file or the last part of a folder.

As root the commands run as an unprivileged user (setpriv); otherwise the store is made read-only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.core.claude.test_claude_source import copy_store

AS_ROOT = os.geteuid() == 0
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if AS_ROOT else []
REPRISE = Path(sys.executable).with_name("reprise")
TIMEOUT_S = 120


@dataclass
class Store:
    base: Path
    env: dict[str, str]
    claude: Path
    codex: Path
    data: Path

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess:
        return subprocess.run([*NOBODY, str(REPRISE), *args], env=self.env, cwd=cwd, capture_output=True,
                              text=True, timeout=TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)

    def read_only(self, *folders: Path) -> None:
        """Readable by all, writable by its owner (root) only; without root, by nobody."""
        for top in folders:
            for path in [top, *top.rglob("*")]:
                mode = 0o755 if path.is_dir() else 0o644
                path.chmod(mode if AS_ROOT else mode & 0o555)


@pytest.fixture
def store() -> Iterator[Store]:
    base = Path(tempfile.mkdtemp(prefix="reprise-readonly-"))   # pytest's tmp_path is root-only
    base.chmod(0o755)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("REPRISE_", "FRACTAL_", "XDG_", "CLAUDE_", "CODEX_"))}
    env.update(CLAUDE_CONFIG_DIR=str(base / "claude"), CODEX_HOME=str(base / "codex"),
               REPRISE_DATA_DIR=str(base / "data"), REPRISE_STATE_DIR=str(base / "state"),
               FRACTAL_STATE_HOME=str(base / "state"), REPRISE_CACHE_DIR=str(base / "cache"),
               REPRISE_CONFIG=str(base / "config.toml"), HOME=str(base / "home"), XDG_CONFIG_HOME=str(base / "xdg"))
    (base / "config.toml").write_text("")
    for name in ("data", "state", "cache", "home", "xdg"):   # Reprise's own folders: the user's
        (base / name).mkdir()
        if AS_ROOT:
            os.chown(base / name, 65534, 65534)
    try:
        yield Store(base, env, base / "claude", base / "codex", base / "data")
    finally:
        for path in [base, *base.rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


def _claude_session(store: Store) -> tuple[Path, Path]:
    """A Claude Code session of the read-only store: (its file, the folder it was recorded in)."""
    folders = copy_store(store.claude, store.base / "work")
    path = next((store.claude / "projects").glob("*alpha/*.jsonl"))
    store.read_only(store.claude)
    return path, folders["alpha"]


def test_an_rm_in_a_store_the_user_cannot_write_is_undone_and_audits_no_rm(store):
    path, cwd = _claude_session(store)
    session_id, before = path.stem, path.read_bytes()
    named = store.run("rename", session_id, "Named", cwd=cwd)   # Reprise's metadata moves with the session
    assert named.returncode == 0, named.stderr
    result = store.run("rm", session_id, "--force", cwd=cwd)
    assert result.returncode != 0 and "not moved to the trash" in result.stderr, result
    assert str(path) in result.stderr and ".reprise-rm" not in result.stderr, result.stderr
    assert path.read_bytes() == before
    trash = store.run("trash", "list", "--all", "--json", cwd=cwd)
    assert json.loads(trash.stdout)["trash"] == [], trash.stdout
    assert [p for p in store.data.rglob("*") if "trash" in p.parts and p.is_file()] == []
    audit = store.run("audit", "--json", cwd=cwd)
    assert json.loads(audit.stdout)["audit"] == [], audit.stdout   # no "rm ok" of a move undone
    shown = store.run("show", session_id, "--json", cwd=cwd)
    assert "Named" in shown.stdout, shown.stdout[:300]


def test_a_fork_in_a_store_the_user_cannot_write_names_its_path_and_leaves_no_archive_of_it(store):
    path, cwd = _claude_session(store)
    session_id = path.stem
    sessions = sorted(p.name for p in path.parent.iterdir())
    result = store.run("trim", session_id, "--fork", "--cap-replies", "3", "--spare", "0", cwd=cwd)
    assert result.returncode != 0, result
    assert f"{path.parent}/" in result.stderr and ".tmp-" not in result.stderr, result.stderr
    entries = [p for p in store.data.rglob("*") if "archive" in p.parts and p.is_file()]
    assert entries == [], entries   # no entry of a fork that does not exist (nor a line naming one)
    assert sorted(p.name for p in path.parent.iterdir()) == sessions

def test_a_new_codex_session_in_a_store_the_user_cannot_write_names_the_folder_it_could_not_make(store):
    (store.codex / "sessions").mkdir(parents=True)
    store.read_only(store.codex)
    cwd = store.base / "work"
    cwd.mkdir()
    result = store.run("new", "--agent", "codex", "--print", cwd=cwd)
    assert result.returncode != 0, result
    year = str(store.codex / "sessions") + "/"
    assert year in result.stderr, result.stderr   # the whole path of the folder, not "2026" alone


def test_an_error_between_two_folders_names_the_file_it_is_about(tmp_path):
    """A move or copy between two folders whose files share a name: a missing source is named as
    the source, whole, never by its last part (nor claimed by the target)."""
    from reprise.core.rooted import Root

    root = Root(tmp_path)
    (tmp_path / "trash").mkdir()
    (tmp_path / "sessions").mkdir()
    for attempt in (lambda: root.move(tmp_path / "sessions" / "a.json", tmp_path / "trash" / "a.json"),
                    lambda: root.copy_in(root, tmp_path / "trash" / "b.json", tmp_path / "sessions" / "b.json")):
        with pytest.raises(FileNotFoundError) as raised:
            attempt()
        assert raised.value.filename in (str(tmp_path / "sessions" / "a.json"), str(tmp_path / "trash" / "b.json"))
