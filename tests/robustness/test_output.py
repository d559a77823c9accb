"""Output and text: a closed pipe ends every command quietly (status 141, nothing on stderr, no
error document on the broken stdout); ids, titles and paths holding bidi, zero-width, control or
newline characters are shown escaped in every human output of the CLI and the TUI, while JSON
keeps them exact; `reprise pick` reads keys from and draws on /dev/tty whatever stdin, stdout and
stderr are, prints its result on the original stdout, and exits 2 without a terminal."""

from __future__ import annotations

import fcntl
import json
import os
import select
import struct
import subprocess
import sys
import termios
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

from reprise.core import config
from reprise.core.errors import RepriseError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.session_meta import SessionMeta
from reprise.core.sources.fractal.store import Store
from reprise.tui import cli

from .. import factories
from ..tui.conftest import build_app, settle

REPRISE = Path(sys.executable).with_name("reprise")
# Every kind of character that must never reach a terminal from a name: bidi overrides and isolates,
# marks, zero-width characters, C0 (ESC, BEL) and C1 (CSI) controls, newline, tab, carriage return.
FOLDER = "proj\u202eevil\u2066\u200f\u061c\n\x1b]0;pwned\x07\tx"
SESSION_ID = "c0ffee\u202e\u200d\u2066\ufeffid"
TRASHED_ID = "deadbeef\u200b\u2060gone"
TITLE = "T\u202eevil\u200b\x1b[2J\x9b\n\tok"
TRASHED_TITLE = "bye\u202e\n\x1b[31m"
BAD_FILE_ID = "bad\n\x1b[2J\u202eid"
READ_PATH = "src/\u202eevil\n\x1b[1m.py"
STATE_DIR = "state\u202e\n\x1b[7m"
NEEDLE = "needleword"
# How each is shown to people: C0 controls as control pictures, newline and tab as \\n and \\t, every
# other invisible or reordering character as a \\u escape.
SHOWN = {
    FOLDER: "proj\\u202eevil\\u2066\\u200f\\u061c\\n␛]0;pwned␇\\tx",
    SESSION_ID: "c0ffee\\u202e\\u200d\\u2066\\ufeffid",
    TRASHED_ID: "deadbeef\\u200b\\u2060gone",
    TITLE: "T\\u202eevil\\u200b␛[2J\\u009b\\n\\tok",
    TRASHED_TITLE: "bye\\u202e\\n␛[31m",
    BAD_FILE_ID: "bad\\n␛[2J\\u202eid",
    READ_PATH: "src/\\u202eevil\\n␛[1m.py",
    STATE_DIR: "state\\u202e\\n␛[7m",
}


def shown(text: str | Path, width: int | None = None) -> str:
    """`text` as people must see it (its hostile names escaped), cut to `width` with an ellipsis."""
    text = str(text)
    for raw, visible in SHOWN.items():
        text = text.replace(raw, visible)
    assert not unsafe_characters(text), text
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


