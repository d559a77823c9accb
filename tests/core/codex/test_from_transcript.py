"""A new Codex rollout written from another agent's transcript (issue 30): read back by Reprise's own
Codex reader and listing it gives the source's prompts, replies, shell commands with their output, the
other tool calls as marked text and the times; its bytes are Codex's form (one compact record a line,
ordinals 0..n-1, `session_meta` first); hostile text is carried or, for a lone surrogate, replaced and
said."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reprise.core.errors import UsageError
from reprise.core.paths import OwnPaths
from reprise.core.sources.base import ListingFields, SessionFile
from reprise.core.sources.claude.records import parse_lines
from reprise.core.sources.claude.transcript import read_transcript as read_claude
from reprise.core.sources.codex.fields import ListingFold
from reprise.core.sources.codex.fork import dumps
from reprise.core.sources.codex.from_transcript import codex_stamp, rollout_of, rollout_path, shell_script
from reprise.core.sources.codex.layout import CodexRoot, session_id_of
from reprise.core.sources.codex.listing import CodexListing
from reprise.core.sources.codex.records import parse_rollout
from reprise.core.sources.codex.transcript import code_mode_command, read_transcript
from reprise.core.sources.session_writing import MARK, tool_call_text
from reprise.core.transcript import Compaction, ToolCall, Transcript, Turn

CLAUDE = Path(__file__).resolve().parents[2] / "fixtures" / "claude-store" / "projects"
NEW_ID = "01a2331b-0000-7000-8000-00000000c0de"
NOW = datetime(2026, 12, 7, 10, 11, 12, 345678, tzinfo=UTC)
AGENT = "Claude Code"


def claude_transcript(prefix: str) -> Transcript:
    [path] = CLAUDE.glob(f"*/{prefix}*.jsonl")
    transcript, _ = read_claude(parse_lines(path.read_bytes(), 0, skim=False).records)
    return transcript


def written(transcript: Transcript, **options) -> tuple[bytes, list[str]]:
    return rollout_of(transcript, session_id=NEW_ID, folder=options.pop("folder", "/work/alpha"),
                      cli_version="0.171.0", agent=options.pop("agent", AGENT), now=options.pop("now", NOW))


def read_back(data: bytes) -> Transcript:
    parsed = parse_rollout(data)
    assert parsed.warnings == []
    transcript, warnings = read_transcript(parsed.records, NEW_ID)
    assert warnings == [] and transcript.notes == []
    return transcript


def listed(data: bytes):
    fold = ListingFold()
    fold.feed(parse_rollout(data, skim=True).records)
    return fold.result()


def shown_output(output: str) -> str:
    """A command's output as Codex's reader gives it back: after the code-mode tool's header, as for
    Codex's own rollouts."""
    return f"Script completed\nOutput:\n\n{output}"


def expected_reply(turn: Turn) -> str:
    """The reply Codex's reader gives back: the calls Codex has no tool for, as marked text, then the reply."""
    return "\n\n".join([*(tool_call_text(call, AGENT) for call in turn.tool_calls if call.shell is None), turn.reply])


@pytest.mark.parametrize("prefix", ["55555555", "22222222", "33333333"])
def test_a_real_claude_session_reads_back_with_its_prompts_replies_calls_and_times(prefix):
    source = claude_transcript(prefix)
    data, notes = written(source)
    back = read_back(data)
    assert back.session_id == NEW_ID and len(back.turns) == len(source.turns)
    for old, new in zip(source.turns, back.turns, strict=True):
        assert new.user_message == old.user_message
        assert new.reply == expected_reply(old)
        assert (new.started_at, new.ended_at) == (old.started_at, old.ended_at)   # Claude Code's form is Codex's
        assert new.status == "succeeded" and new.error is None and new.thinking == ""
        shells = [call for call in old.tool_calls if call.shell is not None]
        assert [(call.shell, call.result) for call in new.tool_calls] == [
            (call.shell, shown_output(call.result or "")) for call in shells]
        assert [command.command for command in new.commands] == [call.shell for call in shells]
    others = sum(call.shell is None for turn in source.turns for call in turn.tool_calls)
    assert bool(others) == any("carried as text" in note for note in notes)


def test_the_bash_call_is_the_code_mode_exec_call_in_the_form_codex_writes_it():
    data, notes = written(claude_transcript("55555555"))
    items = [record["payload"] for record in parse_rollout(data).records if record["type"] == "response_item"]
    [call] = [item for item in items if item["type"] == "custom_tool_call"]
    [output] = [item for item in items if item["type"] == "custom_tool_call_output"]
    command = "echo OUTWORD$((6*7)) && echo second line"
    assert call["name"] == "exec" and call["input"] == (
        'const done = await tools.exec_command({"cmd": "echo OUTWORD$((6*7)) && echo second line"});\n'
        "text(done.output);\n")
    assert code_mode_command(call["input"]) == command
    assert output["call_id"] == call["call_id"]
    assert [part["text"] for part in output["output"]] == ["Script completed\nOutput:\n", "OUTWORD42\nsecond line"]
    assert notes == []


