"""What the real Claude Code writes and accepts back, checked against it (the facts Reprise's
Claude source relies on; tests/fixtures/claude-store/README.md has them in prose). Each test
that runs the client again works on a copy of the scenario's config dir."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from . import fake_anthropic
from .sessions import (
    BASH_OUTPUT_WORD,
    NAMED_TITLE,
    PTY_DRIVER,
    SESSION_IDS,
    SESSION_OF,
    TYPED_PROMPT,
    ClaudeStore,
    LiveClaude,
    Step,
    StepResult,
)

pytestmark = pytest.mark.compat


def slug(folder: Path) -> str:
    return "".join(c if c.isalnum() else "-" for c in str(folder))


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def copy_store(store: ClaudeStore, tmp_path: Path) -> LiveClaude:
    """A LiveClaude on a copy of the store's config dir (the same recorded folders)."""
    live = LiveClaude(store.live.binary, tmp_path / "copy")
    shutil.rmtree(live.config_dir)
    shutil.copytree(store.config_dir, live.config_dir, symlinks=True)
    return live


def sent_prompts(result: StepResult) -> list[str]:
    """The user prompts the step's (last) request sent, in order."""
    assert result.requests, result.describe()
    messages = result.requests[-1]["messages"]
    return [fake_anthropic.prompt_text(m) for m in messages
            if m["role"] == "user" and fake_anthropic.prompt_text(m) and not fake_anthropic.tool_results(m)]


def ok(result: StepResult) -> StepResult:
    assert result.returncode == 0 and not result.output.get("is_error"), result.describe()
    return result


def test_each_session_is_one_file_named_by_its_id_in_its_folders_slug(claude_store):
    for session, session_id in SESSION_IDS.items():
        folder = claude_store.folders[claude_store.folder_of[session]]
        path = claude_store.projects / slug(folder) / f"{session_id}.jsonl"
        assert path.is_file(), session
        chain = [r for r in records(path) if r.get("type") in ("user", "assistant")]
        assert {r["sessionId"] for r in chain} == {session_id}
        assert {r["cwd"] for r in chain} == {str(folder)}
    for result in claude_store.results:
        if result.step.interactive is None:
            assert result.output["session_id"] == SESSION_IDS[SESSION_OF[result.step.label]]


def test_entrypoint_is_recorded_per_record_sdk_cli_for_print_and_cli_for_the_terminal_ui(claude_store):
    for session in SESSION_IDS:
        chain = [r for r in records(claude_store.session_file(session)) if r.get("type") in ("user", "assistant")]
        assert {r["entrypoint"] for r in chain} == ({"cli"} if session == "typed" else {"sdk-cli"}), session
    typed = records(claude_store.session_file("typed"))
    assert [r["message"]["content"] for r in typed if r.get("type") == "user"] == [TYPED_PROMPT]


def test_the_name_is_a_custom_title_record_and_no_ai_title_is_asked_for(claude_store):
    named = records(claude_store.session_file("named"))
    assert {r["customTitle"] for r in named if r["type"] == "custom-title"} == {NAMED_TITLE}
    for session in SESSION_IDS:
        assert not [r for r in records(claude_store.session_file(session)) if r["type"] == "ai-title"]
    kinds = {fake_anthropic.request_kind(body) for result in claude_store.results for body in result.requests}
    assert "title" not in kinds


def test_usage_in_the_file_is_the_servers_usage_so_the_measured_context_is_the_request_size(claude_store):
    bodies = {f"msg_fake{n:04d}": len(path.read_bytes()) // 4
              for n, path in enumerate(sorted((claude_store.root / "batches" / "01" / "requests").glob("*.json")), 1)}
    seen = 0
    for session in SESSION_IDS:
        for record in records(claude_store.session_file(session)):
            if (record["type"] != "assistant" or session == "fork"  # the fork copies three's messages
                    or record["message"]["model"] == "<synthetic>"):  # the API error's stand-in
                continue
            usage = record["message"]["usage"]
            measured = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
            assert measured == bodies[record["message"]["id"]]
            seen += 1
    assert seen >= 12


