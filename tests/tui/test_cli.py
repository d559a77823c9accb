"""The `reprise` command end to end: arguments, exit statuses, JSON shapes, files on disk."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprise.core.paths import SessionRef, workspace_key
from reprise.core.sources.fractal.codec import encode
from reprise.core.sources.fractal.store import Store
from reprise.core.sources.fractal.summary import render_summary
from reprise.tui import cli
from reprise.tui.cli import agent_handoff

from ..core.test_store import make_state


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    status, out, _ = run(capsys, *argv, "--json")
    return status, json.loads(out)


def put(state_root: Path, folder: Path | str, session_id: str, turns: int) -> SessionRef:
    ref = SessionRef(workspace_key(folder), session_id, "fractal")
    path = Store(state_root).paths.session_file(ref)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(make_state(turns, session_id)))
    return ref


def test_new_writes_an_empty_fractal_session_and_lists_it_with_its_title(capsys, workspace, isolated_paths):
    status, created = run_json(capsys, "new", "--title", "First try")
    assert status == 0
    session_id = created["session_id"]
    assert len(session_id) == 32 and created["workspace_path"] == str(workspace)
    path = isolated_paths / "workspaces" / workspace_key(workspace) / "sessions" / f"{session_id}.json"
    assert json.loads(path.read_text()) == {"schema_version": 1, "session_id": session_id,
                                            "summary": {"turns": []}, "history": []}
    status, listing = run_json(capsys, "list")
    assert [s["title"] for s in listing["sessions"]] == ["First try"]
    assert listing["total"] == 1 and listing["shown"] == 1


def test_a_command_run_in_process_lets_its_catalog_go_without_a_collection(capsys, workspace, isolated_paths):
    """A caller that goes on (a test, a library) keeps no descriptor of a command's catalog, even
    with the cyclic collector off: a property test runs hundreds of commands in one process."""
    put(isolated_paths, workspace, "a" * 32, 2)
    assert run(capsys, "list")[0] == 0
    gc.collect()
    gc.disable()
    try:
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(5):
            assert run(capsys, "list", "--json")[0] == 0
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        gc.enable()


def test_list_limit_and_sort_and_all_scope(capsys, workspace, isolated_paths, tmp_path):
    put(isolated_paths, workspace, "a" * 32, 1)
    put(isolated_paths, workspace, "b" * 32, 5)
    put(isolated_paths, tmp_path / "elsewhere", "c" * 32, 9)
    _, listing = run_json(capsys, "list", "--sort", "turns")
    assert [s["turns"] for s in listing["sessions"]] == [5, 1]
    _, listing = run_json(capsys, "list", "--all", "--sort", "turns", "--limit", "2")
    assert [s["turns"] for s in listing["sessions"]] == [9, 5]
    assert (listing["shown"], listing["total"], listing["scope"]) == (2, 3, "all workspaces")
    status, out, _ = run(capsys, "list", "--all", "--limit", "1")
    assert "1 of 3 sessions shown" in out


def test_prefix_resolution_unique_ambiguous_unknown_and_across_workspaces(capsys, workspace, isolated_paths, tmp_path):
    put(isolated_paths, workspace, "abcd1111" + "0" * 24, 1)
    put(isolated_paths, workspace, "abcd2222" + "0" * 24, 1)
    put(isolated_paths, tmp_path / "other", "ffff0000" + "0" * 24, 2)
    status, shown = run_json(capsys, "show", "abcd1")
    assert status == 0 and shown["session_id"] == "abcd1111" + "0" * 24
    status, error = run_json(capsys, "show", "abcd")
    assert status == 3 and error["error"]["code"] == "ambiguous" and len(error["error"]["candidates"]) == 2
    status, shown = run_json(capsys, "show", "ffff")
    assert status == 0 and shown["turns"] == 2
    status, error = run_json(capsys, "show", "9999")
    assert status == 3 and error["error"]["code"] == "not_found"
    status, out, err = run(capsys, "show", "abc")
    assert status == 3 and "at least 4" in err and out == ""


@pytest.mark.parametrize("bad", ["../etc", "a/b", "x" * 300, "id\x1b[31m"])
def test_hostile_ids_are_usage_errors_with_one_clean_line(capsys, workspace, bad):
    status, out, err = run(capsys, "show", bad)
    assert status in (2, 3)
    assert out == "" and err.count("\n") == 1 and "\x1b" not in err


def test_show_summary_prints_exactly_fractals_render(capsys, workspace, isolated_paths):
    ref = put(isolated_paths, workspace, "a" * 32, 3)
    status, out, _ = run(capsys, "show", "aaaa", "--summary")
    expected = render_summary(make_state(3, ref.session_id).summary)
    assert status == 0 and out == expected + "\n"


def test_rename_and_pin_show_in_the_listing_with_pinned_first(capsys, workspace, isolated_paths):
    put(isolated_paths, workspace, "a" * 32, 1)
    put(isolated_paths, workspace, "b" * 32, 9)
    assert run(capsys, "rename", "aaaa", "The \x1b[31mparser")[0] == 0
    assert run(capsys, "pin", "aaaa")[0] == 0
    _, listing = run_json(capsys, "list", "--sort", "turns")
    first = listing["sessions"][0]
    assert (first["session_id"], first["pinned"], first["title"]) == ("a" * 32, True, "The [31mparser")
    assert run(capsys, "unpin", "aaaa")[0] == 0
    _, listing = run_json(capsys, "list", "--sort", "turns")
    assert listing["sessions"][0]["session_id"] == "b" * 32


def test_resume_print_gives_the_argv_and_last_picks_the_newest(capsys, workspace, isolated_paths, tmp_path,
                                                                monkeypatch):
    fake = tmp_path / "bin" / "fractal"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    put(isolated_paths, workspace, "a" * 32, 1)
    status, plan = run_json(capsys, "resume", "aaaa", "--print")
    assert status == 0
    assert plan["argv"] == ["fractal", "--workspace", str(workspace), "--resume", "a" * 32]
    assert plan["cwd"] == str(workspace)
    status, out, _ = run(capsys, "resume", "--last", "--print")
    assert out.strip() == f"fractal --workspace {workspace} --resume {'a' * 32}"


def test_resume_execs_the_agent_in_the_sessions_workspace(capsys, workspace, isolated_paths, tmp_path, monkeypatch):
    put(isolated_paths, workspace, "a" * 32, 1)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)
    calls = []
    monkeypatch.setattr(agent_handoff, "exec_handoff", lambda argv, cwd: calls.append((argv, cwd)))
    assert run(capsys, "resume", "aaaa")[0] == 0
    assert calls == [(["fractal", "--workspace", str(workspace), "--resume", "a" * 32], str(workspace))]


def test_resume_without_the_agent_program_says_how_to_configure_it(capsys, workspace, isolated_paths, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    put(isolated_paths, workspace, "a" * 32, 1)
    status, out, err = run(capsys, "resume", "aaaa")
    assert status == 1 and "not found on PATH" in err and "[agent] resume" in err


def test_resume_snapshots_a_file_whose_next_fractal_save_would_drop_data(capsys, workspace, isolated_paths,
                                                                         monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)
    ref = put(isolated_paths, workspace, "a" * 32, 25)
    path = Store(isolated_paths).paths.session_file(ref)
    data = json.loads(path.read_text())
    data["reprise_note"] = "kept"
    path.write_text(json.dumps(data, indent=2) + "\n")
    original = path.read_bytes()
    status, plan = run_json(capsys, "resume", "aaaa", "--print")
    assert status == 0 and plan["snapshot"] is None and "archives the file first" in plan["notes"][0]
    monkeypatch.setattr(agent_handoff, "exec_handoff", lambda argv, cwd: None)
    assert run(capsys, "resume", "aaaa")[0] == 0
    [entry] = Store(isolated_paths).paths.archive_dir(ref).glob("*.json")
    assert entry.read_bytes() == original and path.read_bytes() == original


def test_resume_uses_the_configured_command_with_whole_item_placeholders(capsys, workspace, isolated_paths, tmp_path):
    (tmp_path / "config.toml").write_text(
        '[agent]\nresume = ["sh", "-c", "echo {session_id}", "x", "{session_id}", "--in={workspace}"]\n')
    put(isolated_paths, workspace, "a" * 32, 1)
    _, plan = run_json(capsys, "resume", "aaaa", "--print")
    assert plan["argv"] == ["sh", "-c", "echo {session_id}", "x", "a" * 32, "--in={workspace}"]


def test_workspaces_lists_keys_paths_and_counts(capsys, workspace, isolated_paths, tmp_path):
    put(isolated_paths, workspace, "a" * 32, 1)
    put(isolated_paths, "/home/dev/only-fractal", "b" * 32, 1)
    put(isolated_paths, "/srv/weird name", "c" * 32, 1)
    _, result = run_json(capsys, "workspaces")
    by_key = {w["key"]: w for w in result["workspaces"]}
    assert by_key[workspace_key(workspace)]["path"] == str(workspace)
    assert by_key[workspace_key("/home/dev/only-fractal")]["path"] == "/home/dev/only-fractal"
    assert by_key[workspace_key("/srv/weird name")]["path"] is None
    assert all(w["sessions"] == 1 for w in result["workspaces"])


def test_config_names_the_source_of_each_value(capsys, workspace, tmp_path, monkeypatch):
    (tmp_path / "config.toml").write_text("[meter]\nwarn = 0.5\n")
    monkeypatch.setenv("REPRISE_STATE_DIR", str(tmp_path / "elsewhere"))
    _, result = run_json(capsys, "config")
    values = result["values"]
    assert values["meter.warn"] == {"value": 0.5, "source": f"config file {tmp_path / 'config.toml'}"}
    assert values["store.state_dir"]["source"] == "REPRISE_STATE_DIR"
    assert values["history.max_turns"] == {"value": 20, "source": "default"}
    status, _, err = run(capsys, "--state-dir", str(tmp_path / "flag"), "config")
    status, result = run_json(capsys, "config", "--state-dir", str(tmp_path / "flag"))
    assert result["values"]["store.state_dir"] == {"value": str(tmp_path / "flag"), "source": "--state-dir"}


def test_a_bad_config_file_is_a_usage_error_naming_file_and_key(capsys, workspace, tmp_path):
    (tmp_path / "config.toml").write_text("[meter]\nwarn = 'high'\n")
    status, out, err = run(capsys, "list")
    assert status == 2 and "config.toml" in err and "meter.warn" in err


def test_doctor_reports_problems_and_stale_temp_files_and_cleans_them(capsys, workspace, isolated_paths):
    ref = put(isolated_paths, workspace, "a" * 32, 1)
    sessions = Store(isolated_paths).paths.sessions(ref.workspace_key)
    (sessions / "bad.json").write_bytes(b"\xef\xbb\xbf{}")
    temp = sessions / f".{'a' * 32}.tmp-1-abcd"
    temp.write_bytes(b"partial")
    os.utime(temp, (1, 1))
    os.utime(sessions / "bad.json", (1, 1))
    status, report = run_json(capsys, "doctor")
    assert status == 1
    assert [p["code"] for p in report["problems"]] == ["bom"]
    assert report["temp_files"] == [str(temp)]
    status, report = run_json(capsys, "doctor", "--clean")
    assert report["cleaned"] == [str(temp)] and not temp.exists()


def test_installed_console_script_runs(tmp_path, workspace):
    exe = Path(sys.executable).with_name("reprise")
    assert exe.exists(), "the reprise console script is not installed next to this python"
    result = subprocess.run([str(exe), "list", "--json"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["sessions"] == []


def test_meter_prints_parts_total_state_and_the_measured_figure(capsys, workspace, isolated_paths, tmp_path):
    put(isolated_paths, workspace, "a" * 32, 3)
    (tmp_path / "msg.txt").write_text("please fix the tests " * 100)
    status, result = run_json(capsys, "meter", "aaaa", "--message-file", str(tmp_path / "msg.txt"))
    assert status == 0
    assert [p["name"] for p in result["parts"]] == ["overhead", "agents_md", "summary", "history", "message"]
    assert result["parts"][-1]["full_chars"] == 2100
    assert result["total"] == sum(p["tokens"] for p in result["parts"])
    assert (result["state"], result["exact"], result["encoding"]) == ("ok", False, "o200k_base")
    assert set(result) >= {"window", "percent", "measured", "model", "draft", "window_source"}
    assert (result["window"], result["window_source"]) == (272_000, "model table, pattern gpt-5*")
    assert result["draft"] > 2100 // 4  # the message reaches the summary in full
    status, out, _ = run(capsys, "meter", "aaaa", "--model", "claude-sonnet-4-5", "--message", "hi")
    assert status == 0 and "estimate" in out and "configured" in out
    assert "input budget" in out and "draft" in out


def test_meter_says_how_the_turn_goes_and_refuses_an_unknown_way(capsys, workspace, isolated_paths):
    put(isolated_paths, workspace, "a" * 32, 3)
    _, sent = run_json(capsys, "meter", "aaaa")
    _, resumed = run_json(capsys, "meter", "aaaa", "--via", "resume")
    assert (sent["via"], resumed["via"]) == ("send", "resume")
    assert resumed["total"] == sent["total"]   # Fractal sends the same whichever way the turn goes
    assert (sent["compacts_at"], sent["calibration"]) == (None, None)
    status, out, _ = run(capsys, "meter", "aaaa", "--via", "resume")
    assert status == 0 and "  via           resume  typed into the agent's own terminal UI" in out
    with pytest.raises(SystemExit) as raised:
        cli.main(["meter", "aaaa", "--via", "tui"])
    assert raised.value.code == 2 and "invalid choice: 'tui'" in capsys.readouterr().err


def test_list_sort_cost_fills_and_caches_resume_costs(capsys, workspace, isolated_paths):
    put(isolated_paths, workspace, "a" * 32, 1)
    put(isolated_paths, workspace, "b" * 32, 40)
    _, listing = run_json(capsys, "list", "--sort", "cost")
    costs = [s["resume_cost"] for s in listing["sessions"]]
    assert listing["sessions"][0]["session_id"] == "b" * 32 and costs[0] > costs[1] > 13_700
    _, again = run_json(capsys, "list")
    assert sorted(s["resume_cost"] for s in again["sessions"]) == sorted(costs)


def test_resume_over_the_window_needs_yes_when_not_interactive(capsys, workspace, isolated_paths, tmp_path,
                                                                monkeypatch):
    (tmp_path / "config.toml").write_text(
        '[meter]\nmodel = "small"\n[[meter.models]]\npattern = "small"\nwindow = 1000\n')
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)
    calls = []
    monkeypatch.setattr(agent_handoff, "exec_handoff", lambda argv, cwd: calls.append(argv))
    monkeypatch.setattr(sys, "stdin", open(os.devnull))
    put(isolated_paths, workspace, "a" * 32, 2)
    status, out, err = run(capsys, "resume", "aaaa")
    assert status == 1 and "over the model's context window" in err and "--yes" in err and calls == []
    assert run(capsys, "resume", "aaaa", "--yes")[0] == 0 and len(calls) == 1


def test_trim_previews_applies_and_restore_gives_back_the_original_bytes(capsys, workspace, isolated_paths):
    ref = put(isolated_paths, workspace, "a" * 32, 30)
    path = Store(isolated_paths).paths.session_file(ref)
    data = json.loads(path.read_text())
    for turn in data["summary"]["turns"]:
        turn["agent"]["response"] = "long reply " * 800
    path.write_text(json.dumps(data, indent=2) + "\n")
    original = path.read_bytes()
    status, preview = run_json(capsys, "trim", "aaaa", "--cap-replies", "500", "--dry-run")
    assert status == 0 and preview["changed"] and not preview["applied"]
    assert preview["meter_after"] < preview["meter_before"] and preview["size_after"] < preview["size_before"]
    assert path.read_bytes() == original
    status, out, _ = run(capsys, "trim", "aaaa", "--cap-replies", "500")
    assert status == 0 and "Undo: reprise restore" in out
    assert len(path.read_bytes()) < len(original)
    status, result = run_json(capsys, "restore", "aaaa")
    assert status == 0 and path.read_bytes() == original


def test_trim_fit_that_cannot_fit_changes_nothing_and_says_so(capsys, workspace, isolated_paths):
    ref = put(isolated_paths, workspace, "a" * 32, 3)
    path = Store(isolated_paths).paths.session_file(ref)
    original = path.read_bytes()
    status, out, _ = run(capsys, "trim", "aaaa", "--fit", "100")
    assert status == 1 and "No plan on the ladder" in out and path.read_bytes() == original


def test_trim_fork_writes_a_new_session_titled_trimmed(capsys, workspace, isolated_paths):
    ref = put(isolated_paths, workspace, "a" * 32, 10)
    original = Store(isolated_paths).paths.session_file(ref).read_bytes()
    status, result = run_json(capsys, "trim", "aaaa", "--fold", "3", "--fork")
    assert status == 0 and result["forked"] and result["session_id"] != "a" * 32
    assert Store(isolated_paths).paths.session_file(ref).read_bytes() == original
    _, listing = run_json(capsys, "list")
    fork = next(s for s in listing["sessions"] if s["session_id"] == result["session_id"])
    assert fork["title"] == "message 0 (trimmed)" and fork["turns"] == 4


def test_rm_trash_list_restore_and_purge_that_asks(capsys, workspace, isolated_paths, monkeypatch):
    put(isolated_paths, workspace, "a" * 32, 1)
    put(isolated_paths, workspace, "b" * 32, 1)
    assert run(capsys, "rm", "aaaa")[0] == 0
    _, listing = run_json(capsys, "list")
    assert [s["session_id"] for s in listing["sessions"]] == ["b" * 32]
    _, trash = run_json(capsys, "trash", "list")
    assert [t["session_id"] for t in trash["trash"]] == ["a" * 32]
    assert run_json(capsys, "trash")[1] == trash   # no ACTION: this workspace's list
    assert run(capsys, "trash", "restore", "aaaa")[0] == 0
    assert run(capsys, "rm", "bbbb")[0] == 0
    monkeypatch.setattr(sys, "stdin", open(os.devnull))
    status, out, err = run(capsys, "trash", "purge")
    assert status == 2 and "--yes" in err
    assert Store(isolated_paths).paths.trash_file(SessionRef(workspace_key(workspace), "b" * 32, "fractal")).exists()
    status, result = run_json(capsys, "trash", "purge", "--yes")
    assert status == 0 and [p["session_id"] for p in result["purged"]] == ["b" * 32]


def test_prune_lists_without_yes_and_moves_with_it(capsys, workspace, isolated_paths):
    put(isolated_paths, workspace, "a" * 32, 2)  # history times in January 2026: old
    put(isolated_paths, workspace, "b" * 32, 0)
    status, result = run_json(capsys, "prune", "--older-than", "30d", "--empty")
    assert status == 0 and not result["applied"]
    assert {c["session_id"] for c in result["selected"]} == {"a" * 32, "b" * 32}
    _, listing = run_json(capsys, "list")
    assert len(listing["sessions"]) == 2
    status, result = run_json(capsys, "prune", "--older-than", "30d", "--empty", "--keep-last", "1", "--yes")
    assert result["applied"] and len(result["moved"]) == 1 and len(result["protected"]) == 1


def test_relink_moves_sessions_to_the_new_folder_and_audit_records_it_without_text(capsys, workspace, isolated_paths,
                                                                                    tmp_path):
    put(isolated_paths, "/old/place/project", "a" * 32, 2)
    status, result = run_json(capsys, "relink", "/old/place/project", str(workspace))
    assert status == 0 and result["sessions"] == ["a" * 32]
    _, listing = run_json(capsys, "list")
    assert [s["session_id"] for s in listing["sessions"]] == ["a" * 32]
    _, audit = run_json(capsys, "audit")
    assert {r["op"] for r in audit["audit"]} == {"relink"}  # recorded in the old and the new workspace
    assert "message 0" not in json.dumps(audit)


def test_listing_a_folder_with_fractal_sessions_records_the_folder_behind_its_key(capsys, workspace, isolated_paths):
    ref = put(isolated_paths, workspace, "a" * 32, 1)
    record = Store(isolated_paths).paths.workspace_record(ref.workspace_key)
    assert not record.exists()
    run_json(capsys, "list")
    assert json.loads(record.read_text()) == {"path": str(workspace)}


@pytest.mark.parametrize(("argv", "named"), [
    (["list", "--json"], "list"), (["--json", "--state-dir", "list", "show", "x"], "show"),
    (["--workspace=/tmp", "--demo", "trash", "list"], "trash"), (["--agent", "echo"], ""), ([], ""),
    (["--help"], None), (["--work", "/tmp", "list"], None), (["lst"], None), (["-h", "list"], None),
])
def test_the_command_line_builds_only_the_parser_of_the_subcommand_it_plainly_names(argv, named):
    assert cli.command_named(argv) == named


@pytest.mark.parametrize("argv", [
    ["list", "--all", "--sort", "next", "--source", "fractal", "--json"], ["--json", "show", "abc", "--raw"],
    ["trash", "purge", "--older-than", "2w", "--yes"], ["archive", "show", "abc", "123456", "--output", "f"],
    ["pick", "--command"], ["unpin", "abc"], ["workspaces"], ["--state-dir", "/s", "keep", "abc"], [],
    ["--demo", "--agent", "echo", "--workspace", "/w"],
])
def test_a_subcommand_parsed_alone_gives_what_the_whole_parser_gives(argv):
    whole = cli.build_parser().parse_args(argv)
    assert cli.build_parser(cli.command_named(argv)).parse_args(argv) == whole
    assert (cli.command_named(argv) or None) == whole.command


def test_a_command_run_in_this_process_leaves_no_object_frozen(capsys, workspace, isolated_paths):
    import gc

    assert run(capsys, "list", "--json")[0] == 0
    assert gc.get_freeze_count() == 0 and gc.isenabled()
