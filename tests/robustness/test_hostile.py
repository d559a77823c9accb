"""Hostile input: a generated corpus of 57 kinds of broken, odd and dangerous files in one
state root, each run through `reprise list/show/meter/doctor` as a subprocess of the installed
console script and through the TUI; hostile ids as arguments; a 200 MB session (slow).

Every command must exit with the documented status within its timeout, print a clean error naming
the file when it cannot use it, and change nothing on disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from reprise.core import config
from reprise.core.paths import workspace_key
from reprise.core.service import Service
from reprise.tui.widgets.session_list import SessionList

from .. import factories
from ..tui.conftest import build_app, settle

REPRISE = Path(sys.executable).with_name("reprise")
AS_ROOT = os.geteuid() == 0
# Root reads everything, so the unreadable-file cases run as `nobody` (CI runs as root); a
# developer who is not root is already unprivileged and runs them as themselves.
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if AS_ROOT else []
needs_root = pytest.mark.skipif(not AS_ROOT, reason="needs root to run a case as another, unprivileged user")


def chown_to_nobody(path: Path) -> None:
    if AS_ROOT:
        os.chown(path, 65534, 65534)
COMMAND_TIMEOUT_S = 120
HUGE_COMMAND_TIMEOUT_S = 180  # the 200 MB file measured 0.2-4.5 s per command on 2 cores (meter the longest)
HOSTILE = ("[bold red]NOT BOLD[/] [link=https://evil.test]x[/link] \x1b[2J\x1b[31mred\x1b[0m "
           "\x07\x1b]0;title\x07 $(rm -rf ~)")


# --- the corpus ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Kind:
    """One kind of file: its name in the sessions folder, what the listing says of it (a problem
    code, "warning" for a file that loads with a warning, None for a clean session) and the exit
    status of `show`/`meter` on it."""

    name: str
    file_id: str
    expect: str | None
    show_status: int
    as_nobody: bool = False


def _sid(name: str) -> str:
    return factories.session_id_for(name)


def _edit(name: str, edit) -> bytes:
    data = factories.base_session(_sid(name))
    edit(data)
    return factories.dumps(data)


def _agent(data: dict) -> dict:
    return data["summary"]["turns"][0]["agent"]


def _hostile_everywhere(session_id: str) -> bytes:
    """A valid session with hostile text in every text field, the trace included."""
    data = factories.session_dict(session_id, turns=2, statuses=("failed",), seed=9)
    for index, (turn, entry) in enumerate(zip(data["summary"]["turns"], data["history"], strict=True)):
        turn["turn_id"] = entry["turn_id"] = f"turn-{index}-{HOSTILE}"
        turn["user"]["message"] = entry["user_message"] = HOSTILE
        turn["agent"].update(response=HOSTILE, error=HOSTILE)
        entry.update(error=HOSTILE, files_read=[HOSTILE], files_modified=[HOSTILE + ".py"], commands_run=[HOSTILE],
                     created_at=HOSTILE, updated_at=HOSTILE, trace={"steps": [{"code": HOSTILE, HOSTILE: [HOSTILE]}]})
    return factories.dumps(data)


def _text_session(name: str, text: str) -> bytes:
    data = factories.base_session(_sid(name))
    data["summary"]["turns"][0]["user"]["message"] = data["history"][0]["user_message"] = text
    _agent(data)["response"] = text
    data["history"][0]["files_read"] = [text]
    return factories.dumps(data)


def _ten_mb_message(name: str) -> bytes:
    data = factories.base_session(_sid(name))
    message = ("ten megabytes of one message " * 400_000)[:10 * 1024 * 1024]
    data["summary"]["turns"][0]["user"]["message"] = data["history"][0]["user_message"] = message
    return factories.dumps(data)


def _deep_trace(name: str, depth: int) -> bytes:
    """A valid session whose trace nests `depth` lists deep (parsable, but deeper than most code recurses)."""
    data = factories.base_session(_sid(name))
    data["history"][0]["trace"] = {"steps": "@@DEEP@@"}
    return factories.dumps(data).replace(b'"@@DEEP@@"', b"[" * depth + b'"leaf"' + b"]" * depth)


CONTROL_NAME = "name\x1b[31mwith-escape"
LONG_NAME = "L" * 200

# name -> (bytes, listing expectation); special kinds (not plain bytes) are made in `build_corpus`.
BYTE_KINDS: dict[str, tuple[bytes, str | None]] = {
    "valid": (factories.session_bytes(_sid("valid"), turns=3, seed=1), None),
    "valid_unicode": (factories.session_bytes(_sid("valid_unicode"), turns=3, unicode=True, seed=2), None),
    "unknown_fields": (factories.session_bytes(_sid("unknown_fields"), turns=2, unknown_fields=True, seed=3), None),
    "no_turns": (factories.session_bytes(_sid("no_turns"), turns=0), None),
    "pending_last": (factories.session_bytes(_sid("pending_last"), turns=2, pending_last=True, seed=4), None),
    "ten_mb_message": (_ten_mb_message("ten_mb_message"), None),
    "lone_surrogates": (_text_session("lone_surrogates", "lone \ud800 high \udfff low \ud83d end"), None),
    "nul_characters": (_text_session("nul_characters", "nul \x00 in \x00\x00 text"), None),
    "ansi_and_markup_everywhere": (_hostile_everywhere(_sid("ansi_and_markup_everywhere")), None),
    "trace_900_deep": (_deep_trace("trace_900_deep", 900), None),
    "huge_number": (factories.session_bytes(_sid("huge_number"), turns=1).replace(
        b'"cost": ', b'"cost": 1e999, "was": ', 1), "warning"),
    "top_level_null": (b"null\n", "not_object"),
    "summary_null": (_edit("summary_null", lambda d: d.update(summary=None)), "validation"),
    "history_not_list": (_edit("history_not_list", lambda d: d.update(history={"0": {}})), "validation"),
    "agent_is_list": (_edit("agent_is_list", lambda d: d["summary"]["turns"][0].update(agent=[])), "validation"),
    "usage_is_string": (_edit("usage_is_string", lambda d: _agent(d).update(usage="lots")), "validation"),
    "session_id_number": (_edit("session_id_number", lambda d: d.update(session_id=7)), "validation"),
    "response_is_object": (_edit("response_is_object", lambda d: _agent(d).update(response={"a": 1})), "validation"),
}
# Factory inputs wrong in exactly one way, with the problem Reprise names for each.
BAD_INPUT_CODES = {
    "empty": "empty", "whitespace_only": "empty", "bom": "bom", "invalid_utf8": "invalid_utf8",
    "truncated_json": "invalid_json", "nan": "non_finite", "infinity": "non_finite",
    "negative_infinity": "non_finite", "top_level_array": "not_object", "top_level_string": "not_object",
    "top_level_number": "not_object", "schema_version_2": "schema_version", "schema_version_string": "schema_version",
    "schema_version_missing": "schema_version", "schema_version_true": "warning", "schema_version_float": "warning",
    "duplicate_keys": "warning", "summary_not_object": "validation", "turns_not_list": "validation",
    "turn_missing_turn_id": "validation", "user_message_int": "validation", "agent_status_unknown": "validation",
    "negative_count": "validation", "negative_cost": "validation", "history_status_unknown": "validation",
    "files_read_with_int": "validation", "created_at_missing": "validation", "id_mismatch": "id_mismatch",
    "too_deep": "too_deep",
}
SPECIAL_KINDS = {
    "directory_named_json": "not_regular", "fifo": "not_regular", "symlink_outside_root": "symlink_outside",
    "symlink_loop": "symlink_loop", "dangling_symlink": "dangling_symlink", "symlink_inside_root": None,
    "unreadable_to_the_user": "unreadable", "control_character_name": None, "empty_name": None,
    "id_over_128_characters": None,
}
UNADDRESSABLE = {"control_character_name": CONTROL_NAME, "empty_name": "", "id_over_128_characters": LONG_NAME}


def all_kinds() -> list[Kind]:
    kinds = []
    for name, (_, expect) in BYTE_KINDS.items():
        kinds.append(Kind(name, _sid(name), expect, 1 if expect not in (None, "warning") else 0))
    for name, expect in BAD_INPUT_CODES.items():
        kinds.append(Kind(name, _sid(name), expect, 1 if expect != "warning" else 0))
    for name, expect in SPECIAL_KINDS.items():
        file_id = {"directory_named_json": "x", **UNADDRESSABLE}.get(name, _sid(name))
        status = 2 if name in UNADDRESSABLE else 0 if expect is None else 1  # ids Reprise cannot name
        kinds.append(Kind(name, file_id, expect, status, as_nobody=name == "unreadable_to_the_user"))
    return kinds


KINDS = all_kinds()


@dataclass
class Corpus:
    base: Path
    root: Path
    workspace: Path
    sessions: Path
    env: dict[str, str]
    nobody_env: dict[str, str]
    fingerprint: dict[str, tuple]
    listing: dict
    doctor: dict
    nobody_listing: dict
    nobody_doctor: dict

    def path(self, kind: Kind) -> str:
        return str(self.sessions / f"{kind.file_id}.json")


def permissive_base(prefix: str) -> Path:
    """A folder the unprivileged user can traverse (pytest's tmp_path is root-only)."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o755)
    return base


def build_corpus(root: Path, workspace: Path, outside: Path) -> Path:
    sessions = root / "workspaces" / workspace_key(workspace) / "sessions"
    sessions.mkdir(parents=True)
    for name, (data, _) in BYTE_KINDS.items():
        (sessions / f"{_sid(name)}.json").write_bytes(data)
    for name in BAD_INPUT_CODES:
        (sessions / f"{_sid(name)}.json").write_bytes(factories.bad_inputs(_sid(name))[name])
    (sessions / "x.json").mkdir()
    os.mkfifo(sessions / f"{_sid('fifo')}.json")
    outside.mkdir()
    (outside / f"{_sid('symlink_outside_root')}.json").write_bytes(
        factories.session_bytes(_sid("symlink_outside_root"), turns=1))
    (sessions / f"{_sid('symlink_outside_root')}.json").symlink_to(outside / f"{_sid('symlink_outside_root')}.json")
    loop = sessions / f"{_sid('symlink_loop')}.json"
    loop.symlink_to(sessions / "loop-b")
    (sessions / "loop-b").symlink_to(loop)
    (sessions / f"{_sid('dangling_symlink')}.json").symlink_to(sessions / "nowhere" / "gone.json")
    inside = root / "elsewhere" / f"{_sid('symlink_inside_root')}.json"
    inside.parent.mkdir()
    inside.write_bytes(factories.session_bytes(_sid("symlink_inside_root"), turns=2, seed=7))
    (sessions / inside.name).symlink_to(inside)
    unreadable = sessions / f"{_sid('unreadable_to_the_user')}.json"
    unreadable.write_bytes(factories.session_bytes(_sid("unreadable_to_the_user"), turns=1))
    unreadable.chmod(0)
    for file_id in UNADDRESSABLE.values():
        (sessions / f"{file_id}.json").write_bytes(factories.session_bytes(file_id, turns=1))
    (sessions / ".abc.tmp-1-2").write_bytes(b"{")  # a stale temp file: never a row
    return sessions


def fingerprint(root: Path) -> dict[str, tuple]:
    """Every entry under the root, without following links or opening FIFOs: kind, mode, content hash."""
    found = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                found[path] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    found[path] = ("file", mode, hashlib.file_digest(handle, "sha256").hexdigest())
            else:
                found[path] = (stat.S_IFMT(info.st_mode), mode)
    return found


def assert_unchanged(before: dict[str, tuple], root: Path) -> None:
    """Every entry under the root is as it was; the only thing that may appear is Reprise's record of
    the current workspace's folder (`reprise/workspace.json`, written when a listing sees its sessions)."""
    after = fingerprint(root)
    changed = {path: (before[path], after.get(path)) for path in before if after.get(path) != before[path]}
    assert not changed, f"changed or removed: {changed}"
    added = sorted(set(after) - set(before))
    workspaces = root / "workspaces"
    allowed = [path for path in added if (Path(path).name == "reprise" and Path(path).parent.parent == workspaces)
               or (Path(path).name == "workspace.json" and Path(path).parent.parent.parent == workspaces)]
    assert added == allowed, f"created: {sorted(set(added) - set(allowed))}"


def run(args: list[str], env: dict[str, str], *, cwd: Path, nobody: bool = False,
        timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
    argv = [*(NOBODY if nobody else []), str(REPRISE), *args]
    try:
        return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"`reprise {' '.join(args)}` did not finish within {timeout} s") from None


def _not_json(constant: str):
    raise ValueError(f"{constant} is not JSON")


def json_of(result: subprocess.CompletedProcess, args: str, *, strict: bool = False) -> dict:
    """The one JSON document a command printed (`strict`: no NaN or Infinity, which JSON does not have)."""
    assert b"Traceback" not in result.stderr, f"{args}: {result.stderr.decode(errors='replace')[-3000:]}"
    try:
        return json.loads(result.stdout, **({"parse_constant": _not_json} if strict else {}))
    except ValueError:
        raise AssertionError(f"{args} printed no JSON (exit {result.returncode}): {result.stdout[:500]!r} "
                             f"{result.stderr[-1500:]!r}") from None


def environment(base: Path, cache: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("REPRISE_", "FRACTAL_", "XDG_"))}
    env.update(REPRISE_CACHE_DIR=str(cache), REPRISE_CONFIG=str(base / "config.toml"), HOME=str(base / "home"))
    return env


