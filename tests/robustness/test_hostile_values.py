"""One bad value is one problem row, never a crash of every command.

Hand-made cases (half an emoji, a NUL or a relative path in a recorded folder, forks of odd
records, a restore index line of the wrong type, a keep index line or settings nested too deeply):
each command either works or names the problem, never a traceback, and the agent's files keep their
bytes. The property test over every source (any one value replaced, or a file cut) is part of the
conformance suite: tests/sources/test_conformance.py and tests/sources/hostile.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from reprise.core import config
from reprise.core.errors import ArchiveError
from reprise.core.paths import UNKNOWN_FOLDER_KEY, workspace_key
from reprise.core.service import Service
from reprise.core.trimming import TrimOptions
from reprise.tui import cli

from .. import factories
from ..sources.captured import (
    ALPHA_SLUG,
    BETA_SLUG,
    CLAUDE_NAMED,
    CLAUDE_THREE,
    CODEX_NAMED,
    CODEX_THREE,
    claude_fixture,
    codex_fixture_path,
)
from ..sources.hostile import store_digest

REPRISE = Path(sys.executable).with_name("reprise")


# --- stores ----------------------------------------------------------------------------------------

def put_claude(slug: str, session_id: str, data: bytes) -> Path:
    path = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / slug / f"{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def put_codex(session_id: str, data: bytes, index: bytes | None = None) -> Path:
    root = Path(os.environ["CODEX_HOME"])
    path = root / "sessions" / "2026" / "12" / "01" / codex_fixture_path(session_id).name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if index is not None:
        (root / "session_index.jsonl").write_bytes(index)
    return path


def agent_roots() -> list[Path]:
    return [Path(os.environ["CLAUDE_CONFIG_DIR"]), Path(os.environ["CODEX_HOME"])]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def listed(capsys, session_id: str) -> dict:
    status, out, err = run(capsys, "list", "--all", "--json")
    assert status == 0, err
    [row] = [row for row in json.loads(out)["sessions"] if row["session_id"] == session_id]
    return row


# --- half an emoji --------------------------------------------------------------------------------

HALF = "\\ud83d"   # as JavaScript writes a string cut inside a surrogate pair


def test_half_an_emoji_in_a_claude_prompt_title_or_branch_is_shown_replaced_and_the_file_kept(capsys):
    three = claude_fixture(ALPHA_SLUG, CLAUDE_THREE).replace(b"Start a plan MARKfirst",
                                                             f"Start {HALF} MARKfirst".encode())
    three = three.replace(b'"gitBranch":"HEAD"', f'"gitBranch":"br{HALF}"'.encode())
    named = claude_fixture(BETA_SLUG, CLAUDE_NAMED).replace(b'"customTitle":"Named by',
                                                            f'"customTitle":"Named {HALF}by'.encode())
    put_claude(ALPHA_SLUG, CLAUDE_THREE, three)
    put_claude(BETA_SLUG, CLAUDE_NAMED, named)
    before = store_digest(*agent_roots())

    status, out, err = run(capsys, "list", "--all")
    assert status == 0 and "Start \ufffd MARKfirst" in out and "Named \ufffdby" in out, err
    row = listed(capsys, CLAUDE_THREE)
    assert row["branch"] == "br\ufffd"
    for argv in (["show", CLAUDE_THREE], ["show", CLAUDE_NAMED], ["search", "--all", "MARKfirst"],
                 ["meter", CLAUDE_THREE], ["trim", CLAUDE_THREE, "--fork", "--dry-run", "--drop", "1"]):
        status, out, err = run(capsys, *argv)
        assert status == 0, (argv, err)
    status, out, _ = run(capsys, "search", "--all", "MARKfirst")
    assert "\ufffd" in out
    assert store_digest(*agent_roots()) == before


def test_half_an_emoji_in_a_codex_thread_name_or_recorded_folder_is_shown_replaced(capsys):
    index = json.dumps({"id": CODEX_NAMED, "thread_name": "Renamed \ud83d MARKname",
                        "updated_at": "2026-12-01T20:00:00Z"}).encode() + b"\n"
    assert b"\\ud83d" in index
    put_codex(CODEX_NAMED, codex_fixture_path(CODEX_NAMED).read_bytes(), index)
    three = codex_fixture_path(CODEX_THREE).read_bytes().replace(
        b'"cwd":"/tmp/reprise-codex-fixture/work/alpha"', b'"cwd":"/tmp/half\\udc00folder"', 1)
    put_codex(CODEX_THREE, three)
    before = store_digest(*agent_roots())

    status, out, err = run(capsys, "list", "--all")
    assert status == 0 and "Renamed \ufffd MARKname" in out, err
    assert listed(capsys, CODEX_THREE)["workspace_path"] == "/tmp/half\ufffdfolder"
    for argv in (["show", CODEX_NAMED], ["show", CODEX_THREE], ["search", "--all", "MARKname"],
                 ["meter", CODEX_THREE], ["resume", "--print", CODEX_THREE]):
        status, out, err = run(capsys, *argv)
        assert status == 0, (argv, err)
    assert store_digest(*agent_roots()) == before


# --- recorded folders that are not folders ---------------------------------------------------------

@pytest.mark.parametrize("folder", ["/x/a\\u0000b", "", "..", "relative/dir"],
                         ids=["nul", "empty", "dotdot", "relative"])
def test_a_recorded_folder_that_is_not_an_absolute_path_is_an_unknown_folder(capsys, tmp_path, monkeypatch, folder):
    here = tmp_path / "here" / "sub"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    recorded = b'"cwd":"/tmp/reprise-codex-fixture/work/alpha"'
    put_codex(CODEX_THREE, codex_fixture_path(CODEX_THREE).read_bytes().replace(recorded, f'"cwd":"{folder}"'.encode()))
    claude_recorded = b'"cwd":"/tmp/reprise-claude-fixture/work/alpha"'
    put_claude(ALPHA_SLUG, CLAUDE_THREE, claude_fixture(ALPHA_SLUG, CLAUDE_THREE).replace(
        claude_recorded, f'"cwd":"{folder}"'.encode()))
    before = store_digest(*agent_roots())
    never = {workspace_key(here), workspace_key(here.parent)}

    codex_row = listed(capsys, CODEX_THREE)
    assert codex_row["workspace_key"] == UNKNOWN_FOLDER_KEY and codex_row["workspace_path"] is None
    assert "not an absolute path" in codex_row["warning"]
    claude_row = listed(capsys, CLAUDE_THREE)
    guessed = "/tmp/reprise/claude/fixture/work/alpha"   # what the project folder's slug suggests
    assert (claude_row["workspace_key"], claude_row["workspace_path"]) == (workspace_key(guessed), guessed)
    assert "not an absolute path" in claude_row["warning"]
    assert {codex_row["workspace_key"], claude_row["workspace_key"]}.isdisjoint(never)

    for session_id in (CODEX_THREE, CLAUDE_THREE):
        status, out, err = run(capsys, "resume", "--print", "--json", session_id)
        assert status == 0, err
        plan = json.loads(out)
        assert plan["cwd"] == str(here)   # the current folder, and it says so
        assert any(str(here) in note and ("unknown" in note or "no longer exists" in note) for note in plan["notes"])
        for argv in (["show", session_id], ["meter", session_id], ["search", "--all", "MARKfirst"]):
            status, _, err = run(capsys, *argv)
            assert status == 0, (argv, err)
    status, out, _ = run(capsys, "show", CODEX_THREE)
    assert status == 0 and "(folder unknown)" in out.splitlines()[1] and UNKNOWN_FOLDER_KEY not in out
    assert store_digest(*agent_roots()) == before


# --- forks of odd records --------------------------------------------------------------------------

def test_a_claude_fork_copies_a_tool_result_file_with_a_non_ascii_name(capsys):
    name = "résumé-ü.txt"
    mention = f"Finish the plan MARKthird (see ~/.claude/projects/x/{CLAUDE_THREE}/tool-results/{name})"
    data = claude_fixture(ALPHA_SLUG, CLAUDE_THREE).replace(b"Finish the plan MARKthird", mention.encode())
    path = put_claude(ALPHA_SLUG, CLAUDE_THREE, data)
    sidecar = path.with_suffix("") / "tool-results" / name
    sidecar.parent.mkdir(parents=True)
    sidecar.write_bytes(b"the long output\n")
    before = store_digest(*agent_roots())

    status, out, err = run(capsys, "trim", CLAUDE_THREE, "--fork", "--dry-run", "--drop", "1")
    assert status == 0, err
    assert store_digest(*agent_roots()) == before
    status, out, err = run(capsys, "trim", CLAUDE_THREE, "--fork", "--drop", "1")
    assert status == 0, err
    [fork] = [found for found in path.parent.glob("*.jsonl") if found != path]
    assert (fork.with_suffix("") / "tool-results" / name).read_bytes() == b"the long output\n"


def codex_with_line(session_id: str, extra: bytes, after_kind: bytes = b'"type":"task_started"') -> bytes:
    """The rollout with `extra` (one line) inserted after the first line holding `after_kind`."""
    lines = codex_fixture_path(session_id).read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if after_kind in line) + 1
    return b"".join(lines[:at] + [extra + b"\n"] + lines[at:])


def test_a_codex_fork_carries_a_deeply_nested_line_byte_for_byte(capsys):
    depth = 100_000
    deep = (b'{"timestamp":"2026-12-01T19:36:28.000Z","type":"response_item","payload":'
            + b"[" * depth + b"]" * depth + b"}")
    put_codex(CODEX_THREE, codex_with_line(CODEX_THREE, deep))
    before = store_digest(*agent_roots())
    status, _, err = run(capsys, "list", "--all")
    assert status == 0, err
    status, _, err = run(capsys, "trim", CODEX_THREE, "--fork", "--dry-run", "--drop", "2")
    assert status == 0, err
    assert store_digest(*agent_roots()) == before
    status, out, err = run(capsys, "trim", CODEX_THREE, "--fork", "--drop", "2")
    assert status == 0, err
    forks = [path for path in (Path(os.environ["CODEX_HOME"]) / "sessions").rglob("*.jsonl")
             if CODEX_THREE not in path.name]
    assert len(forks) == 1 and deep + b"\n" in forks[0].read_bytes()


def test_a_codex_fork_of_a_message_whose_role_is_not_a_string(capsys):
    data = codex_fixture_path(CODEX_THREE).read_bytes().replace(b'"role":"developer","content"',
                                                                b'"role":["developer"],"content"', 1)
    assert b'"role":["developer"]' in data   # a message of the thread's setup, which a fork of turn 2 on keeps
    put_codex(CODEX_THREE, data)
    for argv in (["trim", CODEX_THREE, "--fork", "--dry-run", "--drop", "1"], ["show", CODEX_THREE],
                 ["meter", CODEX_THREE]):
        status, _, err = run(capsys, *argv)
        assert status == 0, (argv, err)


# --- Reprise's own index -------------------------------------------------------------------------

def test_a_restore_line_of_the_wrong_type_is_refused_naming_the_index_line(tmp_path, isolated_paths):
    folder = tmp_path / "project"
    folder.mkdir()
    factories.write_session(isolated_paths, folder, factories.session_bytes("wrong-restores", turns=4))
    service = Service(config.load(state_dir=str(isolated_paths)), workspace=folder)
    fork = service.trim(service.resolve("wrong-restores"), TrimOptions(drop=("1",)), fork=True).ref
    index = service.sources["fractal"].archive.index_path(fork)
    lines = index.read_bytes().count(b"\n")
    with index.open("a") as handle:
        handle.write(json.dumps({"digest": "0" * 64, "op": "restore", "time": "2026-12-01T00:00:00Z",
                                 "anchors": [], "restores": 5}) + "\n")
    fork_bytes = Path(service.session_path(fork)).read_bytes()
    with pytest.raises(ArchiveError) as raised:
        service.restore(fork)
    assert f"{index} line {lines + 1}" in raised.value.message and "restores" in raised.value.message
    assert Path(service.session_path(fork)).read_bytes() == fork_bytes


async def test_the_tui_trim_dialog_previews_a_fork_of_odd_codex_records(tmp_path):
    """The dialog's preview goes through the same service as `trim --fork --dry-run`: a role that is
    not a string and a line nested too deeply give a plan, not a crashed app."""
    from ..tui.conftest import build_app, show_agent_hidden, trim_dialog_dropping

    folder = tmp_path / "alpha"
    folder.mkdir()
    deep = (b'{"timestamp":"2026-12-01T19:36:28.000Z","type":"response_item","payload":'
            + b"[" * 100_000 + b"]" * 100_000 + b"}")
    data = codex_with_line(CODEX_THREE, deep).replace(b'"role":"developer","content"',
                                                      b'"role":["developer"],"content"', 1)
    put_codex(CODEX_THREE, data.replace(b"/tmp/reprise-codex-fixture/work/alpha", str(folder).encode()))
    show_agent_hidden()   # the fixture's rollouts are `codex exec` runs
    app = build_app(Service.from_environment(workspace=str(folder)))
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await trim_dialog_dropping(pilot, CODEX_THREE, "1")
        assert dialog.result is not None and dialog.result.plan.changed and dialog.result.forked


def test_a_keep_index_line_whose_part_is_not_a_string_is_a_damaged_line_not_a_crash(capsys):
    put_claude(ALPHA_SLUG, CLAUDE_THREE, claude_fixture(ALPHA_SLUG, CLAUDE_THREE))
    status, _, err = run(capsys, "keep", CLAUDE_THREE)
    assert status == 0, err
    [index] = Path(os.environ["REPRISE_DATA_DIR"]).rglob("index.jsonl")
    with index.open("a") as handle:
        handle.write(json.dumps({"digest": "0" * 64, "op": "keep", "time": "2026-12-01T00:00:00Z", "anchors": [],
                                 "part": ["session"], "root": 5}) + "\n")
    for argv in (["list", "--all"], ["show", CLAUDE_THREE], ["keep", CLAUDE_THREE], ["doctor"]):   # keep: again
        status, out, err = run(capsys, *argv)
        assert status in (0, 1) and "Traceback" not in err, (argv, err)
    assert f"{index} line 2: its part is not a string" in out   # doctor names the line


def test_claude_codes_settings_and_session_registry_nested_too_deeply_are_read_as_unusable(capsys):
    content = b"[" * 100_000 + b"]" * 100_000
    root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    put_claude(ALPHA_SLUG, CLAUDE_THREE, claude_fixture(ALPHA_SLUG, CLAUDE_THREE))
    (root / "settings.json").write_bytes(content)
    (root / "sessions").mkdir()
    (root / "sessions" / f"{os.getpid()}.json").write_bytes(content)
    before = store_digest(root)
    for argv in (["list", "--all"], ["show", CLAUDE_THREE], ["resume", "--print", CLAUDE_THREE], ["doctor"],
                 ["keep", CLAUDE_THREE]):
        status, _, err = run(capsys, *argv)
        assert status in (0, 1) and "Traceback" not in err, (argv, err)
    assert store_digest(root) == before
