"""Writes of Gemini CLI sessions: the client's byte form, a fork that holds exactly the kept turns
(absent from every `$set.messages` snapshot too), and the liveness rule of a process started on an id."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reprise.core.errors import UsageError
from reprise.core.sources.gemini.fork import message_texts, plan_fork, split_turns
from reprise.core.sources.gemini.layout import project_hash
from reprise.core.sources.gemini.lines import chat_of_bytes
from reprise.core.sources.gemini.liveness import ids_in_argv
from reprise.core.sources.gemini.new import new_argv
from reprise.core.sources.gemini.writer import file_name, header, line, stringify, write_session
from reprise.core.trimming import TrimOptions

SID = "5f0c2a3e-1b2c-4d5e-8f90-123456789abc"
FORK = "0a1b2c3d-4e5f-4a6b-9c7d-8e9f0a1b2c3d"
NOW = datetime(2026, 12, 6, 19, 45, 30, 123456, tzinfo=UTC)
FOLDER = "/work/project"


def _js(record: Any) -> bytes:
    """What JSON.stringify writes (verified with node for these records)."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _message(mid: str, kind: str, content: Any, **more: Any) -> dict[str, Any]:
    return {"id": mid, "timestamp": "2026-12-06T10:00:00.000Z", "type": kind, "content": content, **more}


def _session(*, rewind: bool = False, snapshot: bool = False) -> bytes:
    """A session as Gemini CLI 0.61.0 writes one: header, the injected context, three turns (the second
    with a tool call written twice), `$set` after each message; optionally a `$set.messages` snapshot
    holding the first two turns, and a rewound fourth turn."""
    out = [{"sessionId": SID, "projectHash": project_hash(FOLDER), "startTime": "2026-12-06T10:00:00.000Z",
            "lastUpdated": "2026-12-06T10:00:00.000Z", "kind": "main"},
           _message("ctx", "user", [{"text": "<session_context>\nfolder: /work/project\n</session_context>"}])]
    turn1 = [_message("u1", "user", [{"text": "first question"}]),
             _message("g1", "gemini", "first answer " + "a" * 50, tokens={"input": 100, "output": 10}, model="m")]
    call = {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "success",
            "result": [{"functionResponse": {"id": "c1", "name": "run_shell_command",
                                             "response": {"output": "file.txt " + "o" * 300}}}]}
    turn2 = [_message("u2", "user", [{"text": "second question"}]),
             _message("g2", "gemini", "", toolCalls=[{**call, "status": "executing", "result": None}]),
             _message("g2", "gemini", "", toolCalls=[call]),
             _message("g2b", "gemini", "second answer " + "b" * 80)]
    turn3 = [_message("u3", "user", "third question"), _message("g3", "gemini", "third answer")]
    out += turn1
    out.append({"$set": {"lastUpdated": "2026-12-06T10:01:00.000Z"}})
    if snapshot:
        out.append({"$set": {"messages": [out[1], *turn1, turn2[0], turn2[2], turn2[3]]}})
    else:
        out += turn2
    out += turn3
    if rewind:
        out += [_message("u4", "user", "a question rewound"), _message("g4", "gemini", "gone"), {"$rewindTo": "u4"}]
    out.append({"$set": {"lastUpdated": "2026-12-06T10:02:00.000Z", "summary": "A title"}})
    return b"".join(_js(record) for record in out)


def _count(text: str) -> int:
    return len(text) // 4 + 1


def _plan(data: bytes, **options: Any):
    return plan_fork(data, TrimOptions(**options), fork_id=FORK, now=NOW, context_before=1000, count=_count)


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in data.splitlines()]


def test_stringify_writes_json_as_javascript_does() -> None:
    record = {"a": [1, 2.5, 1e-5, 1e-7, 1e21, 1.5e300, "é\u2028\x01\ud83d", None, True], "b/c": "</x>"}
    assert stringify(record) == '{"a":[1,2.5,0.00001,1e-7,1e+21,1.5e+300,"é\u2028\\u0001\\ud83d",null,true],' \
                                '"b/c":"</x>"}'
    assert line({"x": "\n\t\"\\"}) == b'{"x":"\\n\\t\\"\\\\"}\n'