@pytest.fixture(scope="module")
def corpus():
    """The corpus, and `list --all` and `doctor` run on it once as root and once as the unprivileged
    user (for the file only root can read); both commands are store-wide, so each run covers every kind."""
    base = permissive_base("reprise-hostile-")
    try:
        root, workspace = base / "state", base / "project"
        workspace.mkdir()
        (base / "home").mkdir()
        (base / "config.toml").write_text("")
        sessions = build_corpus(root, workspace, base / "outside")
        nobody_cache = base / "cache-nobody"
        nobody_cache.mkdir()
        chown_to_nobody(nobody_cache)
        env, nobody_env = environment(base, base / "cache"), environment(base, nobody_cache)
        before = fingerprint(root)
        outputs = {}
        # The unprivileged user lists from a folder without sessions: listing the current workspace's
        # folder tries to write its record (best effort; see test_listing_a_store_the_user_cannot_write_still_lists_it).
        for label, nobody, run_env, folder in (("root", False, env, workspace), ("nobody", True, nobody_env, base)):
            common = ["--json", "--state-dir", str(root), "--workspace", str(folder)]
            listed = run(["list", "--all", *common], run_env, cwd=workspace, nobody=nobody)
            assert listed.returncode == 0, (label, listed.stderr[-2000:])
            doctor = run(["doctor", *common], run_env, cwd=workspace, nobody=nobody)
            assert doctor.returncode == 1, (label, doctor.returncode, doctor.stderr[-2000:])  # the store has problems
            outputs[label] = (json_of(listed, "list"), json_of(doctor, "doctor"))
        yield Corpus(base, root, workspace, sessions, env, nobody_env, before, *outputs["root"], *outputs["nobody"])
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_corpus_holds_more_than_30_kinds_each_a_file_in_one_sessions_folder(corpus):
    assert len(KINDS) >= 30 and len({kind.file_id for kind in KINDS}) == len(KINDS)
    names = {name for name in os.listdir(corpus.sessions) if name.endswith(".json")}
    assert names == {f"{kind.file_id}.json" for kind in KINDS}


