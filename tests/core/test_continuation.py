"""Continuing a session in another agent, the native way (core/continuation.py, the Claude Code
writer `claude/from_transcript.py`), on rollouts the real Codex CLI wrote (tests/fixtures/codex-store):
the new Claude Code file read back by Reprise's own reader gives the same prompts, replies, commands
and outputs; both sessions carry the link; the rollout is never touched; undo trashes the new session;
a dry run writes nothing; continuing twice writes two sessions; refusals are said."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reprise.core.continuation import continue_session
from reprise.core.errors import RepriseError, UsageError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.session_links import described
from reprise.core.sources.claude.from_transcript import dumps, session_file_of
from reprise.core.sources.claude.records import parse_lines
from reprise.core.sources.claude.transcript import read_transcript as read_claude
from reprise.core.sources.codex.records import parse_rollout
from reprise.core.sources.codex.transcript import read_transcript as read_codex
from reprise.core.sources.session_writing import MARK
from reprise.core.transcript import ToolCall, Transcript, Turn

STORE = Path(__file__).parents[1] / "fixtures" / "codex-store" / "sessions"
DAY = STORE / "2026" / "12" / "01"
ALPHA = "/tmp/reprise-codex-fixture/work/alpha"
BASH = "01a2331b-cc0a-74b3-8c63-8c4e7c73f7a6"
THREE = "01a2331b-c3e0-7ab0-a9f5-6874c14f3431"
NEW_ID = "0b6c5b6e-2f2a-4a47-9d55-3f3f0d9c0001"
NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


def codex_transcript(session_id: str) -> Transcript:
    [path] = DAY.glob(f"rollout-*-{session_id}.jsonl")
    transcript, _ = read_codex(parse_rollout(path.read_bytes()).records, session_id)
    return transcript


def written_back(transcript: Transcript) -> tuple[Transcript, bytes, list[str]]:
    data, notes = session_file_of(transcript, session_id=NEW_ID, folder=ALPHA, model="gpt-test", agent="Codex",
                                  now=NOW)
    back, warnings = read_claude(parse_lines(data, 0).records)
    assert warnings == []
    return back, data, notes


def test_a_codex_session_read_back_from_its_claude_code_file_has_the_same_turns():
    for session_id in (BASH, THREE):
        source = codex_transcript(session_id)
        back, _, _ = written_back(source)
        assert [t.user_message for t in back.turns] == [t.user_message for t in source.turns]
        assert [t.reply for t in back.turns] == [t.reply for t in source.turns]
        assert [t.started_at for t in back.turns] == [t.started_at for t in source.turns]   # the source's times
        assert [t.status for t in back.turns] == [t.status for t in source.turns]
    back, _, _ = written_back(codex_transcript(BASH))
    [call] = back.turns[0].tool_calls
    assert call.name == "Bash" and call.shell == "echo OUTWORD$((6*7)) && echo second line"
    assert call.result is not None and "OUTWORD42\nsecond line" in call.result
    assert [c.command for c in back.turns[0].commands] == [call.shell]


def test_the_file_is_one_chain_of_compact_lines_in_claude_codes_form():
    _, data, _ = written_back(codex_transcript(BASH))
    records = [json.loads(line) for line in data.decode().splitlines()]
    assert [dumps(record) for record in records] == [line + b"\n" for line in data.splitlines()]
    assert records[0]["parentUuid"] is None
    assert all(r["parentUuid"] == p["uuid"] for p, r in zip(records, records[1:], strict=False))
    assert {r["sessionId"] for r in records} == {NEW_ID} and {r["cwd"] for r in records} == {ALPHA}
    assert [r["type"] for r in records] == ["user", "assistant", "user", "assistant"]
    assert all("usage" not in r["message"] for r in records if r["type"] == "assistant")   # nothing measured
    assert records[2]["toolUseResult"]["stdout"] == records[2]["message"]["content"][0]["content"]


def test_other_tools_thinking_and_endings_are_carried_as_marked_text_or_said():
    turn = Turn("t1", "look around", "failed", reply="", error="rate limited", thinking="hmm",
                tool_calls=[ToolCall("web_search", '{"q": "x"}', "found \u2028 \ud800 it")])
    back, data, notes = written_back(Transcript("codex", "s", turns=[turn]))
    said = back.turns[0].reply
    assert f"{MARK} Codex tool call `web_search`" in said and "found \u2028" in said
    assert f"{MARK} this turn failed: rate limited" in said
    assert b"\\ud800" in data   # a lone surrogate escaped, as JavaScript writes one
    assert any("thinking of 1 turn" in note for note in notes) and any("carried as text" in note for note in notes)
    assert back.turns[0].thinking == ""


def test_an_empty_transcript_writes_an_empty_file():
    data, notes = session_file_of(Transcript("codex", "s"), session_id=NEW_ID, folder=ALPHA, model="m",
                                  agent="Codex", now=NOW)
    assert data == b"" and notes == []


@pytest.fixture
def store(tmp_path) -> Path:
    shutil.copytree(STORE, Path(os.environ["CODEX_HOME"]) / "sessions")
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    claude.mkdir(parents=True)
    os.makedirs(ALPHA, exist_ok=True)
    return claude


def test_continue_writes_links_and_undoes_without_touching_the_source(store):
    svc = Service.from_environment(workspace=ALPHA)
    ref = SessionRef(workspace_key(ALPHA), BASH, "codex")
    [rollout] = Path(os.environ["CODEX_HOME"]).glob(f"sessions/*/*/*/*{BASH}.jsonl")
    before = rollout.read_bytes()
    dry = svc.continue_in(ref, "claude", dry_run=True)
    assert not dry.written.written and not dry.written.path.exists() and dry.written.data
    result = svc.continue_in(ref, "claude")
    new = result.written.ref
    assert result.written.written and result.written.path.read_bytes() == result.written.data
    assert result.written.path.parent.name == "-tmp-reprise-codex-fixture-work-alpha"
    assert result.resume_argv[-1] == new.session_id and result.context_tokens and result.context_tokens > 0
    meta = svc.sources["claude"].read_meta(new)
    assert meta.title == "Please RUN: echo OUTWORD$((6*7)) && echo second line (from Codex)"
    origin = (meta.model_extra or {})["continued_from"]
    assert origin["source"] == "codex" and origin["session_id"] == BASH and origin["through_turn"] == 1
    assert origin["sha256"] == result.source_sha256
    links = (svc.sources["codex"].read_meta(ref).model_extra or {})["continued_in"]
    assert links == [{"source": "claude", "session_id": new.session_id, "through_turn": 1, "at": meta.created_at}]
    assert [described(link) for link in svc.show(new).links] == [f"Continued from Codex ← {BASH} (through turn 1)"]
    assert [described(link) for link in svc.show(ref).links] == \
        [f"Continued in Claude Code → {new.session_id} (through turn 1)"]
    again = svc.continue_in(ref, "claude", fresh=True)   # the whole history again: a new session, linked too
    assert again.written.ref != new and again.written.path.exists() and result.written.path.exists()
    assert len((svc.sources["codex"].read_meta(ref).model_extra or {})["continued_in"]) == 2
    assert [r.op for r in svc.audit_records() if r.op == "continue"] == ["continue", "continue"]
    undone = svc.restore(new)
    assert undone.applied and not result.written.path.exists()
    assert rollout.read_bytes() == before


class _ReadOnlyAgent:
    """A source without the SessionWriter role."""

    name, label, roles, spec = "readonly", "Read Only", frozenset(), None


def test_continuing_in_the_same_agent_or_one_that_cannot_write_is_refused(store):
    svc = Service.from_environment(workspace=ALPHA)
    ref = SessionRef(workspace_key(ALPHA), BASH, "codex")
    with pytest.raises(UsageError, match="already a Codex session"):
        svc.continue_in(ref, "codex")
    with pytest.raises(UsageError, match="not enabled"):
        svc.continue_in(ref, "nosuch")
    source = svc.sources["codex"]
    with pytest.raises(RepriseError, match="Read Only sessions cannot be written from another agent's session"):
        continue_session(source, source.open(ref), _ReadOnlyAgent(), Path(ALPHA), title=None, model=None,  # type: ignore[arg-type]
                         dry_run=True)


def test_a_long_session_continued_in_fractal_archives_what_its_history_cannot_keep_and_undoes(store, tmp_path):
    """25 turns: Fractal's summary holds them all, its history the newest 20; the other five turns'
    details are archived with the new session, and undo moves it to the trash."""
    from .. import factories

    state = Path(os.environ["REPRISE_STATE_DIR"])
    folder = Path(ALPHA)
    factories.write_session(state, folder, factories.session_bytes("d" * 32, turns=25, seed=3, history_limit=None))
    svc = Service.from_environment(workspace=ALPHA)
    fractal_ref = SessionRef(workspace_key(ALPHA), "d" * 32, "fractal")
    in_claude = svc.continue_in(fractal_ref, "claude")
    back = svc.continue_in(in_claude.written.ref, "fractal")
    new = back.written.ref
    shown = svc.show(new)
    assert len(shown.transcript.turns) == 25 and len(shown.history or []) == 20
    assert any("5 oldest turns" in note for note in back.written.notes)
    [entry] = svc.archive_entries(new)
    archived = json.loads(svc.archive_bytes(new, entry.digest)[1])
    assert [turn["user_message"] for turn in archived["continued_turns"]] == \
        [turn.user_message for turn in shown.transcript.turns[:5]]
    assert svc.can_undo_trim(new)
    undone = svc.restore(new)
    assert undone.applied and not back.written.path.exists()
    assert [entry.ref for entry in svc.trash_entries(all_workspaces=True)] == [new]


def test_a_continuation_in_codex_is_metered_with_the_fixed_prompt_codex_adds_on_resume(store):
    """The rollout carries no setup (Codex injects its own when it resumes): the meter estimates it."""
    svc = Service.from_environment(workspace=ALPHA)
    result = svc.continue_in(SessionRef(workspace_key(ALPHA), THREE, "codex"), "claude")
    back = svc.continue_in(result.written.ref, "codex")
    parts = {part.name: part for part in svc.measure(back.written.ref).parts}
    assert parts["overhead"].tokens == 61_300 // 4 and "when it resumes" in (parts["overhead"].note or "")
    assert parts["history"].tokens and back.context_tokens == sum(p.tokens or 0 for p in parts.values())
    assert svc.show(back.written.ref).title == "Start a plan MARKfirst (from Claude Code)"


SOLO = "01a2331b-c171-76a1-87a8-af4737721e6c"
CLAUDE_SOLO = "11111111-1111-4111-8111-111111111111"


def test_a_session_codex_imported_itself_is_linked_both_ways_from_its_ledger(store, tmp_path):
    """Codex's ledger of its own imports (imports.py) names the Claude Code file and the thread it became."""
    from .claude.test_claude_source import copy_store

    folders = copy_store(Path(os.environ["CLAUDE_CONFIG_DIR"]), tmp_path / "work")
    [claude_file] = Path(os.environ["CLAUDE_CONFIG_DIR"]).glob(f"projects/*/{CLAUDE_SOLO}.jsonl")
    ledger = {"records": [{"source_path": os.path.realpath(claude_file), "content_sha256": "0" * 64,
                           "imported_thread_id": SOLO, "imported_at": 1796634509,
                           "source_modified_at": 1796634509249934302, "connector_names": [], "title": "t"}],
              "detected_connector_records": []}
    (Path(os.environ["CODEX_HOME"]) / "external_agent_session_imports.json").write_text(json.dumps(ledger))
    svc = Service.from_environment(workspace=ALPHA)
    codex = svc.show(SessionRef(workspace_key(ALPHA), SOLO, "codex"))
    assert [described(link) for link in codex.links] == [f"Imported by its agent from Claude Code ← {CLAUDE_SOLO}"]
    claude = svc.show(SessionRef(workspace_key(str(folders["alpha"])), CLAUDE_SOLO, "claude"))
    assert [described(link) for link in claude.links] == [f"Imported into Codex → {SOLO}"]
    listing = svc.list_sessions(all_workspaces=True)
    ids = [row.id for row in listing.rows]
    assert SOLO in ids and CLAUDE_SOLO not in ids   # one conversation, listed once: the newer copy
    assert listing.total == len(ids) and svc.resolve(CLAUDE_SOLO).session_id == CLAUDE_SOLO


