"""Claude Code's store through Reprise: listed beside Fractal's, read, searched, metered and
resumed, from a copy of the real store in tests/fixtures/claude-store (made by Claude Code 2.1.332)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprise.core import contract
from reprise.core.errors import RepriseError, UsageError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from tests import factories

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "claude-store" / "projects"
RECORDED = "/tmp/reprise-claude-fixture/work"
THREE_TURNS = "33333333-3333-4333-8333-333333333333"
NAMED = "dddddddd-dddd-4ddd-8ddd-dddddddddddd"
BASH = "55555555-5555-4555-8555-555555555555"
COMPACTED = "77777777-7777-4777-8777-777777777777"
INTERACTIVE = "ffffffff-ffff-4fff-8fff-ffffffffffff"
ALPHA = {path.stem for path in (FIXTURE / "-tmp-reprise-claude-fixture-work-alpha").glob("*.jsonl")}
EVERY = {path.stem for path in FIXTURE.glob("*/*.jsonl")}


def copy_store(claude_root: Path, work: Path) -> dict[str, Path]:
    """The fixture store under `claude_root`, its recorded folders moved to real folders under `work`
    (slug folders renamed the way Claude Code names them); {folder name: folder}."""
    folders = {name: work / name for name in ("alpha", "beta")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    for slug_dir in FIXTURE.iterdir():
        name = slug_dir.name.rsplit("-", 1)[-1]
        target_dir = claude_root / "projects" / "".join(c if c.isalnum() else "-" for c in str(folders[name]))
        target_dir.mkdir(parents=True, exist_ok=True)
        for file in slug_dir.glob("*.jsonl"):
            data = file.read_bytes().replace(f"{RECORDED}/{name}".encode(), str(folders[name]).encode())
            (target_dir / file.name).write_bytes(data)
    return folders


@pytest.fixture
def store(tmp_path):
    claude_root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    folders = copy_store(claude_root, tmp_path / "work")
    return claude_root, folders


def service_in(folder: Path) -> Service:
    return Service.from_environment(workspace=str(folder))


def rows_by_id(listing):
    return {row.file_id: row for row in listing.rows}


def test_claude_sessions_list_beside_fractal_ones_in_their_folder(store, isolated_paths):
    _, folders = store
    factories.write_session(isolated_paths, folders["alpha"], factories.session_bytes("fractal-one"))
    service = service_in(folders["alpha"])
    listing = service.list_sessions()
    service.load_details(listing.rows)
    by_source = {(row.source, row.file_id) for row in listing.rows}
    assert ("fractal", "fractal-one") in by_source
    assert {file_id for source, file_id in by_source if source == "claude"} == ALPHA
    assert {THREE_TURNS, BASH, COMPACTED} <= ALPHA
    for row in listing.rows:
        assert row.workspace_key == workspace_key(folders["alpha"])
    rows = rows_by_id(listing)
    assert rows[THREE_TURNS].turns == 3
    assert rows[THREE_TURNS].workspace_path == str(folders["alpha"])
    assert rows[THREE_TURNS].fields.first_message == "Start a plan MARKfirst"
    assert rows[THREE_TURNS].hidden_by_agent   # made with `claude -p`


def test_every_session_lists_across_folders_with_titles_and_hidden_marks(store):
    _, folders = store
    service = service_in(folders["beta"])
    listing = service.list_sessions(all_workspaces=True, sources=["claude"])
    service.load_details(listing.rows)
    documents = {doc["session_id"]: doc for doc in contract.dump(contract.session_list(listing))["sessions"]}
    assert set(documents) == EVERY
    assert documents[NAMED]["title"] == "Named by the compat scenario"
    assert documents[NAMED]["agent_title"] == "Named by the compat scenario"
    assert documents[NAMED]["source"] == "claude"
    assert documents[NAMED]["workspace_path"] == str(folders["beta"])
    assert documents[INTERACTIVE]["hidden_by_agent"] is False
    assert documents[THREE_TURNS]["hidden_by_agent"] is True
    interactive_only = service.list_sessions(all_workspaces=True, sources=["claude"], hide_agent_hidden=True)
    assert [row.file_id for row in interactive_only.rows] == [INTERACTIVE]
    assert interactive_only.total == len(EVERY) and interactive_only.hidden_left_out == len(EVERY) - 1


def test_a_source_that_is_off_is_refused_with_why(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "nowhere"))
    service = Service.from_environment(workspace=str(tmp_path))
    assert "claude" not in service.sources
    with pytest.raises(UsageError, match="no Claude Code store"):
        service.list_sessions(sources=["claude"])
    choice = service.loaded.choices["claude"]
    assert not choice.enabled and str(tmp_path / "nowhere") in choice.why


def test_a_grown_file_is_read_from_where_the_last_read_ended(store):
    claude_root, folders = store
    service = service_in(folders["alpha"])
    service.list_sessions()
    path = Path(service.session_path(SessionRef(workspace_key(folders["alpha"]), THREE_TURNS, "claude")))
    lines = path.read_bytes().splitlines(keepends=True)
    prompt = next(json.loads(line) for line in lines if b'"Finish the plan' in line and b'"type":"user"' in line)
    prompt["uuid"], prompt["parentUuid"] = "aaaaaaaa-0000-4000-8000-000000000001", prompt["uuid"]
    prompt["message"]["content"] = "One more step MARKfourth"
    added = (json.dumps(prompt, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    listing_source = service.sources["claude"].listing
    before = listing_source.bytes_read
    with path.open("ab") as handle:
        handle.write(added)
    listing = service.list_sessions()
    service.load_details(listing.rows)
    row = rows_by_id(listing)[THREE_TURNS]
    assert row.turns == 4 and row.fields.last_message == "One more step MARKfourth"
    assert listing_source.bytes_read - before == len(added)   # the other files, read again while recent, took 0


def test_a_file_idle_for_days_keeps_no_fold_and_is_read_whole_when_it_grows(store):
    from reprise.core.sources.jsonl_listing import FOLD_KEPT_NS

    _, folders = store
    service = service_in(folders["alpha"])
    path = Path(service.session_path(SessionRef(workspace_key(folders["alpha"]), THREE_TURNS, "claude")))
    idle = time.time() - FOLD_KEPT_NS / 1e9 - 3600
    os.utime(path, (idle, idle))
    listing_source = service.sources["claude"].listing
    assert rows_by_id(service.list_sessions())[THREE_TURNS].turns == 3
    lines = path.read_bytes().splitlines(keepends=True)
    prompt = next(json.loads(line) for line in lines if b'"Finish the plan' in line and b'"type":"user"' in line)
    prompt["uuid"], prompt["parentUuid"] = "aaaaaaaa-0000-4000-8000-000000000001", prompt["uuid"]
    prompt["message"]["content"] = "One more step MARKfourth"
    before = listing_source.bytes_read
    with path.open("ab") as handle:
        handle.write((json.dumps(prompt, separators=(",", ":"), ensure_ascii=False) + "\n").encode())
    listing = service.list_sessions()
    service.load_details(listing.rows)
    row = rows_by_id(listing)[THREE_TURNS]
    assert row.turns == 4 and row.fields.last_message == "One more step MARKfourth"
    assert listing_source.bytes_read - before == path.stat().st_size   # no fold kept: read whole


def test_a_rewritten_file_is_read_whole_again(store):
    _, folders = store
    service = service_in(folders["alpha"])
    service.list_sessions()
    ref = SessionRef(workspace_key(folders["alpha"]), THREE_TURNS, "claude")
    path = Path(service.session_path(ref))
    single = (FIXTURE / "-tmp-reprise-claude-fixture-work-alpha" / "11111111-1111-4111-8111-111111111111.jsonl")
    replacement = single.read_bytes().replace(f"{RECORDED}/alpha".encode(), str(folders["alpha"]).encode())
    replacement += b"\n" * (path.stat().st_size + 10 - len(replacement)) if len(replacement) < path.stat().st_size \
        else b""
    path.write_bytes(replacement)   # longer than before, but not the same file grown
    listing = service.list_sessions()
    service.load_details(listing.rows)
    row = rows_by_id(listing)[THREE_TURNS]
    assert row.turns == 1 and row.fields.first_message == "What is in this folder? MARKsolo"


def test_show_reads_every_prompt_and_reply_in_order(store):
    _, folders = store
    service = service_in(folders["alpha"])
    detail = service.show(service.resolve(THREE_TURNS))
    assert [turn.user_message for turn in detail.transcript.turns] == [
        "Start a plan MARKfirst", "Continue the plan MARKsecond", "Finish the plan MARKthird"]
    assert all(f"REPLY{word}" in turn.reply for turn, word in
               zip(detail.transcript.turns, ("first", "second", "third"), strict=True))
    document = contract.dump(contract.session_detail(detail))
    assert document["transcript"]["source"] == "claude" and document["turns"] == 3


def test_search_finds_a_reply_word_and_a_tool_output(store):
    _, folders = store
    service = service_in(folders["alpha"])
    assert {hit.row.file_id for hit in service.search("REPLYbeta", all_workspaces=True)} \
        == {"bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"}   # on a cold catalog, in every workspace
    assert {hit.row.file_id for hit in service.search("REPLYsecond")} >= {THREE_TURNS}
    assert {hit.row.file_id for hit in service.search("OUTWORD42")} == {BASH}


def test_the_meter_measures_the_context_claude_code_recorded(store):
    _, folders = store
    service = service_in(folders["alpha"])
    ref = service.resolve(THREE_TURNS)
    path = Path(service.session_path(ref))
    usages = [json.loads(line)["message"]["usage"] for line in path.read_bytes().splitlines()
              if b'"type":"assistant"' in line]
    newest = usages[-1]
    expected = newest["input_tokens"] + newest["cache_creation_input_tokens"] + newest["cache_read_input_tokens"]
    result = service.measure(ref)
    assert result.part("measured").tokens == expected and result.part("measured").basis == "measured"
    assert not result.exact
    drafted = service.measure(ref, "a draft of a few words")
    assert drafted.total > expected and drafted.part("message").basis == "calibrated estimate"
    listing = service.list_sessions()
    assert rows_by_id(listing)[THREE_TURNS].context_tokens == expected


def test_resume_runs_claude_in_the_recorded_folder(store):
    _, folders = store
    service = service_in(folders["beta"])
    plan = service.resume_plan(service.resolve(THREE_TURNS), for_exec=False)
    assert plan.argv == ["claude", "--resume", THREE_TURNS]
    assert plan.cwd == str(folders["alpha"])


def test_resume_of_a_session_whose_folder_is_gone_runs_from_here_and_says_so(store):
    _, folders = store
    shutil.rmtree(folders["alpha"])
    service = service_in(folders["beta"])
    plan = service.resume_plan(service.resolve(THREE_TURNS), for_exec=False)
    assert plan.cwd == str(folders["beta"])
    assert any("no longer exists" in note for note in plan.notes)


def test_renames_and_pins_are_reprises_own_and_never_touch_claudes_file(store):
    _, folders = store
    service = service_in(folders["alpha"])
    ref = service.resolve(THREE_TURNS)
    path = Path(service.session_path(ref))
    before = path.read_bytes()
    service.rename(ref, "My plan")
    service.set_pinned(ref, True)
    assert path.read_bytes() == before
    row = rows_by_id(service.list_sessions())[THREE_TURNS]
    assert (row.title, row.pinned) == ("My plan", True)
    assert not any(Path(os.environ["CLAUDE_CONFIG_DIR"]).rglob("*.json"))   # nothing of Reprise's in the root


def test_bad_files_are_named_and_the_rest_lists(store):
    claude_root, folders = store
    slug_dir = next((claude_root / "projects").iterdir())
    (slug_dir / "abababab-abab-4bab-8bab-abababababab.jsonl").write_bytes(b"\x00\xff not json\n{\"type\":\n")
    os.mkfifo(slug_dir / "cdcdcdcd-cdcd-4dcd-8dcd-cdcdcdcdcdcd.jsonl")
    service = service_in(folders["alpha"])
    listing = service.list_sessions(all_workspaces=True, sources=["claude"])
    service.load_details(listing.rows)
    rows = rows_by_id(listing)
    assert rows["cdcdcdcd-cdcd-4dcd-8dcd-cdcdcdcdcdcd"].problem_code == "not_regular"
    assert "line 1" in (rows["abababab-abab-4bab-8bab-abababababab"].fields.warning or "")
    assert len(rows) == len(EVERY) + 2


def run_cli(*args: str, cwd: Path, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = os.environ.copy()
    if path is not None:
        env["PATH"] = f"{path}:{env['PATH']}"
    return subprocess.run([sys.executable, "-m", "reprise.tui.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120, stdin=subprocess.DEVNULL)


def test_the_command_line_narrows_by_source_and_shows_the_sources(store):
    _, folders = store
    listed = run_cli("list", "--all", "--source", "claude", "--json", cwd=folders["alpha"])
    assert listed.returncode == 0, listed.stderr
    assert {doc["source"] for doc in json.loads(listed.stdout)["sessions"]} == {"claude"}
    interactive = run_cli("list", "--all", "--interactive", cwd=folders["alpha"])
    assert (f"1 of {len(EVERY)} sessions shown ({len(EVERY) - 1} that the agent's own picker hides left out)"
            in interactive.stdout)
    config = json.loads(run_cli("config", "--json", cwd=folders["alpha"]).stdout)
    claude = next(source for source in config["sources"] if source["name"] == "claude")
    assert claude["enabled"] and claude["roots"] == [os.environ["CLAUDE_CONFIG_DIR"]]
    printed = run_cli("resume", "--print", THREE_TURNS[:8], cwd=folders["beta"])
    assert printed.stdout.strip() == f"claude --resume {THREE_TURNS}"


def _age(path: Path, days: float) -> None:
    moment = time.time() - days * 86400
    os.utime(path, (moment, moment))


def test_rows_say_when_claude_code_deletes_them_and_the_doctor_lists_those_at_risk(store):
    _, folders = store
    service = service_in(folders["alpha"])
    path = Path(service.session_path(service.resolve(THREE_TURNS)))
    _age(path, 27.5)
    listing = service.list_sessions()
    service.load_details(listing.rows)
    row = rows_by_id(listing)[THREE_TURNS]
    assert row.agent_deletion is not None and row.agent_deletion.phrase == "deleted by Claude Code in 2 days"
    assert row.agent_deletion.at_risk
    fresh = rows_by_id(listing)[BASH].agent_deletion
    assert fresh is not None and not fresh.at_risk
    documents = contract.dump(contract.session_list(listing))["sessions"]
    document = next(d for d in documents if d["session_id"] == THREE_TURNS)
    assert document["deleted_by_agent_at"] is not None and document["kept"] is False
    notes = " ".join(service.doctor().notes)
    assert THREE_TURNS in notes and "deleted by Claude Code in 2 days" in notes and BASH not in notes
    assert "deleted by Claude Code in 2 days" in (service.show(service.resolve(THREE_TURNS)).deletion or "")


def test_a_kept_session_outlives_claude_codes_sweep(store):
    _, folders = store
    service = service_in(folders["alpha"])
    ref = service.resolve(THREE_TURNS)
    path = Path(service.session_path(ref))
    report = service.keep(ref)
    assert report.added == ["session"] and report.size == path.stat().st_size
    row = rows_by_id(service.list_sessions())[THREE_TURNS]
    assert row.kept and row.agent_deletion is None
    assert "keeps a copy" in (service.show(ref).deletion or "")
    path.unlink()   # what Claude Code's age sweep does
    listing = service.list_sessions()
    service.load_details(listing.rows)
    row = rows_by_id(listing)[THREE_TURNS]
    assert row.turns == 3 and row.kept and "deleted its file" in (row.fields.warning or "")
    detail = service.show(ref)
    assert [turn.user_message for turn in detail.transcript.turns][-1] == "Finish the plan MARKthird"
    assert any(w.code == "deleted_by_agent" for w in detail.warnings)
    assert THREE_TURNS in {hit.row.file_id for hit in service.search("REPLYsecond")}
    with pytest.raises(RepriseError, match="Claude Code deleted this session's file"):
        service.resume_plan(ref, for_exec=False)


def test_a_session_written_minutes_ago_is_flagged_before_resuming(store):
    _, folders = store
    service = service_in(folders["alpha"])
    ref = service.resolve(BASH)
    path = Path(service.session_path(ref))
    record = {"type": "user", "uuid": "bbbbbbbb-0000-4000-8000-000000000002", "parentUuid": None,
              "sessionId": BASH, "cwd": str(folders["alpha"]),
              "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
              "message": {"role": "user", "content": "still typing"}}
    with path.open("ab") as handle:
        handle.write((json.dumps(record, separators=(",", ":")) + "\n").encode())
    plan = service.resume_plan(ref, for_exec=False)
    assert plan.writer is not None and "written" in plan.writer
    assert any("may be writing" in note for note in plan.notes)
    programs = folders["alpha"].parent / "bin"
    programs.mkdir()
    (programs / "claude").write_text("#!/bin/sh\necho resumed\n")
    (programs / "claude").chmod(0o755)
    refused = run_cli("resume", BASH[:8], cwd=folders["alpha"], path=programs)
    assert refused.returncode != 0 and "being written" in refused.stderr and "resumed" not in refused.stdout
    forced = run_cli("resume", BASH[:8], "--yes", cwd=folders["alpha"], path=programs)
    assert forced.returncode == 0 and forced.stdout.strip() == "resumed"


def test_a_rename_in_reprise_is_found_by_search(store):
    _, folders = store
    service = service_in(folders["alpha"])
    service.rename(service.resolve(BASH), "Deploy checklist for Friday")
    hits = service.search("friday checklist")
    assert [(hit.row.file_id, hit.turn, hit.field) for hit in hits] == [(BASH, 0, "title")]
    assert hits[0].snippet == "Deploy \x02checklist\x03 for \x02Friday\x03"