def _row(listing: dict, path: str) -> dict:
    rows = [row for row in listing["sessions"] if row["path"] == path]
    assert len(rows) == 1, f"{path}: {len(rows)} rows"
    return rows[0]


@pytest.mark.parametrize("kind", KINDS, ids=[kind.name for kind in KINDS])
def test_list_show_meter_and_doctor_exit_as_documented_and_change_nothing(corpus, kind):
    path = corpus.path(kind)
    listing, doctor = ((corpus.nobody_listing, corpus.nobody_doctor) if kind.as_nobody
                       else (corpus.listing, corpus.doctor))
    row = _row(listing, path)
    problems = {p["path"]: p for p in doctor["problems"]}
    warnings = {w["path"]: w for w in doctor["warnings"]}
    if kind.expect in (None, "warning"):
        assert row["problem"] is None, row["problem"]
        assert path not in problems
        assert (path in warnings) == (kind.expect == "warning") == (row["warning"] is not None), (row, warnings)
    else:
        assert row["problem"] and row["problem"]["code"] == kind.expect and row["problem"]["message"], row
        assert problems[path]["code"] == kind.expect

    before = fingerprint(corpus.root)
    common = ["--json", "--state-dir", str(corpus.root), "--workspace", str(corpus.workspace)]
    env = corpus.nobody_env if kind.as_nobody else corpus.env
    for command in ("show", "meter"):
        result = run([command, kind.file_id, *common], env, cwd=corpus.workspace, nobody=kind.as_nobody)
        data = json_of(result, f"{command} {kind.name}")
        assert result.returncode == kind.show_status, (command, result.returncode, data)
        if kind.show_status == 0:
            assert data["session_id"] == kind.file_id
            if command == "show":
                assert bool(data["warnings"]) == (kind.expect == "warning"), data["warnings"]
            else:
                assert isinstance(data["total"], int) and data["total"] > 0
        else:
            error = data["error"]
            assert error["message"] and "\n" not in error["message"], error
            if kind.show_status == 1:
                assert error["code"] == "problem_file" and error["path"] == path, error
            else:
                assert error["code"] in ("usage", "invalid_id"), error
    assert_unchanged(before, corpus.root)


