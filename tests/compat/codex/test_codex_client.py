"""What the real Codex CLI writes and accepts back, checked against it (the facts Reprise's Codex
source relies on; tests/fixtures/codex-store/README.md has them in prose). A test that runs the
client again works on a copy of the scenario's rollouts in a fresh CODEX_HOME (never a copy of
Codex's SQLite files, whose absolute paths would point the copy at the originals)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sqlite3
from pathlib import Path

import pytest

from . import fake_openai, rollouts
from .sessions import (
    BASH_OUTPUT_WORD,
    EXEC,
    GIT_BRANCH,
    SCENARIO,
    SESSION_OF,
    CodexStore,
    LiveCodex,
    Step,
    StepResult,
)

pytestmark = pytest.mark.compat

NAME_RE = re.compile(r"^rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-(?P<id>[0-9a-f-]{36})\.jsonl$")
PROMPTS = {label: prompt for label, _, _, _, prompt, _ in SCENARIO}


def prompts_of(session: str) -> list[str]:
    return [prompt for label, prompt in PROMPTS.items() if SESSION_OF[label] == session]


def payloads(path: Path, kind: str, subtype: str | None = None) -> list[dict]:
    return [r["payload"] for r in rollouts.records(path) if r["type"] == kind
            and (subtype is None or r["payload"].get("type") == subtype)]


def copy_sessions(store: CodexStore, root: Path) -> LiveCodex:
    """A LiveCodex on a fresh CODEX_HOME holding a copy of the store's rollouts (no SQLite)."""
    live = LiveCodex(store.live.binary, root)
    shutil.copytree(store.sessions, live.sessions)
    return live


def ok(result: StepResult) -> StepResult:
    assert result.returncode == 0 and result.responses, result.describe()
    return result


def sent_prompts(result: StepResult) -> list[str]:
    """The user prompts the run's last request sent, in order (Codex's injected context left out)."""
    return fake_openai.user_messages(ok(result).responses[-1])


def replies_sent(result: StepResult) -> list[str]:
    return [fake_openai.message_text(item) for item in result.responses[-1]["input"]
            if item.get("type") == "message" and item.get("role") == "assistant"]


def test_each_rollout_is_named_by_its_id_in_a_date_folder_and_records_its_folder_and_exec_source(codex_store):
    files = sorted(codex_store.sessions.rglob("*.jsonl"))
    assert {NAME_RE.match(p.name)["id"] for p in files} == set(codex_store.ids.values())
    for session, session_id in codex_store.ids.items():
        path = codex_store.rollout(session)
        meta = rollouts.records(path)[0]
        # a fork's ordinals go on from its parent's: its session_meta takes the fork point's
        assert meta["type"] == "session_meta"
        assert meta["ordinal"] == meta["payload"].get("forked_from_ordinal_exclusive", 0)
        assert meta["payload"]["id"] == meta["payload"]["session_id"] == session_id
        assert path.parent.relative_to(codex_store.sessions).parts == tuple(meta["timestamp"][:10].split("-"))
        assert meta["payload"]["cwd"] == str(codex_store.folders[codex_store.folder_of[session]])
        assert (meta["payload"]["source"], meta["payload"]["originator"]) == ("exec", "codex_exec")
        assert meta["payload"]["cli_version"] == "0.171.0" and meta["payload"]["model_provider"] == "fake"
        assert meta["payload"]["history_mode"] == "paginated"
        git = meta["payload"].get("git")
        if codex_store.folder_of[session] == "beta":
            assert git["branch"] == GIT_BRANCH and len(git["commit_hash"]) == 40, git
        else:
            assert git is None, git


def test_every_line_is_compact_json_with_a_rising_ordinal(codex_store):
    for session in codex_store.ids:
        lines = codex_store.rollout(session).read_text(encoding="utf-8").splitlines()
        assert all(rollouts.dumps(json.loads(line)) == line for line in lines), session
        ordinals = [json.loads(line)["ordinal"] for line in lines]
        assert ordinals == sorted(set(ordinals)), session
        if session != "fork":
            assert ordinals == list(range(len(lines))), session