def test_the_read_and_write_calls_are_marked_assistant_text():
    data, notes = written(claude_transcript("22222222"))
    texts = [record["payload"]["content"][0]["text"] for record in parse_rollout(data).records
             if record["type"] == "response_item" and record["payload"].get("role") == "assistant"]
    assert texts[0].startswith(f"{MARK} Claude Code tool call `Read`:\n") and "notes.txt" in texts[0]
    assert f"{MARK} its result:\n1\ta file for the scenario's folder" in texts[0]
    assert texts[2].startswith(f"{MARK} Claude Code tool call `Write`:")
    assert notes == [f"2 tool calls of Claude Code that Codex has no tool for are carried as text marked {MARK}"]


def test_the_listing_reads_the_turns_the_prompts_and_the_folder():
    source = claude_transcript("33333333")
    found = listed(written(source, folder="/work/beta")[0])
    assert (found.session_id, found.cwd, found.source, found.turns) == (NEW_ID, "/work/beta", "cli", 3)
    assert (found.first_message, found.last_message) == ("Start a plan MARKfirst", "Finish the plan MARKthird")
    assert found.last_status == "succeeded" and not found.hidden_by_agent
    assert found.started_at == "2026-12-07T10:11:12.345Z"   # the new thread's birth
    assert found.last_activity == "2026-12-07T10:11:12.345Z"


def test_the_bytes_are_codexs_form_with_ordinals_from_zero_and_session_meta_first():
    data, _ = written(claude_transcript("33333333"))
    lines = data.split(b"\n")
    assert lines[-1] == b"" and data.endswith(b"\n")
    records = [json.loads(line) for line in lines[:-1]]
    assert [dumps(record) for record in records] == [line + b"\n" for line in lines[:-1]]
    assert [record["ordinal"] for record in records] == list(range(len(records)))
    assert all(list(record) == ["timestamp", "ordinal", "type", "payload"] for record in records)
    meta = records[0]
    assert meta["type"] == "session_meta" and meta["payload"] == {
        "id": NEW_ID, "session_id": NEW_ID, "timestamp": "2026-12-07T10:11:12.345Z", "cwd": "/work/alpha",
        "originator": "reprise", "cli_version": "0.171.0", "source": "cli"}
    kinds = {record["type"] for record in records}
    assert kinds == {"session_meta", "event_msg", "response_item"}   # no setup, turn_context or world_state


def test_the_path_is_todays_date_folder_named_as_codex_names_a_rollout(tmp_path):
    root = CodexRoot(tmp_path / ".codex")
    path = rollout_path(root, NEW_ID, NOW)
    local = NOW.astimezone()
    assert path.parent == root.sessions / local.strftime("%Y") / local.strftime("%m") / local.strftime("%d")
    assert session_id_of(path.name) == NEW_ID
    assert path.name == f"rollout-{local.strftime('%Y-%m-%dT%H-%M-%S')}-{NEW_ID}.jsonl"


def test_codex_listing_finds_and_reads_the_rollout_at_its_path(tmp_path):
    root = CodexRoot(tmp_path / ".codex")
    path = rollout_path(root, NEW_ID, NOW)
    path.parent.mkdir(parents=True)
    path.write_bytes(written(claude_transcript("55555555"))[0])
    listing = CodexListing([root.path], OwnPaths(tmp_path / "data", "codex"))
    assert listing.locate(NEW_ID) == path
    info = path.stat()
    read = listing.read_listing(SessionFile(None, NEW_ID, str(path), info.st_size, info.st_mtime_ns, None,
                                            str(path.parent)), time.time_ns())
    assert isinstance(read.fields, ListingFields), read.fields
    assert (read.fields.turns, read.fields.first_message) == (1, "Please RUN: echo OUTWORD$((6*7)) && echo second line")


def test_times_are_written_in_codexs_form_and_a_turn_without_any_gets_now():
    turns = [Turn("a", "offset", "succeeded", reply="r1", started_at="2026-05-01T12:00:00+02:00",
                  ended_at="2026-05-01T10:00:03.5+00:00"),
             Turn("b", "only the end", "succeeded", reply="r2", ended_at="2026-05-02T08:00:00Z"),
             Turn("c", "none", "succeeded", reply="r3"),
             Turn("d", "unreadable", "succeeded", reply="r4", started_at="yesterday")]
    data, notes = written(Transcript("fractal", "x", turns), agent="Fractal")
    back = read_back(data)
    assert [(turn.started_at, turn.ended_at) for turn in back.turns] == [
        ("2026-05-01T10:00:00.000Z", "2026-05-01T10:00:03.500Z"),
        ("2026-05-02T08:00:00.000Z", "2026-05-02T08:00:00.000Z"),
        (codex_stamp(NOW), codex_stamp(NOW)),
        (codex_stamp(NOW), codex_stamp(NOW))]
    assert notes == ["1 turn without a recorded time is dated now"]