def test_json_output_stays_standard_json_for_a_session_whose_cost_overflows_a_float(corpus):
    kind = next(k for k in KINDS if k.name == "huge_number")
    common = ["--json", "--state-dir", str(corpus.root), "--workspace", str(corpus.workspace)]
    for args in (["list", "--all"], ["show", kind.file_id]):
        json_of(run([*args, *common], corpus.env, cwd=corpus.workspace), args[0], strict=True)


def test_hostile_text_comes_back_literally_in_json(corpus):
    kind = next(k for k in KINDS if k.name == "ansi_and_markup_everywhere")
    common = ["--json", "--state-dir", str(corpus.root), "--workspace", str(corpus.workspace)]
    data = json_of(run(["show", kind.file_id, *common], corpus.env, cwd=corpus.workspace), "show")
    assert HOSTILE in data["summary"] and data["history"][0]["user_message"] == HOSTILE
    assert data["history"][0]["files_read"] == [HOSTILE]


BIG_ROW_BYTES = 5 * 1024 * 1024


async def select_rows(corpus: Corpus, tmp_path: Path, wanted) -> list[str]:
    """Open the TUI on the corpus in the `all workspaces` scope, check every kind is listed as
    expected, select each row `wanted(row)` accepts and return their paths."""
    service = Service(config.load(state_dir=str(corpus.root), config_path=corpus.base / "config.toml"),
                      workspace=corpus.workspace, cache=tmp_path / "cache")
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+a")
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        rows = {row.path: row for row in session_list.rows}
        assert set(rows) == {corpus.path(kind) for kind in KINDS}
        for kind in KINDS:
            expected = None if kind.expect in (None, "warning", "unreadable") else kind.expect  # root reads 000 files
            assert rows[corpus.path(kind)].problem_code == expected, kind.name
        seen = []
        for index, row in enumerate(list(session_list.rows)):
            if not wanted(row):
                continue
            session_list.move_to(index)
            await settle(pilot)
            assert session_list.current.path == row.path
            seen.append(row.path)
            banner = str(app.screen.query_one("#detail-banner").render())
            assert "\x1b" not in banner and banner.strip(), (row.path, banner)
            if row.problem_code is None and row.ref is not None:
                assert app.screen.detail is not None and app.screen.detail.ref == row.ref, row.path
                assert "\x1b" not in app.screen.query_one("#summary-view").text
        assert app.is_running
    assert_unchanged(corpus.fingerprint, corpus.root)
    return seen