def unsafe_characters(text: str) -> list[str]:
    """The characters of a human output that a terminal would interpret, hide or reorder."""
    return sorted({f"U+{ord(ch):04X}" for ch in text
                   if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")})


@dataclass
class Hostile:
    root: Path
    workspace: Path
    state: Path
    ref: SessionRef
    bad_path: Path


def hostile_store(root: Path) -> Hostile:
    """A workspace folder, session ids, titles, a file read and a file name, each holding hostile characters."""
    workspace = root / FOLDER
    workspace.mkdir(parents=True)
    state = root / "state"
    data = factories.session_dict(SESSION_ID, turns=3)
    data["summary"]["turns"][0]["user"]["message"] = f"find the {NEEDLE} here"
    data["history"][0]["user_message"] = f"find the {NEEDLE} here"
    for entry in data["history"]:
        entry["files_read"] = [READ_PATH]
    factories.write_session(state, workspace, factories.dumps(data), SESSION_ID)
    factories.write_session(state, workspace, factories.session_bytes(TRASHED_ID, turns=1), TRASHED_ID)
    bad_path = factories.write_session(state, workspace, b'{"schema_version": 1, "session_id": ', BAD_FILE_ID)
    store = Store(state)
    ref = SessionRef(workspace_key(workspace), SESSION_ID, "fractal")
    store.record_workspace(ref.workspace_key, workspace)
    store.write_meta(ref, SessionMeta(title=TITLE))
    store.write_meta(SessionRef(ref.workspace_key, TRASHED_ID, "fractal"), SessionMeta(title=TRASHED_TITLE))
    return Hostile(root, workspace, state, ref, bad_path)


@pytest.fixture
def hostile(tmp_path, monkeypatch) -> Hostile:
    found = hostile_store(tmp_path)
    monkeypatch.setenv("REPRISE_STATE_DIR", str(found.state))
    monkeypatch.chdir(found.workspace)
    return found


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


# --- escaped for people, exact in JSON ------------------------------------------------------------------

NAMED_CHARACTERS = ([chr(c) for c in range(0x202A, 0x202F)] + [chr(c) for c in range(0x2066, 0x206A)]
                    + ["\u200e", "\u200f", "\u061c", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff",
                       "\u2028", "\u2029", "\x85", "\x9b"] + [chr(c) for c in range(0x20)] + ["\x7f"])


def test_every_bidi_zero_width_and_control_character_is_shown_as_a_visible_escape():
    from reprise.tui.text import clipped
    from reprise.tui.text import safe_line as show

    for ch in NAMED_CHARACTERS:
        visible = show(f"a{ch}b")
        assert ch not in visible and not unsafe_characters(visible), (repr(ch), visible)
        assert visible.startswith("a") and visible.endswith("b") and len(visible) > 2, (repr(ch), visible)  # shown
    assert show("line\nnext\tcell\r") == "line\\nnext\\tcell\\r"
    assert show("日本語 café e\u0301 👩") == "日本語 café e\u0301 👩"  # printable text is left alone
    assert clipped("\u202e" * 3, 8) == "\\u202e\\…"  # escaped first, then cut: the cut cannot uncover a control


def test_every_human_output_escapes_hostile_ids_titles_and_paths(hostile, capsys, tmp_path):
    """Each command's human output holds no character a terminal would interpret, and shows each
    name it prints in its escaped form, on one line."""
    bad_path = str(hostile.bad_path)
    empty_state = tmp_path / STATE_DIR
    empty_state.mkdir()
    commands: list[tuple[tuple[str, ...], list[str]]] = [
        (("list",), [shown(TITLE, 42), shown(BAD_FILE_ID, 9), shown(TRASHED_TITLE, 42)]),
        (("list", "--all"), [shown(TITLE, 42)]),
        (("list", "--state-dir", str(empty_state)), [shown(empty_state)]),
        (("show", SESSION_ID), [shown(SESSION_ID), shown(TITLE), shown(hostile.workspace)]),
        (("show", SESSION_ID, "--raw"), [shown(SESSION_ID), shown(TITLE), shown(hostile.workspace),
                                         shown(READ_PATH)]),
        (("workspaces",), [shown(hostile.workspace)]),
        (("meter", SESSION_ID), [shown(SESSION_ID)]),
        (("trim", SESSION_ID, "--keep-history", "1", "--dry-run"), [shown(SESSION_ID)]),
        (("pin", SESSION_ID), [shown(SESSION_ID)]),
        (("rename", SESSION_ID, "plain"), [shown(SESSION_ID)]),
        (("search", NEEDLE), [shown(SESSION_ID, 9)]),
        (("doctor",), [shown(bad_path)]),
        (("show", BAD_FILE_ID[:4]), [shown(bad_path)]),
        (("show", "zz\u202enope\n"), ["'zz\\u202enope\\n'"]),
        (("rm", TRASHED_ID), [shown(TRASHED_ID)]),
        (("trash", "list"), [shown(TRASHED_TITLE, 50), shown(TRASHED_ID, 9)]),
        (("audit",), [shown(TRASHED_ID, 32)]),
        (("doctor", "--state-dir", str(empty_state)), [shown(empty_state)]),
        (("list", TITLE), [shown(TITLE)]),
    ]
    failures = {}
    for argv, expected in commands:
        try:
            _, out, err = run(capsys, *argv)
        except SystemExit:  # argparse's usage error
            out, err = capsys.readouterr()
        problems = [f"unsafe {unsafe_characters(text)} in {name}" for name, text in (("stdout", out), ("stderr", err))
                    if unsafe_characters(text)]
        problems += [f"{piece!r} not shown" for piece in expected if piece not in out + err]
        if problems:
            failures[" ".join(argv)] = problems + [(out + err)[-600:]]
    assert not failures, json.dumps(failures, indent=1, ensure_ascii=True)


def test_json_keeps_hostile_ids_titles_and_paths_exact_while_the_table_escapes_them(hostile, capsys):
    _, table, _ = run(capsys, "list")
    assert shown(TITLE, 42) in table and not unsafe_characters(table)
    _, out, _ = run(capsys, "list", "--json")
    rows = {row["session_id"]: row for row in json.loads(out)["sessions"]}
    assert rows[SESSION_ID]["title"] == TITLE and rows[SESSION_ID]["workspace_path"] == str(hostile.workspace)
    assert BAD_FILE_ID in rows
    _, out, _ = run(capsys, "show", SESSION_ID, "--json")
    detail = json.loads(out)
    assert (detail["title"], detail["workspace_path"]) == (TITLE, str(hostile.workspace))
    assert all(entry["files_read"] == [READ_PATH] for entry in detail["history"])
    _, out, _ = run(capsys, "workspaces", "--json")
    assert str(hostile.workspace) in [info["path"] for info in json.loads(out)["workspaces"]]
    status, out, _ = run(capsys, "show", BAD_FILE_ID[:4], "--json")
    assert status != 0 and json.loads(out)["error"]["path"] == str(hostile.bad_path)


# --- the TUI --------------------------------------------------------------------------------------------

async def test_the_tui_shows_hostile_names_escaped_in_rows_banner_header_dialogs_and_toasts(tmp_path):
    found = hostile_store(tmp_path)
    service = Service(config.load(state_dir=str(found.state)), workspace=found.workspace, cache=tmp_path / "cache")
    app = build_app(service)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        session_list = screen.query_one("#sessions")
        session_list.move_to(next(i for i, row in enumerate(session_list.rows) if row.file_id == SESSION_ID))
        await settle(pilot)
        row = "".join(segment.text for segment in session_list.render_line(session_list.cursor))
        assert shown(TITLE) in row and not unsafe_characters(row), row
        screen.query_one("#detail").show_ids = True   # ids are shown on demand (I)
        await settle(pilot)
        banner = str(screen.query_one("#detail-banner").render())
        assert shown(SESSION_ID) in banner and shown(TITLE) in banner, banner
        assert shown(found.workspace) in banner and not unsafe_characters(banner), banner
        header = str(screen.query_one("#header").render())
        assert shown(found.workspace) in header and not unsafe_characters(header), header

        await pilot.press("ctrl+x")
        await settle(pilot)
        question = str(app.screen.query_one(".question").render())
        # The dialog names the session by its title on one line: escaped, its newline and tab a space.
        assert "“T\\u202eevil\\u200b␛[2J\\u009b ok”" in question and not unsafe_characters(question), question
        await pilot.press("escape")
        await settle(pilot)

        await pilot.press("ctrl+r")
        await settle(pilot)
        field = app.screen.query_one("#text-input")
        assert field.value == shown(TITLE) and not unsafe_characters(field.value)
        await pilot.press("escape")
        await settle(pilot)

        session_list.move_to(next(i for i, row in enumerate(session_list.rows) if row.file_id == BAD_FILE_ID))
        await settle(pilot)
        problem = str(screen.query_one("#detail-banner").render())
        assert shown(found.bad_path) in problem and not unsafe_characters(problem), problem
        row = "".join(segment.text for segment in session_list.render_line(session_list.cursor))
        assert not unsafe_characters(row), row

        app.report_error(service_error(service, found))
        await settle(pilot)
        toasts = [str(toast.message) for toast in app._notifications]
        assert any(shown(found.bad_path) in text for text in toasts), toasts
        assert not any(unsafe_characters(text) for text in toasts), toasts


def service_error(service: Service, found: Hostile) -> RepriseError:
    try:
        service.resolve(BAD_FILE_ID)
    except RepriseError as exc:  # the error names the file with the hostile name
        return exc
    raise AssertionError("resolving a file whose name is not an id must fail")


# --- closed pipes ---------------------------------------------------------------------------------------

def cli_env(found: Hostile) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPRISE_", "FRACTAL_"))}
    env.update(REPRISE_CONFIG=str(found.root / "config.toml"), REPRISE_CACHE_DIR=str(found.root / "cache"),
               REPRISE_STATE_DIR=str(found.state), TERM="xterm-256color")
    return env


@pytest.fixture
def hostile_cli(tmp_path) -> Hostile:
    return hostile_store(tmp_path)


@pytest.mark.parametrize("argv", [
    ("list", "--json"), ("list",), ("show", SESSION_ID), ("show", SESSION_ID, "--json"), ("search", NEEDLE),
    ("audit",), ("workspaces",), ("doctor",), ("show", "nosuchsession", "--json"),
], ids=lambda argv: " ".join(argv).encode("unicode_escape").decode())
def test_a_closed_stdout_ends_the_command_quietly_with_status_141(hostile_cli, argv):
    """The reader is gone before the command writes: no traceback, no "Broken pipe" line, no error
    document; the status is the one a shell reports for a Unix tool stopped by SIGPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([str(REPRISE), *argv], stdin=subprocess.DEVNULL, stdout=write_end,
                                stderr=subprocess.PIPE, env=cli_env(hostile_cli), cwd=hostile_cli.workspace,
                                timeout=120, check=False)
    finally:
        os.close(write_end)
    assert result.stderr.decode(errors="replace") == ""
    assert result.returncode == 141


def test_head_reading_one_line_of_a_long_output_stops_reprise_quietly(tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    state = tmp_path / "state"
    session_id = factories.session_id_for("long")
    factories.write_session(state, workspace, factories.session_bytes(session_id, turns=40, response_chars=20_000))
    found = Hostile(tmp_path, workspace, state, SessionRef(workspace_key(workspace), session_id, "fractal"), workspace)
    result = subprocess.run(["bash", "-o", "pipefail", "-c", f'"{REPRISE}" show {session_id} --summary | head -1'],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, env=cli_env(found),
                            cwd=workspace, timeout=120, check=False)
    assert result.stderr == ""
    assert result.stdout.count("\n") == 1
    assert result.returncode == 141


# --- reprise pick on /dev/tty ------------------------------------------------------------------------------

def _drain(master: int, seen: bytearray, until, child: subprocess.Popen, limit: float = 90.0) -> bool:
    """Read the pty until `until(seen)` holds or the child ends; bounded so a hang fails instead of blocking."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if until(seen):
            return True
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                seen.extend(os.read(master, 65536))
            except OSError:  # the child closed its side
                return until(seen)
        elif child.poll() is not None:
            return until(seen)
    return until(seen)


@pytest.mark.parametrize("flag", ["--args", "--command"])
def test_pick_with_stdin_stdout_and_stderr_redirected_draws_on_the_tty_and_prints_on_the_original_stdout(tmp_path,
                                                                                                       flag):
    workspace = tmp_path / "project"
    workspace.mkdir()
    state = tmp_path / "state"
    session_id = factories.session_id_for("pick me")
    factories.write_session(state, workspace, factories.session_bytes(session_id, turns=2))
    ref = SessionRef(workspace_key(workspace), session_id, "fractal")
    Store(state).write_meta(ref, SessionMeta(title="pickmetitle"))
    found = Hostile(tmp_path, workspace, state, ref, workspace)
    master, slave = os.openpty()  # the slave stays open here: a pty nobody holds reads as EIO
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    out_path, err_path = tmp_path / "out.txt", tmp_path / "err.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        # setsid --ctty: a new session whose controlling terminal is the pty (setsid's stdin); then reprise
        # runs with stdin from /dev/null, stdout and stderr in files: only /dev/tty leads to the pty.
        child = subprocess.Popen(["setsid", "--ctty", "sh", "-c", f'exec "$0" pick {flag} </dev/null', str(REPRISE)],
                                 stdin=slave, stdout=out, stderr=err, env=cli_env(found), cwd=workspace)
    try:
        seen = bytearray()
        assert _drain(master, seen, lambda s: b"pickmetitle" in s, child), bytes(seen[-2000:])
        os.write(master, b"\r")
        _drain(master, seen, lambda s: child.poll() is not None, child)
        assert child.wait(timeout=60) == 0, err_path.read_bytes()[-2000:]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(master)
        os.close(slave)
    arguments = f"--workspace {workspace} --resume {session_id}"
    wanted = arguments if flag == "--args" else f"cd {workspace} && fractal {arguments}"
    assert out_path.read_text() == f"{wanted}\n"
    assert err_path.read_bytes() == b""


@pytest.mark.parametrize(("argv", "said"), [(("pick",), "pick needs a terminal"),
                                           ((), "reprise needs a terminal")], ids=("pick", "tui"))
def test_pick_and_the_tui_without_a_terminal_exit_2_saying_they_need_one(hostile_cli, argv, said):
    """No controlling terminal (a new session) and stdin from /dev/null: exit 2 at once, not a spin."""
    result = subprocess.run([str(REPRISE), *argv], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            env=cli_env(hostile_cli), cwd=hostile_cli.workspace, start_new_session=True, timeout=60,
                            check=False)
    assert result.returncode == 2
    assert said in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""