def test_names_and_headers_are_the_clients() -> None:
    assert file_name(SID, NOW) == "session-2026-12-06T19-45-5f0c2a3e.jsonl"
    assert header(SID, "h", NOW, NOW) == {"sessionId": SID, "projectHash": "h", "startTime": "2026-12-06T19:45:30.123Z",
                                          "lastUpdated": "2026-12-06T19:45:30.123Z", "kind": "main"}
    assert project_hash("/a") == hashlib.sha256(b"/a").hexdigest()
    with pytest.raises(UsageError):
        file_name("../x", NOW)


def test_a_new_file_is_never_written_over_another(tmp_path: Path) -> None:
    chats = tmp_path / "tmp" / "p" / "chats"
    chats.mkdir(parents=True)
    path = write_session(tmp_path, chats, "session-a.jsonl", b"one\n")
    assert path.read_bytes() == b"one\n"
    with pytest.raises(FileExistsError):
        write_session(tmp_path, chats, "session-a.jsonl", b"two\n")
    assert path.read_bytes() == b"one\n"


def test_turns_start_at_each_prompt_and_the_injected_context_is_in_none() -> None:
    chat = chat_of_bytes(_session())
    turns = split_turns(chat.messages)
    assert [(turn.number, turn.turn_id) for turn in turns] == [(1, "u1"), (2, "u2"), (3, "u3")]
    assert [message["id"] for message in chat.messages[turns[1].start:turns[1].end]] == ["u2", "g2", "g2b"]


def test_a_fork_is_flat_and_holds_exactly_the_kept_turns() -> None:
    data = _session()
    plan = _plan(data, drop=("2",))
    assert plan.data is not None and plan.changed
    lines = _lines(plan.data)
    assert lines[0] == {"sessionId": FORK, "projectHash": project_hash(FOLDER), "startTime": "2026-12-06T19:45:30.123Z",
                        "lastUpdated": "2026-12-06T19:45:30.123Z", "kind": "main"}
    assert [record["id"] for record in lines[1:]] == ["ctx", "u1", "g1", "u3", "g3"]
    assert b"second" not in plan.data and b"run_shell_command" not in plan.data
    assert plan.data.split(b"\n", 1)[1] == b"".join(_js(m) for m in chat_of_bytes(data).messages
                                                    if m["id"] in {"ctx", "u1", "g1", "u3", "g3"})
    forked = chat_of_bytes(plan.data)
    assert forked.session_id == FORK and forked.summary is None and not forked.rewound
    assert [change.change for change in plan.turns] == ["dropped"]
    assert plan.meter_after is not None and plan.meter_after < 1000
    assert any("summary" in note for note in plan.notes)


def test_a_dropped_turn_is_gone_from_every_messages_snapshot_too() -> None:
    data = _session(snapshot=True)
    assert data.count(b"second question") == 1   # only in the snapshot
    plan = _plan(data, drop=("u2",))
    assert plan.data is not None and b"second question" not in plan.data and b"$set" not in plan.data
    assert [m["id"] for m in chat_of_bytes(plan.data).messages] == ["ctx", "u1", "g1", "u3", "g3"]


def test_a_rewound_turn_is_not_forked() -> None:
    plan = _plan(_session(rewind=True), keep_history=2)
    assert plan.data is not None and b"rewound" not in plan.data and b"first question" not in plan.data
    assert any("rewound" in note for note in plan.notes)


def test_cap_replies_cuts_replies_and_tool_results_but_never_a_prompt() -> None:
    plan = _plan(_session(), cap_replies=20, spare=1)
    assert plan.data is not None
    messages = {m["id"]: m for m in chat_of_bytes(plan.data).messages}
    assert messages["g1"]["content"].startswith("first answer aaaaaaa\n[reprise: ")
    output = messages["g2"]["toolCalls"][0]["result"][0]["functionResponse"]["response"]["output"]
    assert output.startswith("file.txt ooooooooooo\n[reprise: ") and plan.source.sha256 in output
    assert messages["u1"]["content"] == [{"text": "first question"}]
    assert messages["g3"]["content"] == "third answer"   # the newest turn is spared
    assert {change.change for change in plan.turns} == {"capped"}