def test_a_repeated_continuation_is_the_earlier_one_then_only_the_turns_since(store, tmp_path):
    from .. import factories

    state = Path(os.environ["REPRISE_STATE_DIR"])
    factories.write_session(state, Path(ALPHA), factories.session_bytes("c" * 32, turns=3, seed=5))
    svc = Service.from_environment(workspace=ALPHA)
    ref = SessionRef(workspace_key(ALPHA), "c" * 32, "fractal")
    first = svc.continue_in(ref, "claude")
    with pytest.raises(UsageError, match="no turn since its continuation in Claude Code"):
        svc.continue_in(ref, "claude")
    factories.write_session(state, Path(ALPHA), factories.session_bytes("c" * 32, turns=4, seed=5))
    source = svc.show(ref).transcript
    again = svc.continue_in(ref, "claude")
    shown = svc.show(again.written.ref)
    earlier = svc.show(first.written.ref).transcript
    assert [t.user_message for t in shown.transcript.turns] == \
        [*(t.user_message for t in earlier.turns), source.turns[3].user_message]
    origin = (shown.meta.model_extra or {})["continued_from"]
    assert origin["after"] == first.written.ref.session_id and origin["from_turn"] == 4 and origin["through_turn"] == 4
    on_top = f"written on top of the earlier continuation {first.written.ref.session_id}"
    assert again.written.notes[0].startswith(on_top)
    briefed = svc.continue_in(ref, "codex", brief=True)   # no earlier one in Codex: a brief of every turn
    assert briefed.brief is not None and briefed.brief.turns == 4


def test_a_continuation_over_the_targets_window_says_so_with_the_meters_figure(store, capsys):
    """A window of 2,000 tokens for Codex's model: the continuation is written, then said not to fit,
    with the figure, a trim and the brief offered."""
    from reprise.tui import cli

    Path(os.environ["REPRISE_CONFIG"]).write_text('[[meter.models]]\npattern = "gpt-*"\nwindow = 2000\n')
    state = Path(os.environ["REPRISE_STATE_DIR"])
    from .. import factories

    factories.write_session(state, Path(ALPHA), factories.session_bytes("b" * 32, turns=3, seed=2))
    assert cli.main(["--workspace", ALPHA, "continue", "b" * 32, "--to", "codex"]) == 0
    out = capsys.readouterr().out
    assert "of 2,000 (Codex's meter)" in out and "it does not fit Codex's window" in out
    assert "--brief --fresh" in out and "--fork --fit 2000" in out