def test_compact_writes_a_boundary_and_a_summary_and_the_next_turn_sends_the_summary(claude_store):
    compacted = records(claude_store.session_file("compact"))
    [boundary] = [r for r in compacted if r.get("subtype") == "compact_boundary"]
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"]
    assert boundary["compactMetadata"]["trigger"] == "manual" and boundary["compactMetadata"]["postTokens"] > 0
    [summary] = [r for r in compacted if r.get("isCompactSummary")]
    assert summary["message"]["content"].startswith("This session is being continued from a previous conversation")
    assert "MARKteal, MARKhexagon" in summary["message"]["content"]
    [after] = [r for r in claude_store.results if r.step.label == "compact: after"]
    text = json.dumps(after.requests[-1]["messages"])
    assert "MARKteal, MARKhexagon" in text and "What now? MARKaftercompact" in text


def test_fork_session_copies_the_chain_keeping_uuids_and_message_ids_under_the_new_session_id(claude_store):
    fork = records(claude_store.session_file("fork"))
    prompts = [r["message"]["content"] for r in fork if r["type"] == "user"]
    assert prompts == ["Start a plan MARKfirst", "Continue the plan MARKsecond", "Finish the plan MARKthird",
                       "Branch off MARKforked"]
    original = {r["uuid"]: r for r in records(claude_store.session_file("three")) if "uuid" in r}
    copied = [r for r in fork if r.get("uuid") in original]
    assert [r["type"] for r in copied if r["type"] in ("user", "assistant")] == ["user", "assistant"] * 3
    for record in copied:
        assert record["sessionId"] == SESSION_IDS["fork"]
        assert record.get("parentUuid") == original[record["uuid"]].get("parentUuid")
        if record["type"] == "assistant":  # one API message in two files: de-duplicate usage by message.id
            assert record["message"] == original[record["uuid"]]["message"]
    assert not [r for r in fork if r.get("forkedFrom") or r.get("type") == "fork"]


def test_an_api_error_is_a_synthetic_assistant_record_with_zero_usage_and_no_system_record(claude_store):
    failed = records(claude_store.session_file("failed"))
    [error] = [r for r in failed if r["type"] == "assistant"]
    assert error["isApiErrorMessage"] is True and error["message"]["model"] == "<synthetic>"
    assert error["message"]["content"][0]["text"].startswith("API Error: 400")
    usage = error["message"]["usage"]
    assert usage["input_tokens"] == usage["cache_read_input_tokens"] == usage["cache_creation_input_tokens"] == 0
    assert not [r for r in failed if r["type"] == "system"]
    [step] = [r for r in claude_store.results if r.step.label == "api error"]
    assert step.returncode == 1 and step.output["is_error"] is True and len(step.requests) > 1  # it retried


def test_a_subagent_writes_its_own_sidechain_file_beside_the_session(claude_store):
    main = claude_store.session_file("agent")
    [subagent] = main.parent.glob(f"{SESSION_IDS['agent']}/subagents/agent-*.jsonl")
    meta = json.loads(subagent.with_suffix(".meta.json").read_text())
    side = [r for r in records(subagent) if r.get("type") in ("user", "assistant")]
    assert {r["isSidechain"] for r in side} == {True} and {r["sessionId"] for r in side} == {SESSION_IDS["agent"]}
    assert side[0]["message"]["content"] == "look around the folder MARKsub" and side[0]["parentUuid"] is None
    assert side[-1]["message"]["content"][0]["text"] == "Noted MARKsub; my answer word is REPLYsub."
    assert not [r for r in records(main) if r.get("isSidechain")]
    [result] = [r for r in records(main) if r["type"] == "user" and isinstance(r["message"]["content"], list)]
    assert result["toolUseResult"]["agentId"] == subagent.stem.removeprefix("agent-") == side[0]["agentId"]
    assert meta["toolUseId"] == result["message"]["content"][0]["tool_use_id"]
    ids = [r["message"]["id"] for r in records(main) if r["type"] == "assistant"]
    assert len(ids) == 3 and ids[0] == ids[1] != ids[2]  # the text and the tool_use of one API message


