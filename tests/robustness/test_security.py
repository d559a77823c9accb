"""Security: paths never leave the state root whatever the ids, Reprise's files are private
(0600 files, 0700 folders) even under umask 0, a world-writable state root is reported, agent
commands get ids and folders with shell metacharacters literally, and hostile session text is
shown literally in the TUI (a Pilot test and a snapshot of the History tab)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reprise.core import config
from reprise.core.errors import InvalidIdError, RepriseError
from reprise.core.paths import (
    SessionRef,
    validate_workspace_key,
    workspace_key,
)
from reprise.core.service import Service
from reprise.core.session_meta import SessionMeta
from reprise.core.sources.fractal.layout import StorePaths
from reprise.core.sources.fractal.models import (
    AgentTurn,
    HistoryTurn,
    SessionState,
    SummaryTurn,
    UserTurn,
)

from .. import factories
from ..tui.conftest import build_app, settle

REPRISE = Path(sys.executable).with_name("reprise")
FAKE_AGENT = Path(__file__).with_name("fake_agent.py")
ROOT = Path("/srv/state")
KEY_SHAPED = st.from_regex(r"\A[A-Za-z0-9._-]{1,80}--[0-9a-f]{16}\Z")


# --- paths ----------------------------------------------------------------------------------------------

def every_path(paths: StorePaths, ref: SessionRef) -> dict[str, Path]:
    key = ref.workspace_key
    return {
        "workspace": paths.workspace(key), "sessions": paths.sessions(key), "session_file": paths.session_file(ref),
        "reprise_dir": paths.reprise_dir(key), "workspace_record": paths.workspace_record(key),
        "meta_dir": paths.meta_dir(key), "meta_file": paths.meta_file(ref), "lock_file": paths.lock_file(ref),
        "archive_dir": paths.archive_dir(ref), "trash_dir": paths.trash_dir(key), "trash_file": paths.trash_file(ref),
        "trash_meta_file": paths.trash_meta_file(ref), "trash_record_file": paths.trash_record_file(ref),
        "audit_file": paths.audit_file(key),
    }


@settings(max_examples=400, deadline=None)
@given(session_id=st.text(min_size=1, max_size=140), key=st.one_of(KEY_SHAPED, st.text(max_size=100)))
def test_every_path_of_a_valid_ref_stays_in_its_workspace_and_invalid_refs_raise_invalid_id(session_id, key):
    paths = StorePaths(ROOT, "fractal")
    try:
        ref = SessionRef(key, session_id, "fractal")
    except InvalidIdError:
        return
    workspace = ROOT / "workspaces" / key
    assert Path(os.path.normpath(workspace)) == workspace and workspace.parent == ROOT / "workspaces"
    for name, path in every_path(paths, ref).items():
        normal = Path(os.path.normpath(path))
        assert normal == path, (name, path)  # no ".", ".." or empty component to collapse
        assert normal.is_relative_to(workspace), (name, path)
    for name in ("session_file", "meta_file", "trash_file", "trash_meta_file", "trash_record_file"):
        assert every_path(paths, ref)[name].name == f"{session_id}.json", name
    assert paths.lock_file(ref).name == f"{session_id}.lock" and paths.archive_dir(ref).name == session_id


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_a_key_is_either_rejected_with_invalid_id_or_one_plain_folder_name(key):
    try:
        validate_workspace_key(key)
    except InvalidIdError:
        return
    assert "/" not in key and key not in (".", "..") and "\x00" not in key
    assert Path(os.path.normpath(ROOT / "workspaces" / key)).parent == ROOT / "workspaces"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=60))
def test_every_folder_maps_to_a_valid_key(folder):
    key = workspace_key(Path("/home/dev") / folder)
    assert validate_workspace_key(key) == key


@pytest.fixture(scope="module")
def resolving_service(tmp_path_factory):
    """A service over two workspaces with sessions whose ids share prefixes, plus one odd file name."""
    base = tmp_path_factory.mktemp("resolve")
    root = base / "state"
    here, there = base / "here", base / "there"
    here.mkdir()
    there.mkdir()
    ids = ["abcd" + "0" * 28, "abcd" + "1" * 28, "..x", "with space", "ééé-unicode"]
    for index, session_id in enumerate(ids):
        factories.write_session(root, here if index % 2 else there, factories.session_bytes(session_id, turns=1))
    factories.write_session(root, there, factories.session_bytes("x", turns=1), session_id="x")
    service = Service(config.load(state_dir=str(root), config_path=base / "none.toml"), workspace=here,
                      cache=base / "cache")
    known = {SessionRef(row.workspace_key, row.file_id, "fractal")
             for row in service.list_sessions(all_workspaces=True).rows}
    return service, known


HOSTILE_TEXT = st.one_of(
    st.text(max_size=200),
    st.sampled_from(["..", "../..", "/", "abcd", "abc", "..x", "x", "with space", "a/../abcd", "\x00", "~",
                     "abcd/../../etc", "ééé", "e\u0301"]),
    st.builds(lambda a, b: a + b, st.sampled_from(["../", "/", "abcd", "..", ""]), st.text(max_size=40)),
)


@settings(max_examples=300, deadline=None)
@given(text=HOSTILE_TEXT)
def test_resolve_returns_only_existing_sessions_inside_the_root_or_raises_a_reprise_error(resolving_service, text):
    service, known = resolving_service
    try:
        ref = service.resolve(text)
    except RepriseError:
        return
    assert ref in known
    path = service.sources["fractal"].store.paths.session_file(ref)
    assert Path(os.path.normpath(path)).is_relative_to(service.state_root / "workspaces") and path.exists()


# --- file modes --------------------------------------------------------------------------------------------

def reprise(*args: str, env: dict[str, str], cwd: Path, umask: int | None = None) -> subprocess.CompletedProcess:
    set_umask = (lambda: os.umask(umask)) if umask is not None else None
    result = subprocess.run([str(REPRISE), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL, preexec_fn=set_umask)
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    return result


def cli_env(tmp_path: Path, config_text: str = "") -> dict[str, str]:
    (tmp_path / "config.toml").write_text(config_text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPRISE_", "FRACTAL_"))}
    env.update(REPRISE_CONFIG=str(tmp_path / "config.toml"), REPRISE_CACHE_DIR=str(tmp_path / "cache"),
               REPRISE_STATE_DIR=str(tmp_path / "state"))
    return env


def modes_under(root: Path) -> dict[Path, tuple[str, int]]:
    found = {root: ("dir", stat.S_IMODE(root.stat().st_mode))}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory, name)
            info = path.lstat()
            found[path] = ("dir" if stat.S_ISDIR(info.st_mode) else "file", stat.S_IMODE(info.st_mode))
    return found


def test_every_file_reprise_creates_is_0600_and_every_folder_0700_even_under_umask_0(tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    env = cli_env(tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess:
        result = reprise(*args, "--workspace", str(workspace), env=env, cwd=workspace, umask=0)
        assert result.returncode == 0, (args, result.stderr)
        return result

    session_id = json.loads(run("new", "--title", "modes", "--json").stdout)["session_id"]
    for number in range(3):
        run("send", session_id, "--agent", "echo", "--message", f"message {number}")
    run("trim", session_id, "--keep-history", "0")
    run("rename", session_id, "renamed")
    run("pin", session_id)
    run("restore", session_id)
    run("rm", session_id)
    run("trash", "restore", session_id)
    run("trim", session_id, "--cap-replies", "5", "--spare", "0")

    root = tmp_path / "state"
    fractal_dir = root / "workspaces" / workspace_key(tmp_path / "fractal-project") / "sessions"
    fractal_dir.mkdir(parents=True)
    fractal_dir.chmod(0o755)
    fractal_file = factories.write_session(root, tmp_path / "fractal-project",
                                           factories.session_bytes(factories.session_id_for("fractal"), turns=1))
    fractal_file.chmod(0o644)
    fractal_made = {fractal_dir.parent, fractal_dir, fractal_file}
    run("list", "--all")
    run("doctor")

    created = {path: kind_mode for path, kind_mode in modes_under(root).items() if path not in fractal_made}
    kinds = {path.name for path in created}
    assert {"audit.jsonl", "index.jsonl", f"{session_id}.json", f"{session_id}.lock", "workspace.json",
            "archive", "trash", "meta", "locks", "records"} <= kinds, sorted(kinds)
    wrong = {str(path.relative_to(tmp_path)): f"{kind} {mode:o}" for path, (kind, mode) in created.items()
             if mode != (0o700 if kind == "dir" else 0o600)}
    assert not wrong, wrong
    assert {path: mode for path, (_, mode) in modes_under(root).items() if path in fractal_made} == {
        fractal_dir.parent: 0o755, fractal_dir: 0o755, fractal_file: 0o644}, "Reprise changed Fractal's modes"
    assert stat.S_IMODE((tmp_path / "cache").stat().st_mode) == 0o700, "the catalog holds session text"


@pytest.mark.parametrize("mode, warned", [(0o777, True), (0o757, True), (0o770, True), (0o700, False),
                                          (0o755, False)])
def test_doctor_warns_when_the_state_root_is_writable_by_other_users(tmp_path, mode, warned):
    env = cli_env(tmp_path)
    root = tmp_path / "state"
    factories.write_session(root, tmp_path, factories.session_bytes(factories.session_id_for("one"), turns=1))
    root.chmod(mode)
    result = reprise("doctor", "--json", env=env, cwd=tmp_path)
    report = json.loads(result.stdout)
    notes = [note for note in report["notes"] if "writable by other users" in note and str(root) in note]
    assert bool(notes) == warned, report["notes"]
    assert result.returncode == 0 and report["ok"] is True


# --- agent argv -----------------------------------------------------------------------------------------

METACHARACTERS = "; rm -rf x $(touch pwned) `touch pwned2` 'single' \"double\" & | > out.txt * ~ \\"


def test_ids_and_workspace_folders_with_shell_metacharacters_reach_the_agent_literally(tmp_path):
    base = tmp_path / "base"
    workspace = base / f"ws {METACHARACTERS}\nsecond line"
    workspace.mkdir(parents=True)
    session_id = f"id {METACHARACTERS[:-2]}"  # a backslash is not allowed in ids (a path separator on Windows)
    (base / "x").mkdir()
    (workspace / "x").mkdir()
    log = tmp_path / "agent.jsonl"
    fake = [sys.executable, str(FAKE_AGENT)]
    turn_argv = fake + ["--id", "{session_id}", "--ws", "{workspace}", "--summary", "{summary_file}",
                        "pre{session_id}", "{workspace}/x"]
    resume_argv = fake + ["--ws", "{workspace}", "--id", "{session_id}"]
    env = cli_env(tmp_path, f"[agent]\nturn = {json.dumps(turn_argv)}\nresume = {json.dumps(resume_argv)}\n")
    env["FAKE_AGENT_LOG"] = str(log)
    factories.write_session(tmp_path / "state", workspace, factories.session_bytes(session_id, turns=1))
    common = ["--workspace", str(workspace)]
    message = f"please {METACHARACTERS}"

    sent = reprise("send", session_id, "--agent", "command", "--message", message, "--json", *common, env=env, cwd=base)
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["response"] == "fake agent reply"
    printed = reprise("resume", session_id, "--print", "--json", *common, env=env, cwd=base)
    assert printed.returncode == 0, printed.stderr
    resumed = reprise("resume", session_id, "--yes", *common, env=env, cwd=base)
    assert resumed.returncode == 0, resumed.stderr

    turn, resume = (json.loads(line) for line in log.read_text().splitlines())
    assert turn["argv"][:4] == ["--id", session_id, "--ws", str(workspace)]
    assert turn["argv"][4] == "--summary" and Path(turn["argv"][5]).name == "summary.txt"
    assert turn["argv"][6:] == ["pre{session_id}", "{workspace}/x"], "placeholders only replace whole items"
    assert turn["stdin"] == message and turn["cwd"] == str(workspace)
    assert turn["env"]["REPRISE_SESSION_ID"] == session_id and turn["env"]["REPRISE_WORKSPACE"] == str(workspace)
    expected_resume = ["--ws", str(workspace), "--id", session_id]
    assert json.loads(printed.stdout)["argv"] == fake + expected_resume
    assert resume["argv"] == expected_resume and resume["cwd"] == str(workspace)
    assert (base / "x").is_dir() and (workspace / "x").is_dir()
    side_effects = [p for p in tmp_path.rglob("*") if p.name in ("pwned", "pwned2", "out.txt")]
    assert not side_effects, side_effects


# --- hostile text in the TUI ------------------------------------------------------------------------------

HOSTILE = "[bold red]NOT BOLD[/] [link=https://evil.test]no link[/link] \x1b[2J\x1b[31mnot red\x1b[0m \x07"


def hostile_state(session_id: str) -> SessionState:
    """Two turns with hostile text in every field the Summary and History tabs show."""
    state = SessionState(session_id=session_id)
    for index, status in enumerate(("failed", "succeeded")):
        turn_id = f"turn-{index:032x}"
        state.summary.turns.append(SummaryTurn(
            turn_id=turn_id, user=UserTurn(message=f"{index}: {HOSTILE}"),
            agent=AgentTurn(status=status, response=f"reply {HOSTILE}", error=f"error {HOSTILE}",
                            files_read_count=1, files_changed_count=1, commands_run_count=1)))
        state.history.append(HistoryTurn(
            turn_id=turn_id, user_message=f"{index}: {HOSTILE}", status=status,
            files_read=[f"[i]read[/i] {HOSTILE}.py"], files_modified=["[u]mod[/u]\x1b[1m.py"],
            commands_run=[f"echo {HOSTILE}"], error=f"error {HOSTILE}",
            created_at="2026-05-31T10:00:00+00:00", updated_at=f"2026-05-31T10:0{index}:00+00:00"))
    return state


def save_hostile_session(service: Service) -> SessionRef:
    ref = SessionRef(service.workspace_key, "b" * 32, "fractal")
    service.sources["fractal"].store.save(ref, hostile_state(ref.session_id), expected=None)
    service.sources["fractal"].store.write_meta(ref, SessionMeta(title=f"[b]title[/b] {HOSTILE}"))
    return ref


async def test_hostile_text_in_every_field_is_shown_literally_without_escape_characters(tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    service = Service(config.load(state_dir=str(tmp_path / "state")), workspace=workspace, cache=tmp_path / "cache")
    save_hostile_session(service)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        summary = screen.query_one("#summary-view").text
        history = screen.query_one("#history-view").text
        for text in (summary, history):
            assert "[bold red]NOT BOLD[/] [link=https://evil.test]no link[/link]" in text
            assert "\x1b" not in text and "\x07" not in text
            assert "␛[31mnot red␛[0m ␇" in text
        for literal in ("[i]read[/i]", "[u]mod[/u]␛[1m.py", "echo [bold red]", "error [bold red]NOT BOLD[/]"):
            assert literal in history, literal
        assert summary.count("reply [bold red]NOT BOLD[/]") == 2
        line = "".join(segment.text for segment in screen.query_one("#sessions").render_line(0))
        assert "[b]title[/b] [bold red]NOT" in line and "\x1b" not in line, line
        banner = str(screen.query_one("#detail-banner").render())
        assert "\x1b" not in banner and "\x1b" not in str(screen.query_one("#header").render())


SNAPSHOT_ROOT = Path(tempfile.gettempdir()) / "reprise-robustness-snapshot"


@pytest.fixture
def snapshot_service():
    """The hostile session in its fixed folder (the path is in the picture), under a lock for the whole
    test, as the TUI snapshots' demo: two checkouts' test runs never rebuild it under each other."""
    with open(f"{SNAPSHOT_ROOT}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(SNAPSHOT_ROOT, ignore_errors=True)
        workspace = SNAPSHOT_ROOT / "project"
        workspace.mkdir(parents=True)
        service = Service(config.load(state_dir=str(SNAPSHOT_ROOT / "state"),
                                      config_path=SNAPSHOT_ROOT / "none.toml"),
                          workspace=workspace, cache=SNAPSHOT_ROOT / "cache")
        save_hostile_session(service)
        yield service
        shutil.rmtree(SNAPSHOT_ROOT, ignore_errors=True)


def test_history_tab_with_hostile_text_renders_literally(snap_compare, snapshot_service):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.app.screen.run_action("show_tab('tab-history')")
        await settle(pilot)

    assert snap_compare(build_app(snapshot_service), terminal_size=(120, 40), run_before=run_before)