def test_prompts_are_user_message_items_and_there_is_no_user_message_event(codex_store):
    for session in codex_store.ids:
        path = codex_store.rollout(session)
        assert not payloads(path, "event_msg", "user_message"), session
        items = [p["item"] for p in payloads(path, "event_msg", "item_completed") if p["item"]["type"] == "UserMessage"]
        assert [part["text"] for item in items for part in item["content"]] == prompts_of(session)
        users = [fake_openai.message_text(p) for p in payloads(path, "response_item", "message") if p["role"] == "user"]
        assert [text for text in users if not fake_openai.is_injected(text)] == prompts_of(session)
        assert session == "fork" or any(text.startswith("<environment_context>") for text in users)


def test_a_turn_runs_from_task_started_to_task_complete(codex_store):
    for session in codex_store.ids:
        path = codex_store.rollout(session)
        started, completed = payloads(path, "event_msg", "task_started"), payloads(path, "event_msg", "task_complete")
        completed += payloads(path, "event_msg", "turn_aborted")
        assert len(started) == len(completed) == len(prompts_of(session)), session
        assert [s["turn_id"] for s in started] == [c["turn_id"] for c in completed]
        assert {s["model_context_window"] for s in started} == {475_000}
        assert {c["model"] for c in payloads(path, "turn_context")} == {"gpt-6.2-sol"}


