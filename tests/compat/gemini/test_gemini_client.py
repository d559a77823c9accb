"""What the real Gemini CLI writes and accepts back, checked against it (the facts Reprise's Gemini
source relies on; tests/fixtures/gemini/store-0.61.0/README.md has them in prose). The first tests
read the scenario's store (`gemini_store`); those that run the client again make their own small
store under tmp_path, so the scenario's files are never touched by a later client run (and
`--list-sessions`, which writes a title into a session's file, runs only on such a throwaway store)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from . import fake_gemini
from .sessions import (
    BASH_OUTPUT_WORD,
    SCENARIO,
    SESSION_OF,
    SETTINGS,
    GeminiStore,
    LiveGemini,
    Step,
    StepResult,
    backdate_minute,
    prompt_step,
)

pytestmark = pytest.mark.compat

NAME_RE = re.compile(r"^session-(?P<minute>\d{4}-\d\d-\d\dT\d\d-\d\d)-(?P<short>[0-9a-f]{8})\.jsonl$")
PROMPTS = {label: prompt for label, _, _, _, prompt in SCENARIO}
CONTEXT_ID = "d04923d38bb0f6017037e74183378ef4"     # the injected <session_context> message, in every session
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "gemini"
LEGACY = FIXTURES / "legacy-0.38.2" / "home" / ".gemini" / "tmp" / "old" / "chats"
LEGACY_ID = "d3f70215-d396-49a1-b5a6-2fa42a439e82"


def prompts_of(session: str) -> list[str]:
    return [prompt for label, prompt in PROMPTS.items() if SESSION_OF[label] == session]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def merged(path: Path) -> tuple[dict, list[dict]]:
    """The session a file holds, merged as the client merges it: headers and `$set` update the
    metadata (`$set.messages` replaces the list), a line with an id adds or replaces a message,
    `$rewindTo` drops that message and all after it."""
    meta: dict[str, Any] = {}
    messages: dict[str, dict] = {}
    for record in lines(path):
        if isinstance(record.get("$rewindTo"), str):
            ids = list(messages)
            cut = ids.index(record["$rewindTo"]) if record["$rewindTo"] in ids else 0
            messages = {key: messages[key] for key in ids[:cut]}
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record
        elif isinstance(record.get("$set"), dict):
            if isinstance(record["$set"].get("messages"), list):
                messages = {m["id"]: m for m in record["$set"]["messages"]}
            meta.update({k: v for k, v in record["$set"].items() if k != "messages"})
        elif "sessionId" in record:
            meta.update(record)
    return meta, list(messages.values())


def user_texts(messages: list[dict]) -> list[str]:
    return [part["text"] for m in messages if m["type"] == "user" and isinstance(m["content"], list)
            for part in m["content"] if "text" in part and not part["text"].startswith("<")]


def sent(result: StepResult) -> list[tuple[str, list[str]]]:
    """The last turn request's contents as (role, texts of its parts); a session context part as
    "<session_context>"."""
    assert result.returncode == 0 and result.turns, result.describe()
    shown = []
    for content in result.turns[-1]["contents"]:
        texts = [("<session_context>" if part["text"].startswith("<session_context>") else part["text"])
                 if "text" in part else next(iter(part)) for part in content["parts"]]
        shown.append((content["role"], texts))
    return shown


def ok(result: StepResult) -> StepResult:
    assert result.returncode == 0 and result.session_id, result.describe()
    return result


def names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def with_retention(retention: dict | None) -> dict:
    settings = json.loads(json.dumps(SETTINGS))
    if retention is not None:
        settings["general"]["sessionRetention"] = retention
    return settings


def message(message_id: str, kind: str, text: str, stamp: str) -> dict:
    """A message in the client's form (a user's content a list of parts, a reply's a string)."""
    if kind == "user":
        return {"id": message_id, "timestamp": stamp, "type": "user", "content": [{"text": text}]}
    return {"id": message_id, "timestamp": stamp, "type": "gemini", "content": text, "thoughts": [],
            "tokens": {"input": 10, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": 15},
            "model": "gemini-3.8-flash"}


def write_session(chats: Path, records: list[dict], *, minute: str = "2026-12-01T10-00") -> Path:
    """A session file as another program would write it: compact JSON lines, named for its id."""
    path = chats / f"session-{minute}-{records[0]['sessionId'][:8]}.jsonl"
    path.write_text("".join(json.dumps(record, separators=(",", ":")) + "\n" for record in records))
    return path


def header(session_id: str, stamp: str, *, updated: str | None = None) -> dict:
    return {"sessionId": session_id, "projectHash": "written-by-another-program", "startTime": stamp,
            "lastUpdated": updated or stamp, "kind": "main"}


# --- the scenario's store -------------------------------------------------------------------------------

def test_each_folder_has_a_slug_and_each_session_a_file_named_by_its_start_minute_and_id(gemini_store: GeminiStore):
    projects = json.loads((gemini_store.store / "projects.json").read_text())["projects"]
    assert projects == {str(folder): name for name, folder in gemini_store.folders.items()}
    for name, folder in gemini_store.folders.items():
        assert (gemini_store.store / "tmp" / name / ".project_root").read_text() == str(folder)
    for session, session_id in gemini_store.ids.items():
        folder = gemini_store.folder_of(session)
        for path in gemini_store.files(session):
            assert path.parent == gemini_store.store / "tmp" / projects[str(folder)] / "chats"
            found = NAME_RE.match(path.name)
            assert found and found["short"] == session_id[:8], path.name
            first = lines(path)[0]
            assert set(first) == {"sessionId", "projectHash", "startTime", "lastUpdated", "kind"}
            assert first["sessionId"] == session_id and first["kind"] == "main"
            assert first["projectHash"] == hashlib.sha256(str(folder).encode()).hexdigest()


def test_prompts_are_user_messages_after_the_injected_session_context_and_headless_writes_no_summary(gemini_store):
    for session in gemini_store.ids:
        meta, messages = merged(gemini_store.files(session)[0])
        assert messages[0]["id"] == CONTEXT_ID and messages[0]["content"][0]["text"].startswith("<session_context>")
        assert user_texts(messages) == prompts_of(session), session
        assert "summary" not in meta, session
        assert {m["type"] for m in messages} == {"user", "gemini"}


def test_a_reply_records_the_fake_s_count_of_its_request_as_input_and_cached(gemini_store):
    for session in ("one", "three", "beta"):
        _, messages = merged(gemini_store.files(session)[0])
        replies = [m for m in messages if m["type"] == "gemini"]
        turns = [body for step in gemini_store.steps_of(session) for body in step.turns]
        assert len(replies) == len(turns), session
        for reply, body in zip(replies, turns, strict=True):
            assert reply["tokens"]["input"] == fake_gemini.request_tokens(body), session
            assert reply["tokens"]["cached"] == fake_gemini.cached_tokens(body), session
            assert reply["model"] == "gemini-3.8-flash"


def test_a_resume_in_a_later_minute_appends_to_the_first_file_and_leaves_a_stub_with_the_same_id(gemini_store):
    # The first file's name is a minute earlier (backdated). Each of the two resumes writes its header
    # into the stub of the minute it runs in: one stub with both, or two when they ran in two minutes.
    first, *stubs = gemini_store.files("three")
    assert 1 <= len(stubs) <= 2, stubs
    records = lines(first)
    assert [i for i, r in enumerate(records) if "projectHash" in r] == [0]      # no second header
    assert sum(r.get("$set", {}).get("sessionId") == gemini_store.ids["three"] for r in records) == 2
    assert user_texts(merged(first)[1]) == prompts_of("three")
    headers = []
    for stub in stubs:
        assert NAME_RE.match(first.name)["minute"] < NAME_RE.match(stub.name)["minute"]
        headers += [r["sessionId"] for r in lines(stub) if "projectHash" in r]
        assert [m["id"] for m in merged(stub)[1]] == [CONTEXT_ID]               # no conversation
        assert lines(stub)[0]["startTime"] > records[0]["startTime"]
    assert headers == [gemini_store.ids["three"]] * 2


def test_the_shell_call_is_offered_only_with_yolo_and_written_twice_then_its_result_as_a_user_message(gemini_store):
    def tools(step: StepResult) -> set[str]:
        return {d["name"] for d in fake_gemini.declarations(step.turns[0])}
    assert fake_gemini.SHELL_TOOL in tools(gemini_store.step("command"))
    assert fake_gemini.SHELL_TOOL not in tools(gemini_store.step("one turn"))
    [path] = gemini_store.files("bash")
    records = [r for r in lines(path) if "id" in r]
    calls = [r for r in records if r["type"] == "gemini" and r["content"] == "I will run it."]
    assert len(calls) == 2 and calls[0]["id"] == calls[1]["id"] and "toolCalls" not in calls[0]
    [call] = calls[1]["toolCalls"]
    assert call["name"] == fake_gemini.SHELL_TOOL and call["status"] == "success"
    assert BASH_OUTPUT_WORD in call["result"][0]["functionResponse"]["response"]["output"]
    after = records[records.index(calls[1]) + 1]
    assert after["type"] == "user" and list(after["content"][0]) == ["functionResponse"]


def test_json_output_names_the_session_and_each_step_sent_the_router_then_the_turn(gemini_store):
    for result in gemini_store.results:
        assert set(result.output) == {"session_id", "response", "stats"}
        assert result.request_paths[0].endswith(":generateContent")
        assert all(":streamGenerateContent?alt=sse" in path for path in result.request_paths[1:])
    assert gemini_store.step("three turns: 3").session_id == gemini_store.ids["three"]


# --- the client run again, on stores of the tests' own -------------------------------------------------

def test_resume_works_only_from_the_exact_folder(gemini_bin, tmp_path):
    live = LiveGemini(gemini_bin, tmp_path)
    here, below, other = live.folder("proj"), live.folder("proj/sub"), live.folder("other")
    made = live.run([prompt_step("Base MARKbase", here), prompt_step("Elsewhere MARKelse", other)])
    session_id = ok(made[0]).session_id
    below_run, other_run, here_run = live.run([prompt_step("From below", below, resume=session_id),
                                               prompt_step("From the other", other, resume=session_id),
                                               prompt_step("From here MARKhere", here, resume=session_id)])
    assert below_run.returncode == 42 and "No previous sessions found for this project" in below_run.stderr
    assert other_run.returncode == 42 and f'Invalid session identifier "{session_id}"' in other_run.stderr
    assert not below_run.turns and not other_run.turns
    assert ok(here_run).session_id == session_id


def test_after_a_resume_in_a_later_minute_the_next_start_in_that_folder_deletes_the_whole_session(gemini_bin, tmp_path):
    live = LiveGemini(gemini_bin, tmp_path)
    here = live.folder("proj")
    session_id = ok(live.one(prompt_step("Keep me MARKkeep", here))).session_id
    backdate_minute(live.files_of(session_id)[0])
    resumed, fresh = live.run([prompt_step("Again", here, resume=session_id), prompt_step("A new one", here)])
    assert ok(resumed).session_id == session_id
    # the stub (no conversation) counts as corrupt for the start-up sweep, which deletes every file
    # whose name ends with the same 8 characters
    assert live.files_of(session_id) == []
    assert [path.name for path in live.store.glob("tmp/proj/chats/*")] == \
        [path.name for path in live.files_of(ok(fresh).session_id)]


def test_a_flat_file_written_by_another_program_is_resumed_with_its_messages_and_snapshots_count(gemini_bin, tmp_path):
    live = LiveGemini(gemini_bin, tmp_path, settings=with_retention({"enabled": False}))
    here = live.folder("proj")
    ok(live.one(prompt_step("Register the folder", here)))
    chats = live.chats(here)
    flat_id, snap_id = str(uuid.uuid4()), str(uuid.uuid4())
    stamp = "2026-12-01T10:00:00.000Z"
    flat = write_session(chats, [header(flat_id, stamp), message("u1", "user", "Hand made MARKhand", stamp),
                                 message("g1", "gemini", "Hand reply REPLYhand", stamp),
                                 message("u2", "user", "Second hand MARKhand2", stamp),
                                 message("g2", "gemini", "Second reply", stamp)])
    snapshot = [message("u1", "user", "Kept MARKkept", stamp), message("g1", "gemini", "Kept reply", stamp),
                message("u9", "user", "Only in the snapshot MARKsnap", stamp),
                message("g9", "gemini", "Snapshot reply", stamp)]
    write_session(chats, [header(snap_id, stamp), *snapshot[:2], {"$set": {"messages": snapshot}}])
    flat_run, snap_run = live.run([prompt_step("Next MARKnext", here, resume=flat_id),
                                   prompt_step("Then MARKthen", here, resume=snap_id)])
    assert ok(flat_run).session_id == flat_id
    # exactly the file's messages, the client's own session context joined to the first prompt
    assert sent(flat_run) == [("user", ["<session_context>", "Hand made MARKhand"]),
                              ("model", ["Hand reply REPLYhand"]), ("user", ["Second hand MARKhand2"]),
                              ("model", ["Second reply"]), ("user", ["Next MARKnext"])]
    assert user_texts(merged(flat)[1]) == ["Hand made MARKhand", "Second hand MARKhand2", "Next MARKnext"]
    assert sent(snap_run) == [("user", ["<session_context>", "Kept MARKkept"]), ("model", ["Kept reply"]),
                              ("user", ["Only in the snapshot MARKsnap"]), ("model", ["Snapshot reply"]),
                              ("user", ["Then MARKthen"])]


def test_the_retention_sweep_keys_on_last_updated_runs_headless_and_only_in_the_folder_it_starts_in(gemini_bin,
                                                                                                     tmp_path):
    live = LiveGemini(gemini_bin, tmp_path)
    here, other = live.folder("proj"), live.folder("other")
    for result in live.run([prompt_step("Register", here), prompt_step("Register too", other)]):
        ok(result)
    day = 86_400

    def ago(days: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - days * day))

    def old(chats: Path, days: float, *, minute: str = "2026-12-01T10-00", mtime_days: float = 0) -> Path:
        session_id = str(uuid.uuid4())
        path = write_session(chats, [header(session_id, ago(days)), message("u1", "user", "Old MARKold", ago(days)),
                                     message("g1", "gemini", "Old reply", ago(days))], minute=minute)
        if mtime_days:
            os.utime(path, (time.time() - mtime_days * day, time.time() - mtime_days * day))
        return path

    chats, elsewhere = live.chats(here), live.chats(other)
    forty, five = old(chats, 40), old(chats, 5)
    old_mtime = old(chats, 0, mtime_days=5)                       # written long ago, lastUpdated now
    old_name = old(chats, 0, minute="2025-01-01T10-00")           # a name a year old, lastUpdated now
    other_forty = old(elsewhere, 40)

    def start(retention: dict | None) -> None:
        (live.store / "settings.json").write_text(json.dumps(with_retention(retention)))
        ok(live.one(prompt_step("Start", here)))

    start(None)                                                   # the default: on, maxAge 30d
    assert not forty.exists() and five.exists() and other_forty.exists()
    start({"enabled": True, "maxAge": "12h"})                     # under minRetention (1d): the sweep is off
    assert five.exists()
    start({"enabled": True, "maxAge": "1d"})
    assert not five.exists() and old_mtime.exists() and old_name.exists() and other_forty.exists()
    young = old(chats, 0.5)
    start({"enabled": True, "maxAge": "6h", "minRetention": "1h"})
    assert not young.exists() and old_mtime.exists()