def test_read_and_write_calls_are_recorded_with_their_paths(claude_store):
    alpha = claude_store.folders["alpha"]
    uses = [b for r in records(claude_store.session_file("files")) if r["type"] == "assistant"
            for b in r["message"]["content"] if b["type"] == "tool_use"]
    assert [(u["name"], u["input"]["file_path"]) for u in uses] == [("Read", str(alpha / "notes.txt")),
                                                                     ("Write", str(alpha / "written.txt"))]
    assert (alpha / "written.txt").read_text() == "written by the fake model into written.txt\n"


def test_the_bash_call_and_its_output_are_recorded(claude_store):
    bash = records(claude_store.session_file("bash"))
    uses = [b for r in bash if r["type"] == "assistant" for b in r["message"]["content"] if b["type"] == "tool_use"]
    assert [u["name"] for u in uses] == ["Bash"]
    [result] = [r for r in bash if r["type"] == "user" and isinstance(r["message"]["content"], list)]
    assert result["toolUseResult"]["stdout"].splitlines() == [BASH_OUTPUT_WORD, "second line"]


def test_print_reads_the_prompt_from_stdin_and_refuses_an_empty_one(claude_store, tmp_path):
    live = copy_store(claude_store, tmp_path)
    beta = claude_store.folders["beta"]
    given, empty = live.run([Step(["-p", "--output-format", "json"], beta, stdin="From stdin MARKstdin"),
                             Step(["-p", "--output-format", "json"], beta, stdin="")])
    assert sent_prompts(ok(given)) == ["From stdin MARKstdin"]
    assert empty.returncode != 0 and not empty.requests
    assert "Input must be provided either through stdin or as a prompt argument" in empty.stderr


@pytest.mark.parametrize("interactive", [False, True], ids=["print", "terminal-ui"])
def test_resume_from_another_folder_sends_the_history_and_appends_to_the_original_file(claude_store, tmp_path,
                                                                                     interactive):
    live = copy_store(claude_store, tmp_path)
    three = SESSION_IDS["three"]
    original = live.config_dir / "projects" / slug(claude_store.folders["alpha"]) / f"{three}.jsonl"
    before = original.stat().st_size
    prompt = "From the other folder MARKelsewhere"
    step = (Step(["--resume", three], claude_store.folders["beta"], interactive=prompt) if interactive else
            Step(["--resume", three, "-p", prompt, "--output-format", "json"], claude_store.folders["beta"]))
    [result] = live.run([step])
    assert result.returncode == 0, result.describe()
    assert sent_prompts(result) == ["Start a plan MARKfirst", "Continue the plan MARKsecond",
                                    "Finish the plan MARKthird", prompt]
    assert original.stat().st_size > before
    assert sorted(p.name for p in (live.config_dir / "projects").glob(f"*/{three}.jsonl")) == [original.name]
    newest = [r for r in records(original) if r.get("type") == "user"][-1]
    assert newest["cwd"] == str(claude_store.folders["beta"])


def test_resume_finds_a_session_whose_folder_is_gone_and_prefers_a_copy_in_the_current_folders_slug(claude_store,
                                                                                                 tmp_path):
    live = copy_store(claude_store, tmp_path)
    three = SESSION_IDS["three"]
    alpha, beta = claude_store.folders["alpha"], claude_store.folders["beta"]
    projects = live.config_dir / "projects"
    moved = alpha.with_name("alpha.moved")
    alpha.rename(moved)
    try:
        shutil.copy2(projects / slug(alpha) / f"{three}.jsonl", projects / slug(beta) / f"{three}.jsonl")
        original = (projects / slug(alpha) / f"{three}.jsonl").read_bytes()
        [result] = live.run([Step(["--resume", three, "-p", "Copied MARKcopied", "--output-format", "json"], beta)])
        assert sent_prompts(ok(result))[-1] == "Copied MARKcopied" and len(sent_prompts(result)) == 4
        assert (projects / slug(alpha) / f"{three}.jsonl").read_bytes() == original
        assert b"MARKcopied" in (projects / slug(beta) / f"{three}.jsonl").read_bytes()
        alpha.mkdir()
        [again] = live.run([Step(["--resume", three, "-p", "Recreated MARKrecreated", "--output-format", "json"],
                                 alpha)])
        assert sent_prompts(ok(again))[-1] == "Recreated MARKrecreated"
        alpha.rmdir()
    finally:
        moved.rename(alpha)


