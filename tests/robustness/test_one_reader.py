"""Nothing blocks on an agent's file (issue 24, section 2): every file of an agent's store is read
through core/session_files.py, checked to be a regular file and opened without blocking. A FIFO
named like a file Reprise reads (Codex's `session_index.jsonl`, a rollout in the newest date
folder, Reprise's config) must never hang a command: each is run in a real process with a
generous timeout, so a hang fails the test instead of holding CI. A guard over core/ fails when
code opens a file any other way."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPRISE = Path(sys.executable).with_name("reprise")
CORE = Path(__file__).resolve().parents[2] / "core"
STORE = Path(__file__).parents[1] / "fixtures" / "codex-store"
ALPHA = "/tmp/reprise-codex-fixture/work/alpha"
TIMEOUT_S = 120   # generous: a command that ends at all ends in a second or two


def reprise(*args: str, cwd: str | Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([str(REPRISE), *args], cwd=cwd, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"`reprise {' '.join(args)}` was still running after {TIMEOUT_S} s: "
                             "it blocked on a FIFO") from None


@pytest.fixture
def codex_home() -> Path:
    home = Path(os.environ["CODEX_HOME"])
    shutil.copytree(STORE / "sessions", home / "sessions")
    shutil.copy(STORE / "session_index.jsonl", home / "session_index.jsonl")
    os.makedirs(ALPHA, exist_ok=True)
    return home


def test_a_fifo_named_session_index_jsonl_does_not_block_a_listing(codex_home):
    (codex_home / "session_index.jsonl").unlink()
    os.mkfifo(codex_home / "session_index.jsonl")
    done = reprise("list", "--all", "--json", cwd=ALPHA)
    assert done.returncode == 0, done.stderr
    rows = [row for row in json.loads(done.stdout)["sessions"] if row["source"] == "codex"]
    assert len(rows) == 8   # every rollout, unnamed: the FIFO names none


def test_a_fifo_named_like_a_rollout_in_the_newest_date_folder_does_not_block_new(codex_home):
    newest = codex_home / "sessions" / "2026" / "12" / "02"
    newest.mkdir()
    os.mkfifo(newest / "rollout-2026-12-02T10-00-00-01a2331b-ffff-7fff-bfff-ffffffffffff.jsonl")
    done = reprise("new", "--agent", "codex", "--title", "Past a FIFO", "--print", "--json", cwd=ALPHA)
    assert done.returncode == 0, done.stderr
    session_id = json.loads(done.stdout)["session_id"]
    [path] = (codex_home / "sessions").glob(f"*/*/*/rollout-*-{session_id}.jsonl")
    assert json.loads(path.read_text())["payload"]["cli_version"] == "0.171.0"   # from the rollout before


def test_a_fifo_as_reprises_config_file_is_an_error_not_a_hang(tmp_path):
    config = Path(os.environ["REPRISE_CONFIG"])
    os.mkfifo(config)
    done = reprise("list", "--json", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    error = json.loads(done.stdout)["error"]
    assert "FIFO" in error["message"] and error["path"] == str(config) and "Traceback" not in done.stderr


def test_read_head_refuses_a_fifo_a_folder_and_a_link_it_must_not_follow_without_opening_them(tmp_path):
    from reprise.core.session_files import ReadProblem, read_head

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_bytes(b"0123456789")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    found: dict[str, object] = {}

    def read_all() -> None:
        for name, follow in (("fifo", True), ("folder", True), ("link", False)):
            try:
                read_head(tmp_path / name, 4, follow=follow)
            except ReadProblem as exc:
                found[name] = exc.code
        found["file"] = read_head(tmp_path / "file", 4)
        found["link followed"] = read_head(tmp_path / "link", 64)

    reader = threading.Thread(target=read_all, daemon=True)
    reader.start()
    reader.join(TIMEOUT_S)
    assert not reader.is_alive(), "read_head blocked"
    assert found == {"fifo": "not_regular", "folder": "not_regular", "link": "not_regular",
                     "file": (b"0123", 10), "link followed": (b"0123456789", 10)}


# --- the guard: one reader for every file under core/ ----------------------------------------------

# Files that open files themselves, and why that is not an agent's file read around the reader.
OWN_OPENERS = {
    "session_files.py": "the one reader",
    "rooted.py": "walks a root with O_NOFOLLOW | O_NONBLOCK and reads through session_files.read_all",
    "catalog_db.py": "Reprise's own catalog database, its lock and its journal files",
    "folder_scan.py": "folders (O_DIRECTORY)",
    "tokens.py": "the tokenizer files bundled in reprise.assets",
    "contract.py": "the JSON schema in a checkout (python -m reprise.core.contract)",
    "processes.py": "/proc",
    "liveness.py": "/proc",
}
SYSTEM_FILES = ("/proc/", "/etc/machine-id")   # what an agent's liveness module may read itself
SAFE_FLAGS = ("O_NONBLOCK", "O_DIRECTORY", "O_WRONLY", "O_CREAT")   # a read never blocks; a write, a folder


def _constants(tree: ast.Module, text: str) -> dict[str, str]:
    return {target.id: ast.get_source_segment(text, node.value) or ""
            for node in tree.body if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name)}


def _opens_around_the_reader(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    constants = _constants(tree, text)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func, line = node.func, f"{path.relative_to(CORE.parent)}:{node.lineno}"
        receiver = ast.get_source_segment(text, func.value) if isinstance(func, ast.Attribute) else ""
        if isinstance(func, ast.Name) and func.id == "open":
            found.append(f"{line}: open()")
        elif isinstance(func, ast.Attribute) and func.attr in ("read_text", "read_bytes"):
            if not any(name in (receiver or "") for name in SYSTEM_FILES):
                found.append(f"{line}: .{func.attr}()")
        elif isinstance(func, ast.Attribute) and func.attr == "open" and receiver in ("os", "io"):
            flags = ast.get_source_segment(text, node.args[1]) if len(node.args) > 1 else ""
            flags = " ".join([flags or "", *(constants.get(name, "") for name in (flags or "").split())])
            if receiver == "io" or not any(flag in flags for flag in SAFE_FLAGS):
                found.append(f"{line}: {receiver}.open({flags})")
        elif (isinstance(func, ast.Attribute) and func.attr == "open" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append(f"{line}: Path.open({node.args[0].value!r})")
    return found


def test_no_code_under_core_opens_a_file_around_the_one_reader():
    """core/sources reads every file through session_files (or rooted, which reads through it); the
    rest of core/ too, but for the files named in OWN_OPENERS."""
    checked = [path for path in sorted(CORE.rglob("*.py"))
               if path.parent != CORE or path.name not in OWN_OPENERS]
    assert len(checked) > 60
    found = [where for path in checked for where in _opens_around_the_reader(path)]
    assert found == [], "files opened around core/session_files.py:\n" + "\n".join(found)
