"""The listing fields of a Claude Code session, folded from its records chunk by chunk."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reprise.core.sources.claude.fields import ClaudeFields, ListingFold
from reprise.core.sources.claude.records import parse_lines

from .builder import ClaudeFile, rewound

STORE = Path(__file__).resolve().parents[2] / "fixtures" / "claude-store" / "projects"


def fields_of(data: bytes) -> ClaudeFields:
    fold = ListingFold()
    fold.feed(parse_lines(data, 0).records)
    return fold.result()


def test_the_title_is_the_newest_custom_title_then_the_ai_title_then_the_first_real_prompt():
    session = ClaudeFile()
    session.turn("first prompt", "r")
    assert (fields_of(session.data()).title, fields_of(session.data()).title_source) == ("first prompt", "prompt")
    session.ai_title("An AI title")
    assert fields_of(session.data()).title == "An AI title"
    session.custom_title("Mine")
    session.ai_title("A newer AI title")
    session.custom_title("Mine, renamed")
    got = fields_of(session.data())
    assert (got.title, got.title_source) == ("Mine, renamed", "custom-title")
    session.custom_title("")   # cleared: Claude Code falls back to the AI title
    assert fields_of(session.data()).title == "A newer AI title"


def test_an_older_versions_summary_titles_a_session_without_a_custom_or_ai_title():
    session = ClaudeFile()
    session.turn("first prompt", "r")
    session.unknown("summary", summary="Parser refactor", leafUuid=session.head)
    got = fields_of(session.data())
    assert (got.title, got.title_source) == ("Parser refactor", "summary")


def test_the_title_prompt_skips_meta_commands_reminders_tool_results_and_the_compact_summary():
    session = ClaudeFile()
    session.meta("<local-command-caveat>Caveat</local-command-caveat>")
    session.command("model", "Set model to opus")
    session.compact()
    session.prompt("<system-reminder>\nThe user opened a file.\n</system-reminder>")
    session.tool_result("toolu_x", "some output")
    session.prompt([{"type": "text", "text": "<system-reminder>r</system-reminder>"},
                    {"type": "text", "text": "  Fix the parser  "}])
    session.assistant("ok")
    got = fields_of(session.data())
    assert got.title == "Fix the parser" and got.first_message == "Fix the parser" and got.turns == 1


def test_turns_count_the_real_prompts_of_the_main_chain_only():
    session = rewound("two", "three")
    session.prompt("[Request interrupted by user]")
    got = fields_of(session.data())
    assert got.turns == 2 and got.branches == 1
    assert (got.first_message, got.last_message) == ("one", "two again")
    assert got.last_status == "interrupted"


def test_a_slash_command_the_model_answered_is_a_turn_and_a_local_one_is_not():
    session = ClaudeFile()
    session.slash("review", "the parser", "Review the parser for bugs.")
    session.assistant("Two bugs.")
    session.command("model", "Set model to sonnet")   # a local command: nothing answers it
    session.turn("thanks", "welcome")
    got = fields_of(session.data())
    assert got.turns == 2 and (got.first_message, got.last_message) == ("/review the parser", "thanks")
    assert got.title == "thanks"   # the title is the first real prompt


def test_an_image_only_prompt_is_a_turn():
    session = ClaudeFile()
    session.prompt([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}])
    session.assistant("A cat.")
    got = fields_of(session.data())
    assert got.turns == 1 and got.first_message == "[image]"


def test_usage_counts_a_split_api_message_once():
    session = ClaudeFile()
    session.prompt("go")
    session.assistant("text", thinking="hmm", tools=(("toolu_1", "Bash", {"command": "ls"}),), split=True,
                      usage=(10, 200, 3000, 40))
    session.tool_result("toolu_1", "a\nb")
    session.assistant("done", usage=(5, 100, 3200, 7))
    got = fields_of(session.data())
    assert (got.usage.input_tokens, got.usage.cache_creation_tokens, got.usage.cache_read_tokens,
            got.usage.output_tokens) == (15, 300, 6200, 47)
    assert got.context_tokens == 5 + 100 + 3200 and got.context_basis == "assistant"


def test_the_context_is_a_newer_compact_boundarys_post_tokens_and_then_the_next_reply():
    session = ClaudeFile()
    session.turn("one", "r1", usage=(100, 1000, 40_000, 20))
    session.compact(pre=41_100, post=2_641)
    got = fields_of(session.data())
    assert (got.context_tokens, got.context_basis) == (2_641, "compact_boundary")
    session.turn("two", "r2", usage=(50, 500, 3_000, 10))
    got = fields_of(session.data())
    assert (got.context_tokens, got.context_basis) == (3_550, "assistant")
    assert got.turns == 2


def test_a_boundary_without_post_tokens_leaves_the_context_unknown():
    session = ClaudeFile()
    session.turn("one", "r1")
    session.compact(post=None)
    got = fields_of(session.data())
    assert got.context_tokens is None and got.context_basis is None


def test_the_model_is_the_newest_main_chain_reply_not_a_synthetic_one():
    session = ClaudeFile()
    session.prompt("one")
    session.assistant("r", model="claude-sonnet-5")
    session.synthetic_error()
    got = fields_of(session.data())
    assert got.model == "claude-sonnet-5" and got.last_status == "failed"


def test_an_api_error_fails_the_newest_turn_and_a_later_reply_clears_it():
    session = ClaudeFile()
    session.turn("one", "r1")
    session.prompt("two")
    session.api_error("Overloaded")
    assert fields_of(session.data()).last_status == "failed"
    session.assistant("recovered")
    assert fields_of(session.data()).last_status == "succeeded"


def test_identity_activity_branch_cost_and_hidden():
    session = ClaudeFile("0f0f0f0f-0000-4000-8000-000000000000", cwd="/home/u/app", entrypoint="sdk-cli",
                         branch="feature")
    session.turn("one", "r1")
    session.branch = "main"
    session.version = "2.1.400"
    session.turn("two", "r2")
    session.cost_state(0.01)
    session.cost_state(0.0421)
    session.unknown("a-type-from-the-future", timestamp="2026-11-20T10:00:00.000Z")
    got = fields_of(session.data())
    assert got.session_id == "0f0f0f0f-0000-4000-8000-000000000000" and got.cwd == "/home/u/app"
    assert got.branch == "main" and got.version == "2.1.400"
    assert got.usage.cost == pytest.approx(0.0421)
    assert got.hidden_by_agent and got.entrypoint == "sdk-cli"
    assert got.last_activity == "2026-11-20T10:00:00.000Z"
    assert not fields_of(ClaudeFile(entrypoint="cli").data()).hidden_by_agent


def test_skipped_lines_are_counted_across_chunks_in_the_warning():
    fold = ListingFold()
    first = parse_lines(b'{"type":"user","uuid":"a","message":{"content":"hi"}}\n{oops\n', 0)
    fold.feed(first.records, first.warnings)
    assert fold.result().warning == "1 line skipped (line 2: not JSON (Expecting property name enclosed in double " \
                                     "quotes at column 2))"
    fold = ListingFold.from_bytes(fold.to_bytes())
    for line in range(3, 7):
        later = parse_lines(b"[]\n", 0, first_line=line)
        fold.feed(later.records, later.warnings)
    warning = fold.result().warning
    assert warning is not None and warning.startswith("5 lines skipped (line 2: not JSON") and warning.endswith("; …)")
    assert "line 3: not a JSON object; line 4: not a JSON object; …" in warning
    assert fold.result().turns == 1 and fields_of(b'{"type":"user"}\n').warning is None


def test_an_empty_file_has_no_turns_and_no_status():
    got = fields_of(b"")
    assert got.turns == 0 and got.last_status is None and got.title is None and got.session_id is None


def _rich_session() -> bytes:
    session = ClaudeFile()
    session.turn("one", "r1")
    back = session.head
    session.prompt("two")
    session.assistant(None, tools=(("toolu_1", "Read", {"file_path": "/a.py"}),), split=True)
    session.tool_result("toolu_1", "print(1)")
    session.assistant("read it", usage=(1, 2, 3, 4))
    session.api_error("Overloaded")
    session.rewind_to(back)
    session.ai_title("About one")
    session.compact(post=1234)
    session.turn("three", "r3")
    session.sidechain = True
    session.assistant("side")
    session.sidechain = False
    session.unknown()
    session.cost_state(0.5)
    session.turn("four ünïcode", "r4")
    return session.data()


RICH = _rich_session()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=0, max_value=len(RICH)), max_size=12))
def test_an_incremental_fold_over_any_split_points_equals_the_one_shot_fold(cuts):
    """Read as a growing file is: each read from the offset the last one reached, the fold stored
    and loaded between reads; a read may end in the middle of a line (or of a UTF-8 character)."""
    one_shot = ListingFold()
    one_shot.feed(parse_lines(RICH, 0).records)
    fold = ListingFold()
    offset, line = 0, 1
    for cut in [*sorted(cuts), len(RICH)]:
        if cut < offset:
            continue
        parsed = parse_lines(RICH[offset:cut], offset, first_line=line)
        assert parsed.warnings == []
        fold = ListingFold.from_bytes(fold.to_bytes())
        fold.feed(parsed.records)
        offset, line = parsed.end, line + parsed.lines
    assert offset == len(RICH)
    assert fold == one_shot
    assert fold.result() == one_shot.result()


def test_the_rich_session_reads_as_expected():
    got = fields_of(RICH)
    assert got.turns == 3 and (got.first_message, got.last_message) == ("one", "four ünïcode")
    assert got.branches == 1 and got.title == "About one" and got.last_status == "succeeded"


def test_a_stored_fold_round_trips_and_bad_bytes_are_refused():
    fold = ListingFold()
    fold.feed(parse_lines(RICH, 0).records)
    again = ListingFold.from_bytes(fold.to_bytes())
    assert again == fold and again.result() == fold.result()
    with pytest.raises(ValueError):
        ListingFold.from_bytes(b"garbage")
    with pytest.raises(ValueError):
        ListingFold.from_bytes(fold.chain.to_bytes())


# --- the real client's files (tests/fixtures/claude-store, see its README) ------------------------------

REAL = {
    "11111111": ("What is in this folder? MARKsolo", 1, "prompt"),
    "33333333": ("Start a plan MARKfirst", 3, "prompt"),
    "55555555": ("Please RUN: echo OUTWORD$((6*7)) && echo second line", 1, "prompt"),
    "77777777": ("Remember the colour MARKteal", 3, "prompt"),
    "99999999": ("Start a plan MARKfirst", 4, "prompt"),
    "bbbbbbbb": ("Another project MARKbeta", 1, "prompt"),
    "dddddddd": ("Named by the compat scenario", 1, "custom-title"),
    "ffffffff": ("Typed in the terminal UI MARKtyped", 1, "prompt"),
    "22222222": ("Please READ: /tmp/reprise-claude-fixture/work/alpha/notes.txt MARKread", 2, "prompt"),
    "44444444": ("Delegate this. AGENT: look around the folder MARKsub", 1, "prompt"),
}


def _real(prefix: str) -> Path:
    found = sorted(STORE.glob(f"*/{prefix}-*.jsonl"))
    if not found:
        pytest.skip("the real Claude Code store is not in this checkout")
    return found[0]


@pytest.mark.parametrize("prefix", sorted(REAL))
def test_real_files_list_with_their_title_turns_and_measured_context(prefix):
    import json

    path = _real(prefix)
    got = fields_of(path.read_bytes())
    title, turns, source = REAL[prefix]
    assert (got.title, got.turns, got.title_source) == (title, turns, source)
    assert got.session_id == path.stem and got.last_status == "succeeded" and got.branches == 0
    assert got.cwd is not None and got.cwd.endswith("/work/alpha" if "alpha" in path.parent.name else "/work/beta")
    assert got.model == "claude-opus-5-5" and got.version == "2.1.332"
    assert got.hidden_by_agent == (prefix != "ffffffff")
    records = [json.loads(line) for line in path.read_bytes().splitlines()]
    newest = [r for r in records if r["type"] == "assistant"][-1]["message"]["usage"]
    assert got.context_tokens == (newest["input_tokens"] + newest["cache_creation_input_tokens"]
                                  + newest["cache_read_input_tokens"])
    costs = [r["totalCostUSD"] for r in records if r["type"] == "cost-state"]
    assert got.usage.cost == costs[-1]


def test_the_real_failed_session_is_failed_with_no_measured_context():
    got = fields_of(_real("66666666").read_bytes())
    assert (got.turns, got.last_status, got.context_tokens, got.model) == (1, "failed", None, None)
    assert got.usage.input_tokens == 0 and got.title == "This one will FAIL: MARKfail"


def test_the_real_compacted_session_keeps_its_turns_across_the_boundary():
    got = fields_of(_real("77777777").read_bytes())
    assert (got.first_message, got.last_message) == ("Remember the colour MARKteal", "What now? MARKaftercompact")