def test_last_token_usage_is_the_request_that_produced_it_and_the_total_is_cumulative(codex_store):
    result = codex_store.step("three turns: 3")
    [count] = payloads(codex_store.rollout("three"), "event_msg", "token_count")[-1:]
    info = count["info"]
    assert info["last_token_usage"]["input_tokens"] == result.request_sizes[-1] // 4
    assert info["model_context_window"] == 475_000
    earlier = sum(r.request_sizes[-1] // 4 for r in codex_store.steps_of("three"))
    assert info["total_token_usage"]["input_tokens"] == earlier
    printed = next(e for e in result.events if e["type"] == "turn.completed")["usage"]
    assert printed["input_tokens"] == earlier        # what `codex exec --json` prints is cumulative too


def test_a_command_is_a_code_mode_exec_call_paired_with_its_output_by_call_id(codex_store):
    path = codex_store.rollout("bash")
    [call] = payloads(path, "response_item", "custom_tool_call")
    [output] = payloads(path, "response_item", "custom_tool_call_output")
    assert call["name"] == "exec" and call["call_id"] == output["call_id"] and "exec_command" in call["input"]
    assert BASH_OUTPUT_WORD in "".join(part["text"] for part in output["output"])
    assert not payloads(path, "response_item", "function_call")
    [command] = [p["item"] for p in payloads(path, "event_msg", "item_completed")
                 if p["item"]["type"] == "CommandExecution"]
    assert command["command"][-1].startswith("echo OUTWORD")


def test_auto_compaction_writes_compacted_and_keeps_the_prompts_but_not_the_replies(codex_store):
    path = codex_store.rollout("compact")
    [compacted] = payloads(path, "compacted")
    assert "SUMMARYfake" in compacted["message"] and "MARKteal" in compacted["message"]
    assert compacted["replacement_history"]
    result = codex_store.step("compact: after")
    assert len(result.responses) == 2          # the summary request, then the turn
    assert fake_openai.request_kind(result.responses[0]) == "summary"
    after = result.responses[1]
    teal, hexagon, now = prompts_of("compact")
    # the summary goes as a user message after the kept prompts
    assert fake_openai.user_messages(after) == [teal, hexagon, compacted["message"], now]
    assert "REPLYteal" not in json.dumps(after) and "SUMMARYfake" in json.dumps(after)


def test_a_codex_fork_names_its_parent_and_holds_only_its_own_turn(codex_store):
    path = codex_store.rollout("fork")
    meta = rollouts.records(path)[0]["payload"]
    parent = codex_store.rollout("three")
    assert meta["forked_from_id"] == meta["history_base"]["thread_id"] == codex_store.ids["three"]
    assert meta["history_base"]["end_byte_offset"] == parent.stat().st_size
    assert meta["forked_from_ordinal_exclusive"] == len(rollouts.records(parent))
    texts = [fake_openai.message_text(p) for p in payloads(path, "response_item", "message")]
    assert texts == [PROMPTS["fork of three"], "Noted MARKforked; my answer word is REPLYforked."]
    assert sent_prompts(codex_store.step("fork of three")) == [*prompts_of("three"), PROMPTS["fork of three"]]


def test_an_api_error_ends_the_turn_with_an_error_on_task_complete(codex_store):
    path = codex_store.rollout("failed")
    [complete] = payloads(path, "event_msg", "task_complete")
    assert "the fake server was asked to fail" in complete["error"]["message"]
    assert complete["last_agent_message"] is None and not payloads(path, "event_msg", "error")
    assert codex_store.step("api error").returncode == 1


def test_an_interrupted_turn_ends_with_turn_aborted_and_no_task_complete(codex_store):
    path = codex_store.rollout("aborted")
    [aborted] = payloads(path, "event_msg", "turn_aborted")
    [started] = payloads(path, "event_msg", "task_started")
    assert aborted["reason"] == "interrupted" and aborted["turn_id"] == started["turn_id"]
    assert not payloads(path, "event_msg", "task_complete")
    assert [c["info"] for c in payloads(path, "event_msg", "token_count")] == [None]   # no reply, no usage
    developer = [fake_openai.message_text(p) for p in payloads(path, "response_item", "message")
                 if p["role"] == "developer"]
    assert developer[-1].startswith("<turn_aborted>")
    assert codex_store.step("interrupted").returncode == 124       # timeout's status after SIGINT


def test_codex_keeps_its_own_sqlite_files_and_the_threads_table_holds_absolute_rollout_paths(codex_store, tmp_path):
    assert {"state_5.sqlite", "logs_2.sqlite", "thread_history_1.sqlite"} <= {
        p.name for p in codex_store.codex_home.glob("*.sqlite")}
    assert not (codex_store.codex_home / "session_index.jsonl").exists()     # exec never renames
    for suffix in ("", "-wal", "-shm"):       # read a copy: even a read-only open may write beside it
        shutil.copy2(codex_store.codex_home / f"state_5.sqlite{suffix}", tmp_path / f"state_5.sqlite{suffix}")
    with sqlite3.connect(tmp_path / "state_5.sqlite") as db:
        rows = dict(db.execute("select id, rollout_path from threads"))
    assert rows == {session_id: str(codex_store.live.rollout(session_id)) for session_id in codex_store.ids.values()}


# --- what Codex accepts back (each runs the real client on a copy of the rollouts) ---

def test_the_default_argvs_are_accepted_and_send_reads_the_message_from_stdin(codex_store, tmp_path):
    live = copy_sessions(codex_store, tmp_path / "copy")
    alpha = codex_store.folders["alpha"]
    new_help, resume_help, send = live.run([
        Step(["--help"], alpha), Step(["resume", "--help"], alpha),
        Step([*EXEC, "resume", codex_store.ids["three"], "-"], alpha, stdin="Sent on stdin MARKstdin"),
    ])
    assert new_help.returncode == 0 and "Usage: codex [OPTIONS] [PROMPT]" in new_help.stdout
    assert resume_help.returncode == 0 and "Usage: codex resume [OPTIONS] [SESSION_ID] [PROMPT]" in resume_help.stdout
    assert send.thread_id == codex_store.ids["three"]
    assert sent_prompts(send) == [*prompts_of("three"), "Sent on stdin MARKstdin"]
    assert len(list(live.sessions.rglob(f"*{codex_store.ids['three']}*"))) == 1      # appended, no second file


def test_a_trimmed_copy_with_a_new_id_is_resumed_with_exactly_the_kept_turns(codex_store, tmp_path):
    live = copy_sessions(codex_store, tmp_path / "copy")
    original = live.rollout(codex_store.ids["three"])
    before = original.read_bytes()
    new_id, path = rollouts.trimmed_copy(original, [0, 2])
    assert path.parent == original.parent
    result = live.one(Step([*EXEC, "resume", new_id, "After the trim MARKtrimmed"], codex_store.folders["alpha"]))
    assert result.thread_id == new_id
    first, _, third = prompts_of("three")
    assert sent_prompts(result) == [first, third, "After the trim MARKtrimmed"]
    assert replies_sent(result) == ["Noted MARKfirst; my answer word is REPLYfirst.",
                                    "Noted MARKthird; my answer word is REPLYthird."]
    assert original.read_bytes() == before and path.stat().st_size > 0
    assert payloads(path, "event_msg", "task_complete")[-1]["last_agent_message"].endswith("REPLYtrimmed.")


def test_a_copy_whose_session_meta_id_differs_from_its_name_is_refused(codex_store, tmp_path):
    live = copy_sessions(codex_store, tmp_path / "copy")
    original = live.rollout(codex_store.ids["one"])
    lines = rollouts.records(original)
    new_id = rollouts.new_uuid7()
    rollouts.write_new(original.parent, rollouts.rollout_name(original, new_id), lines)   # meta keeps the old id
    result = live.one(Step([*EXEC, "resume", new_id, "Mismatch MARKmismatch"], codex_store.folders["alpha"]))
    assert result.returncode != 0 and not result.responses, result.describe()


def self_contained(codex_store: CodexStore, tmp_path: Path, drop: tuple[str, ...]) -> tuple[LiveCodex, str]:
    """A fresh CODEX_HOME holding only a self-contained trim of the scenario's fork (the parent's
    first and third turns written in, then the fork's turn), its lineage fields in `drop` removed."""
    made = tmp_path / "made"
    made.mkdir()
    new_id, path = rollouts.self_contained_fork(codex_store.rollout("fork"), codex_store.rollout("three"), [0, 2],
                                                drop=drop, folder=made)
    live = LiveCodex(codex_store.live.binary, tmp_path / "alone")
    folder = live.sessions / Path(*path.name[8:18].split("-"))
    folder.mkdir(parents=True)
    shutil.copy2(path, folder / path.name)
    return live, new_id


def test_a_trimmed_codex_fork_made_self_contained_without_its_lineage_fields_is_accepted(codex_store, tmp_path):
    live, new_id = self_contained(codex_store, tmp_path, rollouts.FORK_FIELDS)
    result = live.one(Step([*EXEC, "resume", new_id, "After the fork trim MARKforktrim"], codex_store.folders["alpha"]))
    first, _, third = prompts_of("three")
    assert sent_prompts(result) == [first, third, PROMPTS["fork of three"], "After the fork trim MARKforktrim"]


def test_a_self_contained_fork_that_keeps_history_base_is_refused_for_its_missing_parent(codex_store, tmp_path):
    live, new_id = self_contained(codex_store, tmp_path, ("forked_from_id",))
    result = live.one(Step([*EXEC, "resume", new_id, "Refused MARKrefused"], codex_store.folders["alpha"]))
    assert result.returncode == 1 and not result.requests
    assert (f"invalid paginated history lineage for {codex_store.ids['three']}: missing source rollout"
            in result.stderr), result.describe()


def test_a_rollout_moved_away_is_not_found_by_id_and_resumes_again_once_moved_back(codex_store, tmp_path):
    live = copy_sessions(codex_store, tmp_path / "copy")
    session_id, alpha = codex_store.ids["one"], codex_store.folders["alpha"]
    ok(live.one(Step([*EXEC, "resume", session_id, "Index it MARKindexed"], alpha)))   # now in the threads table
    original = live.rollout(session_id)
    trashed = tmp_path / "trash" / original.name
    trashed.parent.mkdir()
    original.rename(trashed)
    missing = live.one(Step([*EXEC, "resume", session_id, "While trashed MARKtrashed"], alpha))
    assert missing.returncode == 1 and not missing.requests
    assert f"no rollout found for thread id {session_id}" in missing.stderr, missing.describe()
    assert not list(live.sessions.rglob(f"*{session_id}*"))       # Codex made no new file for it
    trashed.rename(original)
    restored = live.one(Step([*EXEC, "resume", session_id, "Restored MARKrestored"], alpha))
    assert sent_prompts(restored) == [*prompts_of("one"), "Index it MARKindexed", "Restored MARKrestored"]


def test_a_hand_made_session_index_entry_names_a_thread_that_resume_finds_by_name(codex_store, tmp_path):
    live = copy_sessions(codex_store, tmp_path / "copy")
    name = "Renamed by hand MARKname"
    entry = {"id": codex_store.ids["beta"], "thread_name": name, "updated_at": "2026-12-01T20:00:00Z"}
    (live.codex_home / "session_index.jsonl").write_text(rollouts.dumps(entry) + "\n")
    result = live.one(Step([*EXEC, "resume", name, "Found by its name MARKbyname"], codex_store.folders["beta"]))
    assert result.thread_id == codex_store.ids["beta"], result.describe()
    assert sent_prompts(result) == [*prompts_of("beta"), "Found by its name MARKbyname"]


def request_parts(raw: bytes, base_instructions: str) -> dict[str, int]:
    """The characters of a Responses request by part (each input item's compact JSON; `envelope` is
    the rest: model, reasoning, client metadata, the JSON around the items)."""
    body = json.loads(raw)
    parts = dict.fromkeys(("tools", "base instructions", "other developer context", "environment", "history"), 0)
    for item in body["input"]:
        text = fake_openai.message_text(item) if item.get("type") == "message" else ""
        if item.get("type") == "additional_tools":
            part = "tools"
        elif item.get("role") == "developer":
            part = "base instructions" if text == base_instructions else "other developer context"
        elif item.get("role") == "user" and text.startswith("<environment_context>"):
            part = "environment"
        else:
            part = "history"
        parts[part] += len(rollouts.dumps(item))
    parts["tools"] += len(rollouts.dumps(body.get("tools") or []))
    parts["envelope"] = len(raw.decode("utf-8")) - sum(parts.values())
    return parts


def test_what_a_resumed_turn_sends_by_part(codex_store):
    """The meter's ground truth: the request of the third turn of the three-turn session."""
    result = codex_store.step("three turns: 3")
    [raw] = sorted((codex_store.root / "batches").glob("04/requests/*.json"))
    meta = rollouts.records(codex_store.rollout("three"))[0]["payload"]
    parts = request_parts(raw.read_bytes(), meta["base_instructions"]["text"])
    assert sum(parts.values()) == len(raw.read_text(encoding="utf-8"))
    assert raw.stat().st_size == result.request_sizes[0]
    assert parts["tools"] > 20_000 and parts["base instructions"] > 20_000
    assert 0 < parts["environment"] < 1_000 and 0 < parts["envelope"] < 3_000
    assert not json.loads(raw.read_bytes()).get("tools") and not json.loads(raw.read_bytes()).get("instructions")
    history = [item for item in result.responses[0]["input"] if item.get("type") == "message"
               and (item["role"] == "assistant" or item["role"] == "user"
                    and not fake_openai.is_injected(fake_openai.message_text(item)))]
    assert len(history) == 5           # two earlier turns (prompt and reply), the new prompt
    assert parts["history"] < 2_000


def test_a_running_exec_holds_its_rollout_open_for_writing_until_it_ends(codex_store, tmp_path):
    """What liveness can read: while `codex exec` waits for the model, the codex process has its
    rollout open read-write (a /proc/<pid>/fd link); Ctrl-C (SIGINT) ends the turn as aborted."""
    live = LiveCodex(codex_store.live.binary, tmp_path / "live")
    record = live.root / "batches" / f"{live.batches + 1:02d}" / "requests"
    codex = shlex.join([str(live.binary), *EXEC, "Hold on SLOW: MARKheld"])
    script = (f"{codex} > /dev/null 2>&1 < /dev/null & pid=$!; "
              f"for i in $(seq 600); do ls {record}/*.json > /dev/null 2>&1 && break; sleep 0.1; done; sleep 1; "
              "for p in /proc/[0-9]*; do ls -l $p/fd 2>/dev/null | grep '[.]jsonl$' "
              "| sed \"s|^|$(cat $p/comm) |\"; done; kill -INT $pid; wait $pid; echo \"exit $?\"")
    bash = LiveCodex(Path("/bin/bash"), live.root)        # the same root: the same HOME and CODEX_HOME
    bash.batches = live.batches
    result = bash.one(Step(["-c", script], codex_store.folders["alpha"]))
    *held, status = result.stdout.strip().splitlines()
    [path] = live.sessions.rglob("*.jsonl")
    assert len(held) == 1 and held[0].split()[:2] == ["codex", "lrwx------"], result.describe()
    assert held[0].endswith(f"-> {path}")
    assert status == "exit 1"
    assert payloads(path, "event_msg", "turn_aborted")[0]["reason"] == "interrupted"
