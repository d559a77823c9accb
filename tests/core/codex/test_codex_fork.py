"""A Codex session trimmed as a fork (fork.py and the source's trim), on rollouts the real Codex CLI
0.171.0 wrote (tests/fixtures/codex-store): the new rollout in the same date folder with a new
uuid v7 in its name and session_meta, whole turns dropped, the thread's injected context kept, every
other line byte for byte, a Codex fork written self-contained, the original untouched, the fork
archived, titled, undone into the trash."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

from reprise.core.errors import UsageError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.sources.codex.fork import dumps, fork_name, new_thread_id, plan_fork, read_lines, split_turns
from reprise.core.sources.codex.records import parse_rollout
from reprise.core.sources.codex.transcript import read_transcript
from reprise.core.trimming import TrimOptions

STORE = Path(__file__).parents[2] / "fixtures" / "codex-store" / "sessions"
DAY = STORE / "2026" / "12" / "01"
THREE = "01a2331b-c3e0-7ab0-a9f5-6874c14f3431"
COMPACT = "01a2331b-d188-7873-8822-d23645d9fce8"
FORK = "01a2331b-daed-7e81-bf0f-7db49f055dc5"
BASH = "01a2331b-cc0a-74b3-8c63-8c4e7c73f7a6"
ALPHA = "/tmp/reprise-codex-fixture/work/alpha"
FORK_ID = "01a2331c-0000-7000-8000-000000000001"


def rollout(session_id: str, root: Path = DAY) -> Path:
    [path] = root.glob(f"rollout-*-{session_id}.jsonl")
    return path


def count(text: str) -> int:
    return len(text) // 4


def plan(session_id: str, **options):
    return plan_fork(rollout(session_id).read_bytes(), TrimOptions(**options), fork_id=FORK_ID,
                     context_before=20_000, count=count)


def lines_of(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode().splitlines()]


def prompts(data: bytes, session_id: str = FORK_ID) -> list[str]:
    transcript, _ = read_transcript(parse_rollout(data).records, session_id)
    return [turn.user_message for turn in transcript.turns]


def test_turns_run_from_after_the_previous_end_to_task_complete():
    lines, _, bad = read_lines(rollout(THREE).read_bytes())
    turns = split_turns(lines, THREE)
    assert bad == [] and [turn.prompt for turn in turns] == [
        "Start a plan MARKfirst", "Continue the plan MARKsecond", "Finish the plan MARKthird"]
    assert [(turn.start, turn.end) for turn in turns] == [(1, 18), (18, 28), (28, 38)]
    assert lines[turns[0].prompt_at].record["payload"]["content"][0]["text"] == "Start a plan MARKfirst"


def test_dropping_a_middle_turn_keeps_every_other_line_byte_for_byte_under_a_new_id():
    original = rollout(THREE).read_bytes()
    result = plan(THREE, drop=("2",))
    assert result.changed and [(c.number, c.change) for c in result.turns] == [(2, "dropped")]
    new_lines, old_lines = result.data.split(b"\n"), original.split(b"\n")
    assert new_lines[1:] == old_lines[1:18] + old_lines[28:]      # turn 2's ten lines gone, the rest as they were
    meta = json.loads(new_lines[0])["payload"]
    assert meta["id"] == meta["session_id"] == FORK_ID
    assert new_lines[0] + b"\n" == dumps(json.loads(new_lines[0]))          # Codex's byte form
    assert prompts(result.data) == ["Start a plan MARKfirst", "Finish the plan MARKthird"]
    assert b"MARKsecond" not in result.data and result.state.kept_turns == [
        json.loads(old_lines[1])["payload"]["turn_id"], json.loads(old_lines[29])["payload"]["turn_id"]]
    assert result.meter_after is not None and result.meter_after < 20_000


def test_dropping_the_first_turn_keeps_the_context_codex_injected_at_the_threads_start():
    result = plan(THREE, keep_history=1)
    kinds = [(r["type"], r["payload"].get("type"), r["payload"].get("role")) for r in lines_of(result.data)]
    assert ("response_item", "additional_tools", "developer") in kinds and ("world_state", None, None) in kinds
    assert kinds.count(("response_item", "message", "developer")) == 4
    assert prompts(result.data) == ["Finish the plan MARKthird"]
    assert b"MARKfirst" not in result.data and b"MARKsecond" not in result.data


def test_a_tool_call_stays_with_its_output_and_unknown_records_are_kept():
    data = rollout(BASH).read_bytes()
    unknown = dumps({"timestamp": "2026-12-01T19:40:00.000Z", "type": "future_record", "payload": {"é": 1}})
    # A second, hand-made turn with an unknown record and a tool call whose output never came.
    stray = dumps({"timestamp": "2026-12-01T19:41:00.000Z", "type": "response_item",
                   "payload": {"type": "function_call", "name": "shell", "call_id": "call_stray", "arguments": "{}"}})
    turn = [dumps({"timestamp": "2026-12-01T19:41:00.000Z", "type": "event_msg",
                   "payload": {"type": "task_started", "turn_id": "turn-2"}}),
            dumps({"timestamp": "2026-12-01T19:41:00.000Z", "type": "event_msg",
                   "payload": {"type": "item_completed", "item": {"type": "UserMessage",
                                                                 "content": [{"type": "text", "text": "again"}]}}}),
            unknown, stray,
            dumps({"timestamp": "2026-12-01T19:41:01.000Z", "type": "event_msg",
                   "payload": {"type": "task_complete", "turn_id": "turn-2"}})]
    result = plan_fork(data + b"".join(turn), TrimOptions(drop=("1",)), fork_id=FORK_ID, context_before=None,
                       count=count)
    assert unknown in result.data
    assert stray not in result.data and b"call_stray" not in result.data
    assert any("without their output" in note for note in result.notes)
    kept_calls = [r for r in lines_of(result.data) if r["payload"].get("type") in ("custom_tool_call",
                                                                                     "custom_tool_call_output")]
    assert kept_calls == [] and b"OUTWORD42" not in result.data    # the first turn's call and output went together
    assert prompts(result.data) == ["again"]


def test_a_turn_dropped_before_a_compaction_leaves_its_replacement_history():
    result = plan(COMPACT, drop=("1",))
    [compacted] = [r for r in lines_of(result.data) if r["type"] == "compacted"]
    history = json.dumps(compacted["payload"]["replacement_history"])
    assert "MARKteal" not in history.replace("SUMMARYfake: the user sent prompts marked MARKteal", "")
    assert "MARKhexagon" in history
    payload = compacted["payload"]
    assert len(payload["replacement_history"]) == len(payload["replacement_history_metadata"]) == 8   # of 9
    retained = json.dumps(payload["retained_context"])
    assert "MARKteal" not in retained and "MARKhexagon" in retained and "REPLYhexagon" in retained
    assert any("came before a compaction" in note for note in result.notes)


def test_a_codex_fork_is_written_self_contained_without_its_lineage_fields():
    parent = [json.loads(line) for line in rollout(THREE).read_text().splitlines()]
    result = plan_fork(rollout(FORK).read_bytes(), TrimOptions(drop=("2",)), fork_id=FORK_ID, context_before=None,
                       count=count, inherited=parent)
    records = lines_of(result.data)
    meta = records[0]["payload"]
    assert not {"forked_from_id", "forked_from_ordinal_exclusive", "history_base"} & set(meta)
    assert meta["id"] == FORK_ID and meta["history_mode"] == "paginated"
    assert sum(1 for r in records if r["type"] == "session_meta") == 1
    assert prompts(result.data) == ["Start a plan MARKfirst", "Finish the plan MARKthird", "Branch off MARKforked"]


def test_options_codex_cannot_take_are_refused_and_nothing_to_do_is_said():
    for options in ({"fold": 1}, {"keep_history": 0}):
        with pytest.raises(UsageError):
            plan(THREE, **options)
    with pytest.raises(UsageError, match="every turn"):
        plan(THREE, drop=("1-3",))
    unchanged = plan(THREE, keep_history=5)
    assert not unchanged.changed and "nothing to trim" in unchanged.notes[-1]


def test_capping_cuts_replies_and_tool_outputs_of_the_older_turns_and_never_a_prompt():
    data = rollout(BASH).read_bytes()
    result = plan_fork(data, TrimOptions(cap_replies=5, spare=0), fork_id=FORK_ID, context_before=20_000,
                       count=count)
    assert [(c.number, c.change) for c in result.turns] == [(1, "capped")] and result.turns[0].chars_cut > 0
    assert b"OUTWORD42" not in result.data and b"REPLYtoolresult" not in result.data
    assert b"characters cut; archive " + result.original_digest.encode() in result.data
    assert prompts(result.data) == prompts(data, BASH)
    calls = {r["payload"]["call_id"] for r in lines_of(result.data) if r["payload"].get("type") in
             ("custom_tool_call", "custom_tool_call_output")}
    assert len(calls) == 1                                   # the call kept with its (capped) output
    assert not plan_fork(data, TrimOptions(cap_replies=5), fork_id=FORK_ID, context_before=None,
                         count=count).changed               # its one turn is among the newest three: spared


def test_fit_is_already_met_or_picks_the_first_rung_under_the_target():
    already = plan(THREE, fit=25_000)
    assert not already.changed and already.fit is not None and already.fit.fits
    fitted = plan(THREE, fit=19_990, spare=0)
    assert fitted.changed and fitted.fit is not None and fitted.fit.fits
    assert fitted.meter_after is not None and fitted.meter_after <= 19_990
    with pytest.raises(UsageError):
        plan_fork(rollout(THREE).read_bytes(), TrimOptions(fit=100), fork_id=FORK_ID, context_before=None,
                  count=count)


def test_a_fork_id_is_a_uuid_v7_of_now_and_names_a_rollout_in_the_same_date_folder():
    made = uuid.UUID(new_thread_id(now=1_800_000_000.0))
    assert made.version == 7 and made.int >> 80 == 1_800_000_000_000
    name = fork_name(rollout(THREE).name, FORK_ID)
    assert name == f"rollout-2026-12-01T19-36-27-{FORK_ID}.jsonl"


@pytest.fixture
def store(tmp_path) -> Path:
    root = Path(os.environ["CODEX_HOME"])
    shutil.copytree(STORE, root / "sessions")
    return root


def service() -> Service:
    os.makedirs(ALPHA, exist_ok=True)
    return Service.from_environment(workspace=ALPHA)


def test_the_source_writes_the_fork_beside_the_original_archives_it_and_undo_trashes_it(store):
    svc = service()
    ref = SessionRef(workspace_key(ALPHA), THREE, "codex")
    original = rollout(THREE, store / "sessions" / "2026" / "12" / "01")
    before = original.read_bytes()
    source = svc.sources["codex"]
    result = source.fork(ref, TrimOptions(drop=("2",)), None, dry_run=False, force=False, model=None,
                         expected_sha256=None)
    assert result.applied and result.forked and original.read_bytes() == before
    fork = rollout(result.ref.session_id, original.parent)
    assert fork.read_bytes() == result.plan.data
    meta = source.read_meta(result.ref)
    assert meta.title == "Start a plan MARKfirst (trimmed)" and (meta.model_extra or {})["forked_from"] == THREE
    assert svc.measure(result.ref).parts[0].tokens == result.plan.meter_after   # the estimate
    assert source.can_undo_trim(result.ref)
    undone = source.restore(result.ref, archive_digest=None, all_trims=False, dry_run=False, force=False)
    assert undone.applied and not fork.exists() and original.read_bytes() == before
    assert [entry.ref.session_id for entry in source.trash_entries([ref.workspace_key])] == [result.ref.session_id]


def test_a_codex_fork_whose_parent_is_missing_is_not_trimmed(store):
    rollout(THREE, store / "sessions" / "2026" / "12" / "01").unlink()
    source = service().sources["codex"]
    with pytest.raises(UsageError, match="not in the store"):
        source.fork(SessionRef(workspace_key(ALPHA), FORK, "codex"), TrimOptions(drop=("1",)), None, dry_run=True,
                    force=False, model=None, expected_sha256=None)