def test_forks_that_cannot_be_made_are_refused() -> None:
    with pytest.raises(UsageError, match="every turn"):
        _plan(_session(), drop=("1-3",))
    with pytest.raises(UsageError, match="no prompt"):
        _plan(b"".join(_js(r) for r in [{"sessionId": SID, "projectHash": "h"}]), drop=("1",))
    with pytest.raises(UsageError, match="subagent"):
        _plan(_js({"sessionId": SID, "projectHash": "h", "kind": "subagent"}), drop=("1",))
    assert not _plan(_session(), keep_history=5).changed
    deep = _session().replace(b'"third answer"', b"[" * 800 + b"]" * 800)
    with pytest.raises(UsageError, match="nested too deeply"):
        _plan(deep, drop=("1",))


def test_message_texts_count_tool_arguments_and_results() -> None:
    call = {"name": "x", "args": {"a": 1}, "result": "out"}
    assert message_texts(_message("g", "gemini", "hi", toolCalls=[call])) == ["hi", '{"a": 1}', "out"]


def test_a_process_started_on_the_id_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc = tmp_path / "proc"

    def cmdline(pid: int, argv: list[str]) -> None:
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "cmdline").write_bytes(b"\0".join(item.encode() for item in argv) + b"\0")

    cmdline(1, ["node", "/usr/bin/gemini", "--resume", SID, "-p", ""])
    cmdline(2, ["node", "/x/gemini.js", f"--session-id={SID}"])
    cmdline(3, ["vim", "--resume", SID])
    monkeypatch.setattr("reprise.core.sources.gemini.liveness.Path",
                        lambda path: Path(str(path).replace("/proc", str(proc), 1)))
    assert list(ids_in_argv(1)) == [SID] and list(ids_in_argv(2)) == [SID]
    assert list(ids_in_argv(3)) == [] and list(ids_in_argv(4)) == []


def test_new_names_the_id_in_the_command() -> None:
    assert new_argv(["gemini", "--session-id", "{session_id}"], SID, Path(FOLDER)) == ["gemini", "--session-id", SID]
    with pytest.raises(UsageError):
        new_argv(["gemini"], SID, Path(FOLDER))


# --- the trash, keep and send, on the real client's files -----------------------------------------

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "gemini" / "store-0.61.0" / "home" / ".gemini"
KEY = "alpha--0123456789abcdef"
THREE = "e9b105e8-2eb0-4bfb-b1f9-a0e942bfdde1"


@pytest.fixture
def copied(tmp_path: Path) -> Path:
    import shutil

    store = tmp_path / "home" / ".gemini"
    shutil.copytree(FIXTURE, store)
    return store


def _own(tmp_path: Path):
    from contextlib import nullcontext

    from reprise.core.audit import AuditLog
    from reprise.core.paths import OwnPaths

    paths = OwnPaths(tmp_path / "data", "gemini")
    return paths, AuditLog(paths), lambda ref: nullcontext()


def test_trash_and_restore_give_back_the_session_file_and_its_subagents(copied: Path, tmp_path: Path) -> None:
    from reprise.core.paths import SessionRef
    from reprise.core.sources.gemini.trash import GeminiTrash

    main = copied / "tmp" / "alpha" / "chats" / "session-2026-12-06T19-46-e9b105e8.jsonl"
    subagents = main.parent / THREE
    subagents.mkdir()
    (subagents / "agent-1.jsonl").write_text('{"sessionId":"x","projectHash":"h","kind":"subagent"}\n')
    before = main.read_bytes()
    trash = GeminiTrash(*_own(tmp_path))
    ref = SessionRef(KEY, THREE, "gemini")
    trash.remove(ref, main, copied)
    assert not main.exists() and not subagents.exists()
    assert [entry.ref.session_id for entry in trash.entries([KEY])] == [THREE]
    with pytest.raises(UsageError):
        trash.remove(SessionRef(KEY, "0b721226-0000-4000-8000-000000000000", "gemini"), main, copied)
    trash.restore(ref, [copied])
    assert main.read_bytes() == before and (subagents / "agent-1.jsonl").exists()
    assert trash.is_place(main, copied, THREE) and not trash.is_place(main, copied / "x", THREE)


