"""One rollout the real Codex CLI 0.171.0 wrote (copied from cxlive's tests/fixtures/codex-store, whose
README says how: `codex exec 'Remember the colour MARKteal'`, then two `exec resume`, the third with an
auto-compaction before its turn), read by the listing fold, the transcript and the meter's figures."""

from __future__ import annotations

from pathlib import Path

from reprise.core.sources.codex.fields import ListingFold
from reprise.core.sources.codex.records import parse_rollout
from reprise.core.sources.codex.transcript import read_transcript
from reprise.core.sources.transcript_search import search_records

DATA = Path(__file__).parent / "data"
ROLLOUT = DATA / "rollout-2026-12-01T19-36-30-01a2331b-d188-7873-8822-d23645d9fce8.jsonl"
SESSION = "01a2331b-d188-7873-8822-d23645d9fce8"


def records():
    parsed = parse_rollout(ROLLOUT.read_bytes())
    assert parsed.warnings == [] and parsed.end == ROLLOUT.stat().st_size
    return parsed.records


def test_the_real_rollout_lists_three_exec_turns_measured_against_codex_s_window():
    fold = ListingFold()
    fold.feed(records())
    found = fold.result()
    assert found.session_id == SESSION
    assert found.cwd == "/tmp/reprise-codex-fixture/work/alpha"
    assert (found.source, found.hidden_by_agent) == ("exec", True)
    assert found.turns == 3
    assert (found.first_message, found.last_message) == ("Remember the colour MARKteal", "What now? MARKaftercompact")
    assert found.last_status == "succeeded"
    assert found.model == "gpt-6.2-sol"
    assert found.branch is None   # not a git folder
    # The newest call's input (len(request body) // 4 at the fake server), not the cumulative 182,084.
    assert (found.context_tokens, found.context_basis, found.context_turn) == (15_601, "call", 3)
    assert found.context_window == 475_000


def test_the_real_rollouts_transcript_keeps_the_compaction_summary_out_of_the_replies():
    transcript, warnings = read_transcript(records(), SESSION)
    assert warnings == []
    assert [turn.user_message for turn in transcript.turns] == [
        "Remember the colour MARKteal", "And the shape MARKhexagon BIGUSAGE", "What now? MARKaftercompact"]
    assert [turn.reply for turn in transcript.turns] == [
        "Noted MARKteal; my answer word is REPLYteal.", "Noted MARKhexagon; my answer word is REPLYhexagon.",
        "Noted MARKaftercompact; my answer word is REPLYaftercompact."]
    assert all("environment_context" not in turn.user_message for turn in transcript.turns)
    assert [compaction.before_turn for compaction in transcript.compactions] == [2]
    assert [turn.status for turn in transcript.turns] == ["succeeded"] * 3
    second = transcript.turns[1].usage
    assert second is not None and second.context_tokens == 135_457   # the BIGUSAGE call
    # each turn's own duration, from its task_complete
    assert [turn.usage.duration_ms if turn.usage else None for turn in transcript.turns] == [87, 81, 151]
    texts = {(record.turn, record.field): record.text for record in search_records(transcript)}
    assert "REPLYhexagon" in texts[(2, "response")]
    assert not any("SUMMARYfake" in text for text in texts.values())