async def test_tui_lists_every_kind_in_all_workspaces_and_selecting_each_row_never_crashes(corpus, tmp_path):
    seen = await select_rows(corpus, tmp_path, lambda row: row.size < BIG_ROW_BYTES)
    assert len(seen) == len(KINDS) - 1  # all but the 10 MB message, selected in the slow test below


@pytest.mark.slow
async def test_tui_selecting_the_row_with_a_10_mb_message_never_crashes(corpus, tmp_path):
    # Measured: ~30 s on 2 cores, nearly all in TextArea._render_line -> rich Text.divide over the
    # 10 MB line on every repaint of the Summary view (the UI thread is blocked meanwhile).
    seen = await select_rows(corpus, tmp_path, lambda row: row.size >= BIG_ROW_BYTES)
    assert seen == [corpus.path(next(kind for kind in KINDS if kind.name == "ten_mb_message"))]


def test_no_command_changed_any_file_of_the_state_root(corpus):
    """After every command above (pytest runs a module's tests in order): the SHA-256 of every file,
    every link target and every mode under the state root are what the corpus was built with (Reprise
    may only have added its record of the workspace folder)."""
    assert_unchanged(corpus.fingerprint, corpus.root)


# --- hostile ids as arguments ------------------------------------------------------------------------

HOSTILE_IDS = ["..", "../..", "/", "/etc/passwd", "../../../../tmp/evil", "a/../../b", ".", "~",
               "x\x1b[31mred\x1b[0m", "line\nbreak", "tab\there", "\x07bell", "$(touch pwned)", "*", "x" * 300,
               "\u202eevil", "a\\b"]