def test_a_copy_with_a_new_id_in_its_name_and_records_resumes_with_exactly_its_history(claude_store, tmp_path):
    live = copy_store(claude_store, tmp_path)
    three, new = SESSION_IDS["three"], "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee"
    folder = live.config_dir / "projects" / slug(claude_store.folders["alpha"])
    text = (folder / f"{three}.jsonl").read_text(encoding="utf-8")
    (folder / f"{new}.jsonl").write_text(text.replace(three, new), encoding="utf-8")
    [result] = live.run([Step(["--resume", new, "-p", "Copy MARKcopyid", "--output-format", "json"],
                              claude_store.folders["alpha"])])
    assert ok(result).output["session_id"] == new
    assert sent_prompts(result) == ["Start a plan MARKfirst", "Continue the plan MARKsecond",
                                    "Finish the plan MARKthird", "Copy MARKcopyid"]
    assert (folder / f"{three}.jsonl").read_text(encoding="utf-8") == text


def test_a_running_terminal_ui_announces_itself_in_sessions_pid_json_and_holds_no_transcript_open(claude_store,
                                                                                                   tmp_path):
    """What liveness can read: `<root>/sessions/<pid>.json` (session id, cwd, status, the process
    start time) while the UI runs, gone after /exit; the transcript itself is not kept open."""
    live = copy_store(claude_store, tmp_path)
    three = SESSION_IDS["three"]
    record = live.root / "batches" / f"{live.batches + 1:02d}" / "requests"
    drive = [sys.executable, str(PTY_DRIVER), "--record", str(record), "--send", "Live probe MARKlive",
             "--timeout", "40", "--", str(live.binary), "--resume", three]
    sessions = live.config_dir / "sessions"
    # probe once the prompt's request has reached the server (the UI then idles ~2.5 s before /exit)
    script = (f"{shlex.join(drive)} > /dev/null & "
              f"for i in $(seq 600); do ls {record}/*.json > /dev/null 2>&1 && break; sleep 0.1; done; "
              f"for f in {sessions}/*.json; do cat \"$f\"; echo; "
              f"pid=$(basename \"$f\" .json); echo \"stat $(cut -d' ' -f22 /proc/$pid/stat)\"; done; "
              "for p in /proc/[0-9]*; do ls -l $p/fd 2>/dev/null | grep -c '[.]jsonl$'; done "
              "| awk '{s += $1} END {print s + 0}'; wait")
    bash = LiveClaude(Path("/bin/bash"), live.root)  # the same root: the same HOME and config dir
    bash.batches = live.batches
    [result] = bash.run([Step(["-c", script], claude_store.folders["alpha"])])
    lines = result.stdout.strip().splitlines()
    assert result.returncode == 0 and len(lines) == 3, result.describe()
    announced = json.loads(lines[0])
    assert (announced["sessionId"], announced["cwd"], announced["kind"], announced["entrypoint"]) == (
        three, str(claude_store.folders["alpha"]), "interactive", "cli")
    assert announced["status"] in ("idle", "busy") and isinstance(announced["pid"], int)
    assert lines[1] == f"stat {announced['procStart']}"  # /proc/<pid>/stat's start time
    assert lines[2] == "0"
    assert not list(sessions.glob("*.json"))
