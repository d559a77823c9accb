"""The conversation Claude Code resumes: the parent chain from the newest leaf, through compactions."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprise.core.sources.claude.chain import UUID, ChainTable, main_chain_records
from reprise.core.sources.claude.messages import PROMPT, kind_of, prompt_text
from reprise.core.sources.claude.records import parse_lines

from .builder import ClaudeFile, rewound


def _records(session: ClaudeFile):
    return parse_lines(session.data(), 0).records


def _prompts(records):
    chain, _, _ = main_chain_records(records)
    return [prompt_text(r) for r in chain if kind_of(r) == PROMPT]


def test_a_linear_session_is_one_chain_from_its_first_prompt():
    session = ClaudeFile()
    session.turn("one", "r1")
    session.turn("two", "r2")
    chain, info, _ = main_chain_records(_records(session))
    assert chain[0]["parentUuid"] is None and chain[0]["message"]["content"] == "one"
    assert info.leaf == chain[-1]["uuid"] and info.branches == 0 and info.cut_at is None
    assert _prompts(_records(session)) == ["one", "two"]


def test_a_rewind_leaves_the_old_turns_as_a_branch_off_the_main_chain():
    records = _records(rewound("two", "three"))
    assert _prompts(records) == ["one", "two again"]
    _, info, _ = main_chain_records(records)
    assert info.branches == 1


def test_two_rewinds_are_two_branches_and_the_newest_leaf_wins():
    session = ClaudeFile()
    session.turn("one", "r1")
    root_leaf = session.head
    session.turn("a", "ra")
    session.rewind_to(root_leaf)
    session.turn("b", "rb")
    session.rewind_to(root_leaf)
    session.turn("c", "rc")
    records = _records(session)
    assert _prompts(records) == ["one", "c"]
    assert main_chain_records(records)[1].branches == 2


def test_a_stray_sibling_without_a_prompt_is_no_branch():
    session = ClaudeFile()
    session.prompt("one")
    asked = session.head
    session.api_error("Overloaded")   # written beside the retry, not before it
    session.rewind_to(asked)
    session.assistant("answered on retry")
    session.attachment("date")
    records = _records(session)
    chain, info, _ = main_chain_records(records)
    assert info.branches == 0 and chain[-2]["message"]["content"][0]["text"] == "answered on retry"


def test_the_last_prompt_leaf_names_the_conversation_when_nothing_newer_was_written():
    session = ClaudeFile()
    session.turn("one", "r1")
    kept = session.head
    session.turn("two", "r2")
    session.last_prompt(leaf=kept)   # the client resumed from the earlier leaf (a rewind with no new turn yet)
    assert _prompts(_records(session)) == ["one"]


def test_records_appended_after_the_last_prompt_extend_the_conversation():
    session = ClaudeFile()
    session.turn("one", "r1")
    session.prompt("two, being answered")   # a turn being written: no last-prompt yet
    assert _prompts(_records(session)) == ["one", "two, being answered"]


def test_an_unknown_leaf_falls_back_to_the_newest_main_line_record():
    session = ClaudeFile()
    session.turn("one", "r1")
    session.last_prompt(leaf="00000000-dead-4000-8000-000000000000")
    assert _prompts(_records(session)) == ["one"]


def test_the_chain_goes_on_through_a_compact_boundary_to_the_turns_before_it():
    session = ClaudeFile()
    session.turn("before", "r1")
    boundary = session.compact(pre=40_000, post=2_500)
    session.turn("after", "r2")
    records = _records(session)
    chain, _, _ = main_chain_records(records)
    uuids = [r["uuid"] for r in chain]
    assert boundary in uuids
    assert _prompts(records) == ["before", "after"]
    assert chain[uuids.index(boundary)]["parentUuid"] is None


def test_sidechain_records_are_never_the_leaf_nor_a_branch():
    session = ClaudeFile()
    session.turn("main", "r1")
    main_leaf = session.head
    session.sidechain = True
    session.rewind_to(None)
    session.prompt("subagent task")
    session.assistant("subagent reply")
    records = _records(session)
    chain, info, _ = main_chain_records(records)
    assert chain[-1]["uuid"] == main_leaf and info.branches == 0


def test_a_parent_missing_from_the_file_cuts_the_chain_and_says_where():
    session = ClaudeFile()
    session.rewind_to("0badc0de-0000-4000-8000-000000000000")
    session.turn("orphan", "r")
    _, info, _ = main_chain_records(_records(session))
    assert info.cut_at == "0badc0de-0000-4000-8000-000000000000"


def test_a_parent_cycle_ends_the_walk():
    records = [{"type": "user", "uuid": "a", "parentUuid": "b", "message": {"content": "x"}},
               {"type": "user", "uuid": "b", "parentUuid": "a", "message": {"content": "y"}}]
    chain, info, _ = main_chain_records(records)
    assert [r["uuid"] for r in chain] == ["a", "b"] and info.cut_at is None


def test_a_table_extended_chunk_by_chunk_equals_one_built_at_once_and_round_trips():
    session = rewound()
    session.compact()
    session.turn("three", "r3")
    records = _records(session)
    whole = ChainTable()
    whole.add(records)
    parts = ChainTable()
    for start in range(0, len(records), 7):
        parts = ChainTable.from_bytes(parts.to_bytes())
        parts.add(records[start:start + 7])
    assert parts == whole
    assert parts.main_chain() == whole.main_chain()
    assert [whole.rows[at][UUID] for at in whole.main_chain().rows][-1] == session.head


REAL = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "claude-store" / "projects").glob("*/*.jsonl"))


@pytest.mark.skipif(not REAL, reason="the real Claude Code store is not in this checkout")
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:8])
def test_in_real_files_the_leaf_is_the_newest_last_prompts_and_every_record_is_on_one_chain(path):
    records = parse_lines(path.read_bytes(), 0).records
    chain, info, table = main_chain_records(records)
    assert info.leaf == [r["leafUuid"] for r in records if r["type"] == "last-prompt"][-1]
    assert len(chain) == len(table.rows) == sum("uuid" in r for r in records)
    assert info.branches == 0 and info.cut_at is None


@pytest.mark.parametrize("data", [b"", b"not zlib", b"x\x01\x03\x00\x00\x00\x00\x01"])
def test_bytes_that_are_not_a_stored_table_are_refused(data):
    with pytest.raises(ValueError):
        ChainTable.from_bytes(data)