def test_failed_and_interrupted_turns_carry_what_exists_and_the_error_as_marked_text():
    turns = [Turn("a", "try it", "failed", reply="partial", error="HTTP 500: overloaded",
                  tool_calls=[ToolCall("Bash", "{}", "boom", is_error=True, shell="make")]),
             Turn("b", "stop", "interrupted"),
             Turn("c", "no result", "succeeded", reply="ok", tool_calls=[ToolCall("Bash", "{}", shell="sleep 9")])]
    data, _ = written(Transcript("claude", "x", turns))
    back = read_back(data)
    failed, stopped, unanswered = back.turns
    assert failed.status == "failed" and failed.error == "HTTP 500: overloaded"
    assert failed.reply == f"partial\n\n{MARK} this turn failed in Claude Code: HTTP 500: overloaded"
    assert failed.tool_calls[0].result == f"{MARK} the command failed in Claude Code.\nOutput:\n\nboom"
    assert stopped.status == "interrupted" and stopped.reply == f"{MARK} this turn was interrupted in Claude Code."
    assert unanswered.tool_calls[0].result == shown_output(f"{MARK} no output was recorded.")
    fields = listed(data)
    assert fields.turns == 3 and fields.last_status == "succeeded"


HOSTILE = 'line one\nline "two" \\ back\u2028sep\u2029para \x00nul \U0001f600 é ⟦x⟧ });\ntext(x);\n'


def test_hostile_text_is_carried_exactly():
    call = ToolCall("Bash", "{}", HOSTILE, shell=HOSTILE)
    turn = Turn("a", HOSTILE, "succeeded", reply=HOSTILE, tool_calls=[call, ToolCall(HOSTILE, HOSTILE, HOSTILE)])
    data, notes = written(Transcript("claude", "x", [turn]), folder=HOSTILE)
    assert data.count(b"\n") == len(parse_rollout(data).records)   # every newline is escaped but the records' ends
    [back] = read_back(data).turns
    assert back.user_message == HOSTILE
    assert back.tool_calls[0].shell == HOSTILE and back.tool_calls[0].result == shown_output(HOSTILE)
    assert back.reply == f"{tool_call_text(ToolCall(HOSTILE, HOSTILE, HOSTILE), AGENT)}\n\n{HOSTILE}"
    assert listed(data).cwd == HOSTILE
    assert not any("surrogate" in note for note in notes)


def test_a_lone_surrogate_becomes_the_replacement_character_and_is_noted():
    turn = Turn("a", "bad \udc80 prompt", "succeeded", reply="bad \ud83d reply",
                tool_calls=[ToolCall("Bash", "{}", "out \udfff", shell="echo \ud800")])
    data, notes = written(Transcript("claude", "x", [turn]))
    data.decode("utf-8")
    [back] = read_back(data).turns
    assert (back.user_message, back.reply) == ("bad \ufffd prompt", "bad \ufffd reply")
    assert (back.tool_calls[0].shell, back.tool_calls[0].result) == ("echo \ufffd", shown_output("out \ufffd"))
    assert notes[-1:] == ["4 texts held a lone surrogate, written as U+FFFD (a UTF-8 file cannot hold one)"]


def test_thinking_and_compactions_are_left_out_and_said():
    turn = Turn("a", "think", "succeeded", reply="done", thinking="secret reasoning")
    source = Transcript("claude", "x", [turn])
    source.compactions.append(Compaction(0))
    data, notes = written(source)
    assert b"secret reasoning" not in data
    assert notes[0].startswith("the thinking of 1 turn is left out") and "compacted this session 1 time" in notes[1]


def test_an_empty_transcript_is_the_session_meta_alone():
    data, notes = written(Transcript("claude", "x"))
    [record] = parse_rollout(data).records
    assert record["type"] == "session_meta" and record["ordinal"] == 0 and notes == []
    assert read_back(data).turns == [] and listed(data).turns == 0


def test_writing_is_pure_and_refuses_an_id_codex_would_not_take():
    source = claude_transcript("22222222")
    assert written(source) == written(source)
    with pytest.raises(UsageError):
        rollout_of(source, session_id="not-a-uuid", folder="/w", cli_version="0.171.0", agent=AGENT, now=NOW)


def test_the_script_keeps_any_command_readable_back():
    for command in ["a", 'say "hi"\nthen', "});\ntext(x);\n", "\u2028", "\\"]:
        assert code_mode_command(shell_script(command)) == command
