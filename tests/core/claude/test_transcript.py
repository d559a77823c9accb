"""A Claude Code session as the neutral transcript, and its search texts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprise.core.sources.agent_transcript import TEXT_CHARS
from reprise.core.sources.claude.records import parse_lines
from reprise.core.sources.claude.search import SEARCH_CHARS, search_records
from reprise.core.sources.claude.transcript import read_transcript

from .builder import ClaudeFile, rewound

STORE = Path(__file__).resolve().parents[2] / "fixtures" / "claude-store" / "projects"


def transcript_of(session: ClaudeFile, **kwargs):
    return read_transcript(parse_lines(session.data(), 0).records, **kwargs)


def _tool_session() -> ClaudeFile:
    session = ClaudeFile()
    session.prompt("Fix the bug")
    session.assistant("Let me look.", thinking="The bug is probably in parse().", split=True,
                      tools=(("toolu_r", "Read", {"file_path": "/src/a.py"}),), usage=(10, 100, 1000, 5))
    session.tool_result("toolu_r", "def parse(): ...",
                        tool_use_result={"type": "text", "file": {"filePath": "/src/a.py"}})
    edit = {"file_path": "/src/a.py", "old_string": "a", "new_string": "b"}
    session.assistant(None, tools=(("toolu_e", "Edit", edit), ("toolu_w", "Write", {"file_path": "/src/b.py"})),
                      usage=(20, 200, 1100, 6))
    session.tool_result("toolu_e", "edited")
    session.tool_result("toolu_w", "written")
    session.assistant(None, tools=(("toolu_b", "Bash", {"command": "pytest -q"}),), usage=(30, 300, 1200, 7))
    session.tool_result("toolu_b", "1 failed", stdout="1 failed", stderr="warning: slow", is_error=True)
    session.assistant("Fixed, one test still fails.", usage=(40, 400, 1300, 8))
    session.system("turn_duration", durationMs=1234)
    return session


def test_a_turn_has_its_reply_thinking_tools_files_commands_and_usage():
    transcript, warnings = transcript_of(_tool_session())
    assert warnings == [] and transcript.source == "claude" and len(transcript.turns) == 1
    turn = transcript.turns[0]
    assert turn.user_message == "Fix the bug" and turn.status == "succeeded"
    assert turn.reply == "Let me look.\n\nFixed, one test still fails."
    assert turn.thinking == "The bug is probably in parse()."
    assert [(c.name, c.result, c.is_error) for c in turn.tool_calls] == [
        ("Read", "def parse(): ...", False), ("Edit", "edited", False), ("Write", "written", False),
        ("Bash", "1 failed\nwarning: slow", True)]
    assert json.loads(turn.tool_calls[3].input) == {"command": "pytest -q"}
    assert [(f.path, f.provenance) for f in turn.files_read] == [("/src/a.py", "observed")]
    assert [f.path for f in turn.files_modified] == ["/src/a.py", "/src/b.py"]
    assert [(c.command, c.provenance) for c in turn.commands] == [("pytest -q", "observed")]
    usage = turn.usage
    assert usage is not None
    assert (usage.input_tokens, usage.cache_creation_tokens, usage.cache_read_tokens, usage.output_tokens) == (
        100, 1000, 4600, 26)   # the split first message once
    assert usage.context_tokens == 40 + 400 + 1300 and usage.iterations == 4 and usage.duration_ms == 1234
    assert turn.started_at is not None and turn.ended_at is not None and turn.started_at < turn.ended_at


def test_turns_follow_the_main_chain_and_the_rewound_branch_is_a_note():
    transcript, _ = transcript_of(rewound(), subagents=2)
    assert [(t.user_message, t.reply) for t in transcript.turns] == [("one", "r1"), ("two again", "r2b")]
    assert any("1 rewound or forked branch" in note for note in transcript.notes)
    assert any("2 subagent transcripts" in note for note in transcript.notes)


def test_an_api_error_fails_its_turn_with_the_error_and_an_interrupt_marks_the_next():
    session = ClaudeFile()
    session.prompt("one")
    session.api_error("Overloaded, try later")
    session.prompt("two")
    session.assistant("partial")
    session.interrupt()
    session.prompt("three")
    session.synthetic_error("API Error: Request timed out.")
    transcript, _ = transcript_of(session)
    assert [(t.status, t.error) for t in transcript.turns] == [
        ("failed", "Overloaded, try later"), ("interrupted", None), ("failed", "API Error: Request timed out.")]


def test_a_compaction_is_marked_before_the_turn_after_it_with_its_tokens():
    session = ClaudeFile()
    session.turn("one", "r1")
    session.turn("two", "r2")
    session.compact(pre=45_000, post=2_500)
    session.turn("three", "r3")
    transcript, _ = transcript_of(session)
    assert [t.user_message for t in transcript.turns] == ["one", "two", "three"]
    [compaction] = transcript.compactions
    assert (compaction.before_turn, compaction.tokens_before, compaction.tokens_after) == (2, 45_000, 2_500)


def test_a_slash_command_the_model_answered_is_its_own_turn():
    session = ClaudeFile()
    session.turn("one", "r1")
    session.slash("review", "the parser", "Review the parser for bugs.")
    session.assistant("Two bugs.")
    session.compact()
    session.turn("two", "r2")
    transcript, _ = transcript_of(session)
    assert [(t.user_message, t.reply) for t in transcript.turns] == [
        ("one", "r1"), ("/review the parser", "Two bugs."), ("two", "r2")]
    assert transcript.compactions[0].before_turn == 2


def test_long_tool_outputs_are_cut_and_say_how_much():
    session = ClaudeFile()
    session.prompt("dump")
    session.assistant(None, tools=(("toolu_1", "Bash", {"command": "cat big"}),))
    session.tool_result("toolu_1", "y" * (TEXT_CHARS + 500))
    transcript, _ = transcript_of(session)
    result = transcript.turns[0].tool_calls[0].result
    assert result is not None and result.startswith("y" * TEXT_CHARS) and result.endswith("(500 more characters)")


def test_unknown_types_and_unmatched_results_are_warnings_not_errors():
    session = ClaudeFile()
    session.prompt("one")
    session.unknown("a-type-from-the-future")
    session.tool_result("toolu_nowhere", "orphan output")
    session.assistant("fine")
    transcript, warnings = transcript_of(session)
    assert transcript.turns[0].reply == "fine"
    assert any("a-type-from-the-future" in w for w in warnings)
    assert any("a tool result for a call" in w for w in warnings)


def test_search_texts_cover_prompt_reply_thinking_tools_and_errors_by_turn():
    session = _tool_session()
    session.prompt("second")
    session.api_error("boom")
    found = {(r.turn, r.field): r.text for r in search_records(parse_lines(session.data(), 0).records)}
    assert found[(1, "user")] == "Fix the bug"
    assert "Fixed, one test still fails." in found[(1, "response")]
    assert "parse()" in found[(1, "thinking")]
    assert "pytest -q" in found[(1, "tool")] and "warning: slow" in found[(1, "tool")]
    assert found[(2, "error")] == "boom" and (2, "response") not in found


def test_a_search_text_is_bounded():
    session = ClaudeFile()
    session.prompt("p" * (SEARCH_CHARS + 10))
    session.assistant("r")
    [prompt] = [r for r in search_records(parse_lines(session.data(), 0).records) if r.field == "user"]
    assert len(prompt.text) == SEARCH_CHARS


# --- the real client's files ----------------------------------------------------------------------------

def _real(prefix: str):
    found = sorted(STORE.glob(f"*/{prefix}-*.jsonl"))
    if not found:
        pytest.skip("the real Claude Code store is not in this checkout")
    return parse_lines(found[0].read_bytes(), 0).records


def test_the_real_three_turn_session_has_every_prompt_and_reply_in_order():
    transcript, warnings = read_transcript(_real("33333333"))
    assert warnings == []
    assert [(t.user_message, t.reply) for t in transcript.turns] == [
        ("Start a plan MARKfirst", "Noted MARKfirst; my answer word is REPLYfirst."),
        ("Continue the plan MARKsecond", "Noted MARKsecond; my answer word is REPLYsecond."),
        ("Finish the plan MARKthird", "Noted MARKthird; my answer word is REPLYthird."),
    ]
    assert all(t.status == "succeeded" and t.usage is not None and t.usage.iterations == 1 for t in transcript.turns)


def test_the_real_bash_session_has_its_command_and_output():
    records = _real("55555555")
    transcript, _ = read_transcript(records)
    [turn] = transcript.turns
    assert [(c.name, c.result) for c in turn.tool_calls] == [("Bash", "OUTWORD42\nsecond line")]
    assert [c.command for c in turn.commands] == ["echo OUTWORD$((6*7)) && echo second line"]
    assert turn.reply == "I will run it.\n\nThe command printed 2 lines; REPLYtoolresult."
    assert turn.usage is not None and turn.usage.iterations == 2   # msg_fake0005 split over two lines, then 0006
    fields = {(r.field, r.turn) for r in search_records(records) if "OUTWORD42" in r.text}
    assert ("tool", 1) in fields


def test_the_real_compacted_session_marks_the_compaction_before_its_third_turn():
    transcript, _ = read_transcript(_real("77777777"))
    assert [t.user_message for t in transcript.turns] == [
        "Remember the colour MARKteal", "And the shape MARKhexagon", "What now? MARKaftercompact"]
    [compaction] = transcript.compactions
    assert (compaction.before_turn, compaction.tokens_before, compaction.tokens_after) == (2, 12374, 2641)


def test_the_real_fork_holds_the_copied_turns_and_the_new_one():
    transcript, _ = read_transcript(_real("99999999"))
    assert [t.user_message for t in transcript.turns][-1] == "Branch off MARKforked"
    assert len(transcript.turns) == 4 and transcript.notes == []


def test_the_real_read_and_write_calls_are_observed_file_touches():
    transcript, _ = read_transcript(_real("22222222"))
    read, write = transcript.turns
    assert [(c.name, c.is_error) for c in read.tool_calls] == [("Read", False)]
    assert read.tool_calls[0].result is not None and "a file for the scenario's folder" in read.tool_calls[0].result
    assert [(f.path, f.provenance) for f in read.files_read] == [
        ("/tmp/reprise-claude-fixture/work/alpha/notes.txt", "observed")]
    assert [f.path for f in write.files_modified] == ["/tmp/reprise-claude-fixture/work/alpha/written.txt"]
    assert read.files_modified == [] and write.files_read == []


def test_the_real_failed_turn_is_failed_with_the_clients_error_text():
    transcript, _ = read_transcript(_real("66666666"))
    [turn] = transcript.turns
    assert (turn.status, turn.error, turn.reply) == ("failed", "API Error: 400 the fake server was asked to fail", "")


def test_the_real_subagent_call_and_its_own_file():
    transcript, _ = read_transcript(_real("44444444"), subagents=1)
    [turn] = transcript.turns
    assert [c.name for c in turn.tool_calls] == ["Agent"] and "1 subagent transcript" in " ".join(transcript.notes)
    [path] = sorted(STORE.glob("*/44444444-*/subagents/agent-*.jsonl"))
    side, _ = read_transcript(parse_lines(path.read_bytes(), 0).records)
    assert [t.user_message for t in side.turns] == ["look around the folder MARKsub"]
    assert side.turns[0].reply