ID_COMMANDS = [["show"], ["meter"], ["resume", "--print"], ["rm"], ["trim", "--keep-history", "1"]]


@pytest.mark.parametrize("command", ID_COMMANDS, ids=[c[0] for c in ID_COMMANDS])
def test_hostile_ids_exit_2_or_3_with_one_clean_line_and_create_nothing(command, tmp_path):
    base = tmp_path / "sandbox"
    root, workspace = base / "state", base / "work"
    workspace.mkdir(parents=True)
    factories.write_session(root, workspace, factories.session_bytes(_sid("target"), turns=2))
    env = environment(base, tmp_path / "cache")
    (base / "config.toml").write_text("")
    before = fingerprint(base)
    for hostile in HOSTILE_IDS:
        result = run([*command[:1], hostile, *command[1:], "--state-dir", str(root), "--workspace", str(workspace)],
                     env, cwd=workspace)
        err = result.stderr.decode("utf-8", "replace")
        assert result.returncode in (2, 3), (command, hostile, result.returncode, err)
        assert result.stdout == b"" and err.endswith("\n") and err.count("\n") == 1, (command, hostile, err)
        assert err.startswith("reprise: ") and err[:-1].isprintable(), (command, hostile, err)
    assert fingerprint(base) == before, "a hostile id created or changed a file"
    assert not (tmp_path / "evil").exists() and not list(tmp_path.rglob("pwned"))


# --- the environment ----------------------------------------------------------------------------------

def test_an_unusable_cache_folder_is_said_in_one_line_and_the_listing_reads_through(tmp_path):
    factories.write_session(tmp_path / "state", tmp_path, factories.session_bytes(_sid("valid"), turns=1))
    (tmp_path / "not-a-folder").write_text("")
    env = environment(tmp_path, tmp_path / "not-a-folder")
    result = run(["list", "--all", "--state-dir", str(tmp_path / "state")], env, cwd=tmp_path)
    err = result.stderr.decode(errors="replace")
    assert "Traceback" not in err, err[-1500:]
    assert result.returncode == 0 and err.count("\n") == 1 and "not-a-folder" in err, err
    assert _sid("valid")[:8] in result.stdout.decode() and "1 session shown" in result.stdout.decode()


@needs_root
def test_listing_a_store_the_user_cannot_write_still_lists_it():
    base = permissive_base("reprise-read-only-")
    try:
        root, cache, workspace = base / "state", base / "cache", base / "project"
        (base / "config.toml").write_text("")
        (base / "home").mkdir()
        workspace.mkdir()
        cache.mkdir()
        chown_to_nobody(cache)
        path = factories.write_session(root, workspace, factories.session_bytes(_sid("read-only"), turns=1))
        for directory in (root, root / "workspaces", path.parent.parent, path.parent):
            directory.chmod(0o755)
        before = fingerprint(root)
        result = run(["list", "--json", "--state-dir", str(root), "--workspace", str(workspace)],
                     environment(base, cache), cwd=workspace, nobody=True)
        rows = json_of(result, "list")["sessions"]
        assert result.returncode == 0 and [row["session_id"] for row in rows] == [_sid("read-only")], rows
        assert fingerprint(root) == before
    finally:
        shutil.rmtree(base, ignore_errors=True)


@needs_root
def test_an_unreadable_sessions_folder_is_a_doctor_problem_not_a_silently_empty_workspace():
    base = permissive_base("reprise-unreadable-folder-")
    try:
        root, cache = base / "state", base / "cache"
        (base / "config.toml").write_text("")
        (base / "home").mkdir()
        cache.mkdir()
        chown_to_nobody(cache)
        path = factories.write_session(root, base / "project", factories.session_bytes(_sid("hidden"), turns=1))
        for directory in (root, root / "workspaces", path.parent.parent):
            directory.chmod(0o755)
        path.parent.chmod(0o700)  # root's, unreadable to the unprivileged user
        result = run(["doctor", "--json", "--state-dir", str(root)], environment(base, cache), cwd=base, nobody=True)
        report = json_of(result, "doctor")
        assert result.returncode == 1 and any(str(path.parent) in p["path"] for p in report["problems"]), report
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_workspace_folder_symlinked_out_of_the_root_is_refused_like_a_symlinked_session_file(tmp_path):
    root, outside = tmp_path / "state", tmp_path / "outside"
    factories.write_session(outside, tmp_path / "elsewhere", factories.session_bytes(_sid("escaped"), turns=1))
    key = workspace_key(tmp_path / "elsewhere")
    (root / "workspaces").mkdir(parents=True)
    (root / "workspaces" / key).symlink_to(outside / "workspaces" / key)
    result = run(["list", "--all", "--json", "--state-dir", str(root)], environment(tmp_path, tmp_path / "cache"),
                 cwd=tmp_path)
    rows = json_of(result, "list")["sessions"]
    assert len(rows) == 1 and rows[0]["problem"] and rows[0]["problem"]["code"] == "symlink_outside", rows


