"""Codex's store through Reprise: listed beside Fractal's, shown, searched, metered and resumed,
its ids named by a unique suffix, from rollouts the builder writes under a scratch CODEX_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from reprise.core import contract
from reprise.core.errors import AgentError, AmbiguousError, NotFoundError
from reprise.core.meter import TokenCounter
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.sources.codex.meter import ITEM_FRAME
from reprise.core.sources.registry import short_id
from tests import factories
from tests.core.codex.builder import START, CodexRollout, rename


@pytest.fixture
def codex_root() -> Path:
    return Path(os.environ["CODEX_HOME"])


def service_in(folder: Path) -> Service:
    return Service.from_environment(workspace=str(folder))


def write(root: Path, folder: Path, *, seed: int, turns: int = 1, source: str = "exec", **extra) -> CodexRollout:
    rollout = CodexRollout(cwd=str(folder), source=source, seed=seed, start=START + timedelta(seconds=seed), **extra)
    for number in range(turns):
        rollout.turn(f"prompt {number + 1} of session {seed}", f"reply {number + 1}",
                     tokens=(10_000 + 1_000 * number, 30))
    rollout.write(root)
    return rollout


def test_codex_sessions_list_beside_fractal_ones_in_their_folder(codex_root, tmp_path, isolated_paths):
    folder, other = tmp_path / "proj", tmp_path / "other"
    folder.mkdir()
    other.mkdir()
    factories.write_session(isolated_paths, folder, factories.session_bytes("fractal-one"))
    cli = write(codex_root, folder, seed=1, turns=2, source="cli")
    hidden = write(codex_root, folder, seed=2)
    elsewhere = write(codex_root, other, seed=3)
    service = service_in(folder)
    assert service.loaded.choices["codex"].enabled
    assert "sessions/ folder" not in service.loaded.choices["codex"].why
    listing = service.list_sessions()
    service.load_details(listing.rows)
    rows = {(row.source, row.file_id): row for row in listing.rows}
    assert set(rows) == {("fractal", "fractal-one"), ("codex", cli.session_id), ("codex", hidden.session_id)}
    row = rows[("codex", cli.session_id)]
    assert row.workspace_key == workspace_key(folder) and row.workspace_path == str(folder)
    assert (row.turns, row.context_tokens, row.hidden_by_agent) == (2, 11_000, False)
    assert rows[("codex", hidden.session_id)].hidden_by_agent   # `codex exec`: its picker hides it
    everything = service.list_sessions(all_workspaces=True, sources=["codex"])
    assert elsewhere.session_id in {row.file_id for row in everything.rows}
    service.load_details(everything.rows)
    documents = {doc["session_id"]: doc for doc in contract.dump(contract.session_list(everything))["sessions"]}
    assert documents[cli.session_id]["source"] == "codex"
    assert documents[cli.session_id]["branch"] == "main"
    assert documents[cli.session_id]["model"] == "gpt-5.1-codex"


def test_a_rows_window_is_the_one_codex_recorded_as_its_meter_says(codex_root, tmp_path):
    """The NEXT share of a row and the meter of the session measure against the same window: the
    `model_context_window` Codex recorded, not the model table's; a pinned model's when one is pinned."""
    rollout = CodexRollout(cwd=str(tmp_path), source="cli", seed=1, start=START)
    rollout.turn("a prompt", "a reply", tokens=(10_000, 30))
    rollout.tokens(11_000, 40, window=475_000)
    rollout.write(codex_root)
    service = service_in(tmp_path)
    [row] = service.list_sessions().rows
    ref = SessionRef(workspace_key(tmp_path), rollout.session_id, "codex")
    assert row.limit is not None and row.limit.window == 475_000 == service.measure(ref).window
    (tmp_path / "config.toml").write_text('[meter]\nmodel = "gpt-5"\n', encoding="utf-8")
    pinned = service_in(tmp_path)
    [row] = pinned.list_sessions().rows
    assert row.limit is not None and row.limit.window == pinned.measure(ref).window != 475_000


def test_codex_is_off_without_a_sessions_folder_and_says_why(tmp_path):
    service = service_in(tmp_path)
    assert "codex" not in service.sources
    assert "no Codex store (no sessions/ folder)" in service.loaded.choices["codex"].why


def test_the_title_is_codex_s_name_else_the_first_prompt(codex_root, tmp_path):
    named = write(codex_root, tmp_path, seed=1, source="cli")
    plain = write(codex_root, tmp_path, seed=2, source="cli")
    rename(codex_root, named.session_id, "Parser rewrite")
    service = service_in(tmp_path)
    listing = service.list_sessions()
    service.load_details(listing.rows)
    titles = {row.file_id: row.display_title for row in listing.rows}
    assert titles == {named.session_id: "Parser rewrite", plain.session_id: "prompt 1 of session 2"}
    detail = service.show(SessionRef(workspace_key(tmp_path), named.session_id, "codex"))
    assert detail.agent_title == "Parser rewrite"


def test_a_rename_in_codex_is_listed_next_time_though_no_rollout_changed(codex_root, tmp_path):
    named = write(codex_root, tmp_path, seed=1, source="cli")
    other = write(codex_root, tmp_path, seed=2, source="cli")
    rename(codex_root, named.session_id, "First name")
    day_ago = time.time() - 86_400
    for path in (named.path_in(codex_root), other.path_in(codex_root), codex_root / "session_index.jsonl"):
        os.utime(path, (day_ago, day_ago))   # all settled: only a changed stat makes a file be read again
    service = service_in(tmp_path)

    def titles() -> dict[str, str]:
        listing = service.list_sessions()
        service.load_details(listing.rows)
        return {row.file_id: row.display_title for row in listing.rows}

    assert titles()[named.session_id] == "First name"
    listing_source = service.sources["codex"].listing
    before = listing_source.bytes_read
    rename(codex_root, named.session_id, "Second name", "2026-11-23T10:00:00Z")
    rename(codex_root, other.session_id, "Other's name", "2026-11-23T10:00:00Z")
    moments = time.time() - 60
    os.utime(codex_root / "session_index.jsonl", (moments, moments))
    assert titles() == {named.session_id: "Second name", other.session_id: "Other's name"}
    assert listing_source.bytes_read == before   # read on from their carries: no byte of the rollouts again


def test_show_search_and_meter_read_the_rollout(codex_root, tmp_path):
    rollout = CodexRollout(cwd=str(tmp_path), source="cli")
    rollout.turn("find the needle", "found it", tokens=(20_000, 40), reasoning="**Searching**")
    rollout.task_started()
    rollout.prompt("count words")
    rollout.shell(["wc", "-w", "notes.txt"], "42 notes.txt")
    rollout.reply("42 words")
    rollout.tokens(21_500, 12, cached=20_000, window=200_000)
    rollout.task_complete()
    rollout.write(codex_root)
    service = service_in(tmp_path)
    ref = SessionRef(workspace_key(tmp_path), rollout.session_id, "codex")
    detail = service.show(ref)
    assert [turn.user_message for turn in detail.transcript.turns] == ["find the needle", "count words"]
    assert detail.transcript.turns[1].commands[0].command == "wc -w notes.txt"
    assert detail.agent_label == "Codex"
    hits = service.search("notes")
    assert [(hit.row.file_id, hit.turn, hit.field) for hit in hits] == [(rollout.session_id, 2, "tool")]
    meter = service.measure(ref, "a draft of a few words")
    measured = meter.part("measured")
    assert measured.tokens == 21_500 and meter.measured is not None and meter.measured.turn == 2
    assert meter.window == 200_000 and "as Codex recorded it" in meter.window_source
    draft = meter.part("message")
    assert draft.tokens and "counted with o200k_base" in (draft.note or "")
    reply = meter.part("reply")   # "42 words" came after the measured call's input
    assert reply.tokens == TokenCounter().count("42 words", "o200k_base") + ITEM_FRAME
    assert meter.total == 21_500 + (reply.tokens or 0) + draft.tokens


def test_a_codex_fork_shows_its_parents_history_found_by_id_in_the_store(codex_root, tmp_path):
    parent = write(codex_root, tmp_path, seed=1, turns=2, source="cli")
    fork = CodexRollout(cwd=str(tmp_path), source="exec", forked_from=parent.session_id, seed=9,
                        start=parent.clock + timedelta(days=1))
    fork.turn("fork prompt", "fork reply", first=False)
    fork.write(codex_root)
    orphan = CodexRollout(cwd=str(tmp_path), source="exec", seed=10, start=parent.clock + timedelta(days=2),
                          forked_from="019a0000-0000-7000-8000-00000000dead")
    orphan.turn("orphan prompt", "orphan reply", first=False)
    orphan.write(codex_root)
    service = service_in(tmp_path)
    listing = service.list_sessions()
    service.load_details(listing.rows)
    rows = {row.file_id: row for row in listing.rows}
    assert rows[fork.session_id].turns == 3 and rows[fork.session_id].fields.warning is None
    assert rows[orphan.session_id].turns == 1
    assert "not in the store" in (rows[orphan.session_id].fields.warning or "")
    detail = service.show(SessionRef(workspace_key(tmp_path), fork.session_id, "codex"))
    assert [turn.user_message for turn in detail.transcript.turns] == [
        "prompt 1 of session 1", "prompt 2 of session 1", "fork prompt"]
    assert any(parent.session_id in note for note in detail.transcript.notes)
    lone = service.show(SessionRef(workspace_key(tmp_path), orphan.session_id, "codex"))
    assert [turn.user_message for turn in lone.transcript.turns] == ["orphan prompt"]
    assert any("not in the store" in note for note in lone.transcript.notes)
    plan = service.resume_plan(SessionRef(workspace_key(tmp_path), orphan.session_id, "codex"), for_exec=False)
    assert any("Codex cannot resume this fork without it" in note and "will fail" in note for note in plan.notes)


def test_resume_runs_codex_resume_in_the_sessions_folder_and_says_when_it_is_gone(codex_root, tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    rollout = write(codex_root, folder, seed=1, source="cli")
    service = service_in(tmp_path)
    ref = SessionRef(workspace_key(folder), rollout.session_id, "codex")
    plan = service.resume_plan(ref, for_exec=False)
    assert plan.argv == ["codex", "resume", rollout.session_id]
    assert plan.cwd == str(folder)
    folder.rmdir()
    moved = service_in(tmp_path).resume_plan(ref, for_exec=False)
    assert moved.cwd == str(tmp_path)
    assert any("no longer exists" in note for note in moved.notes)


def test_ids_resolve_by_a_unique_suffix_for_codex_and_by_prefix_as_before(codex_root, tmp_path, isolated_paths):
    factories.write_session(isolated_paths, tmp_path, factories.session_bytes("fractal-session-abcd"))
    first = write(codex_root, tmp_path, seed=1)
    second = write(codex_root, tmp_path, seed=2)
    assert first.session_id[:8] == second.session_id[:8]   # uuidv7: the time comes first
    service = service_in(tmp_path)
    with pytest.raises(AmbiguousError):
        service.resolve(first.session_id[:8])
    assert service.resolve(first.session_id[-8:]).session_id == first.session_id
    assert service.resolve("…" + second.session_id[-6:]).session_id == second.session_id   # as a row shows it
    assert service.resolve("fractal-sess").session_id == "fractal-session-abcd"   # a prefix still wins
    assert service.resolve("on-abcd").session_id == "fractal-session-abcd"       # any source's suffix
    with pytest.raises(NotFoundError):
        service.resolve("zzzz-nothing")


def test_an_ambiguous_suffix_is_reported(codex_root, tmp_path):
    one = CodexRollout("019a0000-0000-7000-8000-0000000aaaa1", cwd=str(tmp_path))
    two = CodexRollout("019a0000-0000-7000-8000-0000000baaa1", cwd=str(tmp_path))
    for rollout in (one, two):
        rollout.turn("hi", "ok")
        rollout.write(codex_root)
    with pytest.raises(AmbiguousError, match="matches 2 sessions"):
        service_in(tmp_path).resolve("aaa1")


def test_codex_rows_show_the_random_end_of_their_id():
    assert short_id("codex", "019a0000-0000-7000-8000-0123456789ab") == "…456789ab"
    assert short_id("claude", "33333333-3333-4333-8333-333333333333") == "33333333…"
    assert short_id("fractal", "short") == "short"


def test_the_command_line_lists_codex_rows_by_the_end_of_their_id(codex_root, tmp_path):
    rollout = write(codex_root, tmp_path, seed=1, source="cli")
    listed = subprocess.run([sys.executable, "-m", "reprise.tui.cli", "list"], capture_output=True, text=True,
                            cwd=tmp_path, env=os.environ.copy(), timeout=120, stdin=subprocess.DEVNULL)
    assert listed.returncode == 0, listed.stderr
    assert f"…{rollout.session_id[-8:]}" in listed.stdout
    shown = subprocess.run([sys.executable, "-m", "reprise.tui.cli", "show", rollout.session_id[-8:]],
                           capture_output=True, text=True, cwd=tmp_path, env=os.environ.copy(), timeout=120,
                           stdin=subprocess.DEVNULL)
    assert shown.returncode == 0, shown.stderr
    assert "prompt 1 of session 1" in shown.stdout


def test_a_turn_sent_to_a_codex_session_runs_codex_and_says_so_when_it_is_not_installed(codex_root, tmp_path,
                                                                                     monkeypatch):
    rollout = write(codex_root, tmp_path, seed=1, source="cli")
    service = service_in(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    with pytest.raises(AgentError, match="The Codex program 'codex' was not found"):
        service.send_turn(SessionRef(workspace_key(tmp_path), rollout.session_id, "codex"), "hello")