def test_list_sessions_shows_headless_sessions_and_writes_a_title_into_one_of_them(gemini_bin, tmp_path):
    live = LiveGemini(gemini_bin, tmp_path)          # a throwaway store: never a store anyone keeps
    here = live.folder("proj")
    first, second = (ok(result) for result in live.run([prompt_step("First MARKa", here),
                                                         prompt_step("Second MARKb", here)]))
    before = {path: path.read_bytes() for path in live.chats(here).iterdir()}
    listed = live.one(Step(["--list-sessions"], here))
    assert listed.returncode == 0, listed.describe()
    assert first.session_id in listed.stdout and second.session_id in listed.stdout
    changed = {path: path.read_bytes()[len(old):] for path, old in before.items() if path.read_bytes() != old}
    [(path, added)] = changed.items()
    assert path.name.endswith(f"-{second.session_id[:8]}.jsonl")   # the newest session without a summary
    assert json.loads(added)["$set"]["summary"] == "Fake title about MARKb"
    assert [p.split(":")[-1] for p in listed.request_paths] == ["generateContent"]


def test_a_legacy_json_session_is_resumed_into_a_new_jsonl_file_beside_it(gemini_bin, tmp_path):
    live = LiveGemini(gemini_bin, tmp_path, settings=with_retention({"enabled": False}))
    here = live.folder("proj")
    ok(live.one(prompt_step("Register the folder", here)))
    legacy = shutil.copy(LEGACY / "session-2026-12-06T19-51-d3f70215.json", live.chats(here))
    kept = Path(legacy).read_bytes()
    resumed = ok(live.one(prompt_step("After the old one MARKlater", here, resume=LEGACY_ID)))
    assert resumed.session_id == LEGACY_ID
    assert sent(resumed) == [("user", ["<session_context>", "Legacy start MARKold"]),
                             ("model", ["Noted MARKold; my answer word is REPLYold."]),
                             ("user", ["Legacy again MARKolder"]),
                             ("model", ["Noted MARKolder; my answer word is REPLYolder."]),
                             ("user", ["After the old one MARKlater"])]
    assert Path(legacy).read_bytes() == kept                                   # the .json is left as it was
    converted = Path(legacy).with_suffix(".jsonl")
    assert user_texts(merged(converted)[1]) == ["Legacy start MARKold", "Legacy again MARKolder",
                                                "After the old one MARKlater"]
    assert lines(converted)[0]["sessionId"] == LEGACY_ID