# --- 200 MB -----------------------------------------------------------------------------------------

HUGE_BYTES = 200 * 1024 * 1024


def write_huge_session(path: Path, session_id: str) -> None:
    """A valid Fractal file whose one history trace holds ~200 MB of text, written in 1 MB chunks."""
    data = factories.session_dict(session_id, turns=1, statuses=("succeeded",), seed=11)
    data["history"][0]["trace"] = {"steps": [{"output": "@@TRACE@@"}]}
    head, tail = factories.dumps(data).split(b"@@TRACE@@")
    chunk = (b"trace output line of a very long agent run. " * 30_000)[:1024 * 1024]
    with open(path, "wb") as handle:
        handle.write(head)
        for _ in range(HUGE_BYTES // len(chunk)):
            handle.write(chunk)
        handle.write(tail)


@pytest.fixture(scope="module")
def huge():
    base = permissive_base("reprise-huge-")
    root, workspace = base / "state", base / "project"
    workspace.mkdir()
    (base / "config.toml").write_text("")
    (base / "home").mkdir()
    session_id = _sid("two_hundred_megabytes")
    path = root / "workspaces" / workspace_key(workspace) / "sessions" / f"{session_id}.json"
    path.parent.mkdir(parents=True)
    write_huge_session(path, session_id)
    yield base, root, workspace, session_id, path
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
def test_a_200_mb_session_lists_shows_meters_and_doctors_within_bounds_and_stays_unchanged(huge):
    base, root, workspace, session_id, path = huge
    assert path.stat().st_size > HUGE_BYTES
    before = fingerprint(root)
    env = environment(base, base / "cache")
    common = ["--json", "--state-dir", str(root), "--workspace", str(workspace)]
    timings = {}
    for command in (["list", "--all"], ["show", session_id], ["meter", session_id], ["doctor"]):
        started = time.monotonic()
        result = run([*command, *common], env, cwd=workspace, timeout=HUGE_COMMAND_TIMEOUT_S)
        timings[command[0]] = round(time.monotonic() - started, 1)
        data = json_of(result, command[0])
        assert result.returncode == 0, (command, data)
        if command[0] == "list":
            assert data["sessions"][0]["problem"] is None and data["sessions"][0]["size"] == path.stat().st_size
        elif command[0] == "show":
            assert data["session_id"] == session_id and data["turns"] == 1
        elif command[0] == "meter":
            history = next(part for part in data["parts"] if part["name"] == "history")
            assert history["basis"] == "counted" and history["full_chars"] > HUGE_BYTES
        else:
            assert data["ok"] is True and not data["problems"]
    print(f"\n200 MB session, seconds per command: {timings}")
    assert_unchanged(before, root)


@pytest.mark.slow
async def test_tui_opens_and_selects_a_200_mb_session_with_a_large_session_warning(huge, tmp_path):
    base, root, workspace, session_id, path = huge
    service = Service(config.load(state_dir=str(root), config_path=base / "config.toml"), workspace=workspace,
                      cache=tmp_path / "cache")
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        current = app.screen.query_one(SessionList).current
        assert current is not None and current.file_id == session_id and current.problem_code is None
        for _ in range(600):  # the detail loads in a worker; bounded wait
            if app.screen.detail is not None:
                break
            await pilot.pause(0.1)
        await settle(pilot)
        assert app.screen.detail is not None and app.screen.detail.ref.session_id == session_id
        assert "large session" in str(app.screen.query_one("#detail-banner").render())
        await pilot.app.screen.run_action("show_tab('tab-history')")
        await settle(pilot)
        assert "1 turn kept in the file" in app.screen.query_one("#history-view").text
