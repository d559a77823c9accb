"""The brief of a session for another agent (core/brief.py, core/file_facts.py): bounded by its budget
in the target's tokens, the hint line and the receipt first, the newest turns verbatim, prompts newest
first, decisions quoted with their turn, files with their provenance and whether they changed since
(mtime, and in a git work tree the commits and uncommitted changes since); what the budget left out
said with the command that shows it. Continued with --brief, the new session's first message is it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reprise.core.brief import HEADER, Receipt, build_brief, decisions, default_budget
from reprise.core.file_facts import check_files, touched_files
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.tokens import count_tokens
from reprise.core.transcript import FileTouch, Transcript, Turn

RECEIPT = Receipt("Codex", "01a2331b-cc0a-74b3-8c63-8c4e7c73f7a6", "/work/p", "main", "2026-12-01T10:00:00Z", "ab" * 32)


def count(text: str) -> int:
    return count_tokens(text, "o200k_base")


def turns(n: int, words: int = 30) -> Transcript:
    return Transcript("codex", "s", turns=[
        Turn(f"t{i}", f"prompt {i} MARKp{i} " + "word " * words, "succeeded",
             reply=f"reply {i} REPLYr{i} " + "x " * words, started_at=f"2026-12-01T10:{i % 60:02d}:00Z")
        for i in range(1, n + 1)])


def test_the_default_budget_is_a_tenth_of_the_window_at_most_8000():
    assert default_budget(None) == 8_000 and default_budget(400_000) == 8_000 and default_budget(50_000) == 5_000


def test_a_small_budget_keeps_the_hint_the_receipt_and_the_newest_turns_and_says_what_it_left_out():
    brief = build_brief(turns(40), RECEIPT, [], count=count, budget=800)
    assert brief.tokens <= 800 and count(brief.text) == brief.tokens
    assert brief.text.startswith(HEADER) and RECEIPT.session_id in brief.text and RECEIPT.sha256 in brief.text
    assert "through turn 40" in brief.text
    assert "REPLYr40" in brief.text and "MARKp40" in brief.text
    assert brief.text.index("Turn 39,") < brief.text.index("Turn 40,")   # in their order
    assert "MARKp1 " not in brief.text and brief.left_out
    assert f"`reprise show {RECEIPT.session_id}` shows every turn" in brief.text


def test_a_big_budget_holds_every_prompt_newest_first_and_leaves_nothing_out():
    brief = build_brief(turns(10), RECEIPT, [], count=count, budget=8_000)
    assert not brief.left_out and "Left out" not in brief.text
    prompts = brief.text.split("The user's earlier prompts, the newest first:")[1]
    assert prompts.index("MARKp8 ") < prompts.index("MARKp1 ")


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=30), st.integers(min_value=400, max_value=3000), st.text(max_size=300))
def test_the_brief_never_exceeds_its_budget(n, budget, hostile):
    transcript = turns(n, words=20)
    transcript.turns[-1].reply += hostile
    brief = build_brief(transcript, RECEIPT, [], count=count, budget=budget)
    assert brief.tokens <= budget and HEADER[:40] in brief.text


def test_decisions_are_quoted_lines_with_their_turn_never_paraphrased():
    transcript = Transcript("claude", "s", turns=[
        Turn("a", "Let's keep the retry count at 3 by default.", "succeeded", reply="Sure.\nOK"),
        Turn("b", "next", "succeeded", reply="We will use SQLite instead of Postgres for the cache.\nDone.")])
    found = decisions(transcript)
    assert [(d.turn, d.line) for d in found] == [(1, "Let's keep the retry count at 3 by default."),
                                                 (2, "We will use SQLite instead of Postgres for the cache.")]
    brief = build_brief(transcript, RECEIPT, [], count=count, budget=2_000)
    assert '"We will use SQLite instead of Postgres for the cache." (turn 2)' in brief.text


def git(folder: Path, *args: str, when: str | None = None) -> None:
    dated = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when} if when else {}
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", **dated})


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_in_a_git_work_tree_a_file_changed_since_its_turn_is_re_verify_and_an_unchanged_one_is_not(tmp_path):
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q")
    for name in ("kept.py", "changed.py", "dirty.py", "gone.py"):
        (folder / name).write_text("v1\n")
    git(folder, "add", ".")
    git(folder, "commit", "-qm", "one", when="2023-11-14T00:00:00Z")   # before the turn
    old = 1_700_000_000
    for name in ("kept.py", "changed.py", "dirty.py", "gone.py"):
        os.utime(folder / name, (old, old))
    transcript = Transcript("claude", "s", turns=[Turn(
        "t", "edit", "succeeded", started_at="2023-11-15T00:00:00Z", ended_at="2023-11-15T00:00:00Z",
        files_read=[FileTouch("kept.py", "observed"), FileTouch(str(folder / "gone.py"), "observed")],
        files_modified=[FileTouch("changed.py", "observed"), FileTouch("dirty.py", "reported")])])
    (folder / "changed.py").write_text("v2\n")
    git(folder, "commit", "-qam", "two")
    (folder / "dirty.py").write_text("v2\n")
    (folder / "gone.py").unlink()
    facts = {fact.path: fact for fact in check_files(touched_files(transcript), transcript, str(folder))}
    assert facts["kept.py"].changed_since is None and facts["kept.py"].unchanged_note == "unchanged since turn 1"
    assert "1 commit since" in (facts["changed.py"].changed_since or "")
    assert "uncommitted changes" in (facts["dirty.py"].changed_since or "")
    assert facts["dirty.py"].provenance == "reported"
    assert "gone" in (facts[str(folder / "gone.py")].changed_since or "")
    brief = build_brief(transcript, RECEIPT, list(facts.values()), count=count, budget=2_000)
    assert "- changed.py: changed in turn 1 (observed); re-verify: " in brief.text
    assert "- kept.py: read in turn 1 (observed); unchanged since turn 1" in brief.text


def test_a_path_outside_the_folder_is_not_checked(tmp_path):
    transcript = Transcript("claude", "s", turns=[Turn("t", "p", "succeeded", started_at="2026-12-01T00:00:00Z",
                                                       files_read=[FileTouch("/etc/hostname", "observed")])])
    [fact] = check_files(touched_files(transcript), transcript, str(tmp_path))
    assert fact.changed_since is None and "outside" in (fact.unchanged_note or "")


STORE = Path(__file__).parents[1] / "fixtures" / "codex-store" / "sessions"
ALPHA = "/tmp/reprise-codex-fixture/work/alpha"
THREE = "01a2331b-c3e0-7ab0-a9f5-6874c14f3431"


def test_continue_with_a_brief_writes_a_session_whose_first_message_is_the_brief(tmp_path):
    shutil.copytree(STORE, Path(os.environ["CODEX_HOME"]) / "sessions")
    (Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects").mkdir(parents=True)
    os.makedirs(ALPHA, exist_ok=True)
    svc = Service.from_environment(workspace=ALPHA)
    ref = SessionRef(workspace_key(ALPHA), THREE, "codex")
    printed = svc.continue_in(ref, "claude", brief=True, budget=2_000, dry_run=True)
    assert printed.brief is not None and not printed.written.written and printed.brief.tokens <= 2_000
    result = svc.continue_in(ref, "claude", brief=True, budget=2_000)
    assert result.brief is not None and result.brief.text == printed.brief.text
    shown = svc.show(result.written.ref)
    [turn] = shown.transcript.turns
    assert turn.user_message == result.brief.text and not turn.reply and not turn.tool_calls
    assert shown.title == "Start a plan MARKfirst (brief from Codex)"
    origin = (shown.meta.model_extra or {})["continued_from"]
    assert origin["brief"] is True and origin["through_turn"] == 3 and origin["brief_tokens"] == result.brief.tokens
    edited = svc.continue_in(ref, "claude", brief_text="Only this, edited. MARKedited", fresh=True)
    assert svc.show(edited.written.ref).transcript.turns[0].user_message == "Only this, edited. MARKedited"


def test_show_turn_n_prints_that_turn_alone_as_the_brief_s_receipt_says(tmp_path, capsys):
    from reprise.tui import cli

    shutil.copytree(STORE, Path(os.environ["CODEX_HOME"]) / "sessions")
    os.makedirs(ALPHA, exist_ok=True)
    assert cli.main(["--workspace", ALPHA, "show", THREE, "--turn", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Turn 2 ") and "MARKsecond" in out and "MARKfirst" not in out and "MARKthird" not in out
    assert cli.main(["--workspace", ALPHA, "show", THREE, "--turn", "4"]) == 2
    assert "has 3 turns; there is no turn 4" in capsys.readouterr().err