def test_a_resumes_stub_goes_to_the_trash_with_its_session_and_comes_back(copied: Path, tmp_path: Path) -> None:
    from reprise.core.paths import SessionRef
    from reprise.core.sources.gemini.trash import GeminiTrash

    chats = copied / "tmp" / "alpha" / "chats"
    main, stub = chats / "session-2026-12-06T19-46-e9b105e8.jsonl", chats / "session-2026-12-06T19-48-e9b105e8.jsonl"
    before = {path: path.read_bytes() for path in (main, stub)}
    trash = GeminiTrash(*_own(tmp_path))
    ref = SessionRef(KEY, THREE, "gemini")
    trash.remove(ref, main, copied)
    assert not main.exists() and not stub.exists()
    assert (trash.files(ref).companions / stub.name).read_bytes() == before[stub]
    assert [entry.ref for entry in trash.entries([KEY])] == [ref]
    trash.restore(ref, [copied])
    assert {path: path.read_bytes() for path in (main, stub)} == before
    assert not trash.files(ref).companions.exists()
    trash.remove(ref, main, copied)
    result = trash.purge([KEY], confirmed=True)
    assert [entry.ref for entry in result.purged] == [ref]
    assert not trash.files(ref).companions.exists() and not stub.exists()
    assert sorted(path.name for path in chats.iterdir()) == ["session-2026-12-06T19-48-0b721226.jsonl",
                                                          "session-2026-12-06T19-48-d6887d59.jsonl"]


def test_keep_copies_the_session_file_and_reads_it_back(copied: Path, tmp_path: Path) -> None:
    from reprise.core.archive import Archive
    from reprise.core.errors import ArchiveError
    from reprise.core.paths import SessionRef
    from reprise.core.sources.gemini.keep import keep, kept_sessions, read_kept

    paths, _, _ = _own(tmp_path)
    main = copied / "tmp" / "alpha" / "chats" / "session-2026-12-06T19-46-e9b105e8.jsonl"
    ref = SessionRef(KEY, THREE, "gemini")
    result = keep(Archive(paths), ref, main, copied)
    assert result.session.size == main.stat().st_size and not result.problems
    assert [kept.part for kept in result.added] == ["session", "companions/session-2026-12-06T19-48-e9b105e8.jsonl"]
    assert read_kept(Archive(paths), ref) == main.read_bytes()
    assert [kept.ref for kept in kept_sessions(paths).sessions] == [ref]
    with pytest.raises(ArchiveError, match="session-<minute>-0b721226.jsonl"):
        keep(Archive(paths), SessionRef(KEY, "0b721226-0000-4000-8000-000000000000", "gemini"), main, copied)


def _finished(stdout: str, status: int = 0, stderr: str = ""):
    from reprise.core.processes import CapturedOutput, Finished

    data = stdout.encode()
    return Finished(status, CapturedOutput(data, len(data), len(stdout), "0" * 64, 1 << 20), stderr)


def test_the_reply_is_read_from_the_json_the_client_prints() -> None:
    from reprise.core.sources.gemini.turns import read_output

    printed = json.dumps({"session_id": SID, "response": "Noted.", "stats": {}}, indent=2)
    outcome = read_output(_finished("Loaded cached credentials.\n" + printed), SID, [])
    assert (outcome.status, outcome.response) == ("succeeded", "Noted.")
    failed = read_output(_finished(json.dumps({"error": {"type": "Error", "message": "quota"}}), 1), SID, [])
    assert failed.status == "failed" and "quota" in (failed.error or "")
    other = read_output(_finished(json.dumps({"session_id": FORK, "response": "x"})), SID, [])
    assert any(FORK in note for note in other.notes)
    assert read_output(_finished("", 42, "Invalid session identifier"), SID, []).error == \
        "Exit status 42. Invalid session identifier"


def test_gemini_cli_home_names_the_stores_home_only_when_needed(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from reprise.core.sources.gemini.turns import client_env

    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert "GEMINI_CLI_HOME" not in client_env(tmp_path / ".gemini")
    assert client_env(tmp_path / "other" / ".gemini")["GEMINI_CLI_HOME"] == str(tmp_path / "other")
