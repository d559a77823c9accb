"""Trimming a Claude Code session as a fork: the fork's bytes planned from the real fixture files
(made by Claude Code 2.1.332), then written beside the original through the source, archived,
titled, listed, and undone into Reprise's trash; the original's bytes never change."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from reprise.core import contract
from reprise.core.errors import ChangedOnDiskError, UsageError
from reprise.core.sources.claude.chain import main_chain_records
from reprise.core.sources.claude.fork import plan_fork
from reprise.core.sources.claude.messages import PROMPT, kind_of, prompt_text
from reprise.core.sources.claude.records import parse_lines
from reprise.core.trimming import TrimOptions
from tests.core.claude.builder import ClaudeFile
from tests.core.claude.test_claude_source import (
    BASH,
    COMPACTED,
    FIXTURE,
    THREE_TURNS,
    copy_store,
    rows_by_id,
    service_in,
)

ALPHA = FIXTURE / "-tmp-reprise-claude-fixture-work-alpha"
SUBAGENT = "44444444-4444-4444-8444-444444444444"
AGENT_ID = "a1859b995adbf70a0"
FORK_ID = "f0f0f0f0-0000-4000-8000-000000000001"
DROPPED_TYPES = {"api-request-shape", "api-request-blob", "api-request", "queue-operation"}


def _fixture(session_id: str) -> bytes:
    return (ALPHA / f"{session_id}.jsonl").read_bytes()


def _plan(data: bytes, options: TrimOptions, context: int | None = 12_000):
    return plan_fork(data, options, fork_id=FORK_ID, context_before=context, count=lambda text: len(text) // 4)


def _records(data: bytes):
    parsed = parse_lines(data, 0, skim=False)
    assert parsed.end == len(data) and parsed.warnings == []
    return parsed.records


def _prompts(data: bytes) -> list[str]:
    chain, _, _ = main_chain_records(_records(data))
    return [prompt_text(record) for record in chain if kind_of(record) == PROMPT]


def _check_fork_form(data: bytes) -> None:
    """Every line compact JSON in Claude's byte form, the fork's id in every record that names one,
    every parent a record of the fork, the last-prompt naming the main chain's leaf, nothing dropped kept."""
    assert data.endswith(b"\n")
    records = _records(data)
    for line, record in zip(data.splitlines(), records, strict=True):
        assert json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() == line
    assert {r["sessionId"] for r in records if "sessionId" in r} == {FORK_ID}
    uuids = {r["uuid"] for r in records if isinstance(r.get("uuid"), str)}
    assert all(r.get("parentUuid") in uuids for r in records if isinstance(r.get("parentUuid"), str))
    assert all(r.get("logicalParentUuid") in uuids for r in records if isinstance(r.get("logicalParentUuid"), str))
    assert not [r for r in records if r["type"] in DROPPED_TYPES]
    assert not [r for r in records if isinstance(r.get("attachment"), dict)
                and r["attachment"].get("type") == "prompt_snapshot"]
    last = [r for r in records if r["type"] == "last-prompt"]
    chain, info, _ = main_chain_records(records)
    assert len(last) == 1 and last[0] == records[-1] and last[0]["leafUuid"] == info.leaf == chain[-1]["uuid"]


def test_dropping_a_middle_turn_keeps_the_others_in_order_with_the_chain_rejoined():
    data = _fixture(THREE_TURNS)
    plan = _plan(data, TrimOptions(drop=("2",)))
    assert plan.changed and plan.data is not None and plan.source.sha256 == hashlib.sha256(data).hexdigest()
    _check_fork_form(plan.data)
    assert _prompts(plan.data) == ["Start a plan MARKfirst", "Finish the plan MARKthird"]
    assert b"MARKsecond" not in plan.data and b"REPLYsecond" not in plan.data
    assert b"REPLYfirst" in plan.data and b"REPLYthird" in plan.data
    assert [(c.number, c.change) for c in plan.turns] == [(2, "dropped")]
    last = json.loads(plan.data.splitlines()[-1])
    assert last["lastPrompt"] == "Finish the plan MARKthird"
    assert plan.meter_before == 12_000 and plan.meter_after is not None and plan.meter_after < 12_000
    assert any("estimate" in note for note in plan.notes)
    assert plan.records_digest == hashlib.sha256(plan.data).hexdigest()
    contract.Trim.model_json_schema()   # the plan fits the document's types (checked through the source below)


def test_dropping_a_range_and_by_turn_id():
    data = _fixture(THREE_TURNS)
    assert _prompts(_plan(data, TrimOptions(drop=("1-2",))).data or b"") == ["Finish the plan MARKthird"]
    chain, _, _ = main_chain_records(_records(data))
    second = [r for r in chain if kind_of(r) == PROMPT][1]["uuid"]
    plan = _plan(data, TrimOptions(drop=(second,)))
    assert _prompts(plan.data or b"") == ["Start a plan MARKfirst", "Finish the plan MARKthird"]
    with pytest.raises(UsageError, match="no turn 4"):
        _plan(data, TrimOptions(drop=("4",)))
    with pytest.raises(UsageError, match="every turn"):
        _plan(data, TrimOptions(drop=("1-3",)))


def test_keeping_the_newest_turn_drops_the_older_ones_whole():
    data = _fixture(THREE_TURNS)
    plan = _plan(data, TrimOptions(keep_history=1))
    assert plan.data is not None
    _check_fork_form(plan.data)
    assert _prompts(plan.data) == ["Finish the plan MARKthird"]
    for word in (b"MARKfirst", b"REPLYfirst", b"MARKsecond", b"REPLYsecond"):
        assert word not in plan.data
    first = _records(plan.data)
    assert next(r for r in first if isinstance(r.get("uuid"), str))["parentUuid"] is None
    with pytest.raises(UsageError, match="at least one turn"):
        _plan(data, TrimOptions(keep_history=0))


def test_capping_a_tool_result_cuts_its_output_and_keeps_the_call_with_its_result():
    data = _fixture(BASH)
    plan = _plan(data, TrimOptions(cap_replies=5, spare=0))
    assert plan.data is not None
    _check_fork_form(plan.data)
    assert b"OUTWORD42" not in plan.data   # only in the output (the prompt and command say OUTWORD$((6*7)))
    assert f"characters cut; archive {plan.source.sha256}".encode() in plan.data
    records = _records(plan.data)
    uses = {b["id"] for r in records if r["type"] == "assistant" for b in r["message"]["content"]
            if b.get("type") == "tool_use"}
    results = {b["tool_use_id"] for r in records if r["type"] == "user" and isinstance(r["message"]["content"], list)
               for b in r["message"]["content"] if b.get("type") == "tool_result"}
    assert uses and uses == results
    assert _prompts(plan.data) == _prompts(data)   # a prompt is the person's: never capped
    assert [c.change for c in plan.turns] == ["capped"] and plan.turns[0].chars_cut > 0
    # the newest turns are spared by default
    assert not _plan(data, TrimOptions(cap_replies=5)).changed


def test_thinking_blocks_are_copied_whole_and_a_call_without_result_is_left_out():
    built = ClaudeFile()
    built.turn("first question", "first answer " * 50)
    built.prompt("second question")
    built.assistant("second answer " * 50, thinking="deep thought " * 50)
    built.prompt("third question")
    built.assistant("let me look", tools=(("toolu_orphan", "Bash", {"command": "ls"}),))
    data = built.data()
    plan = _plan(data, TrimOptions(cap_replies=20, spare=0))
    assert plan.data is not None
    records = _records(plan.data)
    thinking = [b for r in records if r["type"] == "assistant" for b in r["message"]["content"]
                if b.get("type") == "thinking"]
    assert thinking == [{"type": "thinking", "thinking": "deep thought " * 50, "signature": "sig"}]
    assert b"toolu_orphan" not in plan.data
    assert _prompts(plan.data) == ["first question", "second question", "third question"]


def test_a_compaction_stays_and_its_link_is_rejoined_when_a_turn_before_it_is_dropped():
    data = (ALPHA / f"{COMPACTED}.jsonl").read_bytes()
    plan = _plan(data, TrimOptions(drop=("1",)))
    assert plan.data is not None
    _check_fork_form(plan.data)
    assert b"MARKteal" not in _strip_summary(plan.data)
    records = _records(plan.data)
    assert [r for r in records if r.get("subtype") == "compact_boundary"]
    assert "What now? MARKaftercompact" in _prompts(plan.data)
    assert any("compaction" in note for note in plan.notes)


def _strip_summary(data: bytes) -> bytes:
    """The fork without the compaction's summary (Claude Code's own words about every earlier turn)."""
    return b"\n".join(line for line in data.splitlines() if b'"isCompactSummary":true' not in line)


def test_fold_is_refused_and_fit_picks_a_rung_by_the_estimate():
    data = _fixture(THREE_TURNS)
    with pytest.raises(UsageError, match="--fold"):
        _plan(data, TrimOptions(fold=1))
    already = _plan(data, TrimOptions(fit=20_000), context=12_000)
    assert not already.changed and already.fit is not None and already.fit.fits
    fitted = _plan(data, TrimOptions(fit=11_990, spare=0), context=12_000)
    assert fitted.changed and fitted.fit is not None and fitted.fit.fits and fitted.meter_after is not None
    assert fitted.meter_after <= 11_990
    with pytest.raises(UsageError, match="measured context"):
        _plan(data, TrimOptions(fit=100), context=None)


def test_a_kept_subagent_turn_names_its_sidecar():
    plan = _plan((ALPHA / f"{SUBAGENT}.jsonl").read_bytes(), TrimOptions(cap_replies=3, spare=0))
    assert plan.state.agent_ids == [AGENT_ID]


# --- through the source -----------------------------------------------------------------------------------

@pytest.fixture
def forks(tmp_path, monkeypatch):
    """The fixture store with the subagent sidecar, and the Claude source able to fork (the lead turns the
    capability on)."""
    import os
    claude_root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    folders = copy_store(claude_root, tmp_path / "work")
    project = next(claude_root.glob("projects/*alpha"))
    shutil.copytree(ALPHA / SUBAGENT, project / SUBAGENT)
    return service_in(folders["alpha"]), project


def test_a_fork_is_written_beside_the_original_archived_titled_and_listed(forks):
    service, project = forks
    ref = service.resolve(THREE_TURNS)
    original = (project / f"{THREE_TURNS}.jsonl").read_bytes()
    preview = service.trim(ref, TrimOptions(drop=("2",)), dry_run=True, fork=True)
    assert preview.dry_run and not preview.applied and sorted(p.name for p in project.glob("*.jsonl")) == \
        sorted(p.name for p in ALPHA.glob("*.jsonl"))
    result = service.trim(ref, TrimOptions(drop=("2",)), fork=True)
    assert result.applied and result.forked and result.source == ref and result.ref.source == "claude"
    fork_file = project / f"{result.ref.session_id}.jsonl"
    assert fork_file.read_bytes() == result.plan.data and b"MARKsecond" not in fork_file.read_bytes()
    assert (project / f"{THREE_TURNS}.jsonl").read_bytes() == original
    ops = {entry.op: entry for entry in service.archive_entries(result.ref)}
    assert ops["fork"].digest == hashlib.sha256(fork_file.read_bytes()).hexdigest()
    assert [e.digest for e in service.archive_entries(ref) if e.op == "fork-original"] == \
        [hashlib.sha256(original).hexdigest()]
    document = contract.trim(result)
    assert document.session_id == result.ref.session_id and document.source_session_id == THREE_TURNS
    assert document.forked and document.applied and document.counts.dropped == 1
    assert document.archive_digest == ops["fork"].digest
    row = rows_by_id(service.list_sessions())[result.ref.session_id]
    assert row.title == "Start a plan MARKfirst (trimmed)"
    detail = service.show(result.ref)
    assert [t.user_message for t in detail.transcript.turns] == ["Start a plan MARKfirst", "Finish the plan MARKthird"]


def test_a_trim_in_place_is_refused_with_a_clear_message(forks):
    service, project = forks
    ref = service.resolve(THREE_TURNS)
    with pytest.raises(UsageError, match="Claude Code's own files are never rewritten: use --fork"):
        service.trim(ref, TrimOptions(drop=("2",)))


def test_a_forks_subagent_sidecar_is_copied_with_the_new_id(forks):
    service, project = forks
    result = service.trim(service.resolve(SUBAGENT), TrimOptions(cap_replies=3, spare=0), fork=True)
    copied = project / result.ref.session_id / "subagents" / f"agent-{AGENT_ID}.jsonl"
    records = _records(copied.read_bytes())
    assert records and {r["sessionId"] for r in records} == {result.ref.session_id}
    assert (copied.parent / f"agent-{AGENT_ID}.meta.json").read_bytes() == \
        (ALPHA / SUBAGENT / "subagents" / f"agent-{AGENT_ID}.meta.json").read_bytes()
    sidecar = copied.read_bytes()
    assert service.restore(result.ref).applied
    assert not (project / result.ref.session_id).exists() and (project / SUBAGENT / "subagents").is_dir()
    trashed = list(Path(service.sources["claude"].own_paths.root).rglob(f"trash/**/agent-{AGENT_ID}.jsonl"))
    assert [path.read_bytes() for path in trashed] == [sidecar]


def test_undo_moves_the_fork_to_the_trash_and_asks_when_it_grew(forks):
    service, project = forks
    ref = service.resolve(THREE_TURNS)
    original = (project / f"{THREE_TURNS}.jsonl").read_bytes()
    result = service.trim(ref, TrimOptions(keep_history=1), fork=True)
    fork_file = project / f"{result.ref.session_id}.jsonl"
    written = fork_file.read_bytes()
    assert service.can_undo_trim(result.ref) and not service.can_undo_trim(ref)
    with fork_file.open("ab") as grown:   # Claude Code resumed the fork
        grown.write(b'{"type":"mode","mode":"normal","sessionId":"' + result.ref.session_id.encode() + b'"}\n')
    with pytest.raises(ChangedOnDiskError, match="grown"):
        service.restore(result.ref)
    assert fork_file.exists()
    undone = service.restore(result.ref, force=True)
    assert undone.applied and not fork_file.exists()
    trashed = list(Path(service.sources["claude"].own_paths.root).rglob(f"trash/**/{fork_file.name}"))
    assert len(trashed) == 1 and trashed[0].read_bytes().startswith(written)
    assert (project / f"{THREE_TURNS}.jsonl").read_bytes() == original
    with pytest.raises(UsageError, match="not a fork"):
        service.restore(ref)


def test_the_command_line_forks_with_the_trim_document_and_refuses_in_place_with_status_1(forks, monkeypatch,
                                                                                        capsys):
    from reprise.tui import cli

    service, project = forks
    monkeypatch.chdir(project.parents[2] / "work" / "alpha")
    original = (project / f"{THREE_TURNS}.jsonl").read_bytes()
    assert cli.main(["trim", THREE_TURNS, "--drop", "2"]) == 1
    out, err = capsys.readouterr()
    assert "Claude Code's own files are never rewritten: use --fork" in err
    assert cli.main(["trim", THREE_TURNS, "--fork", "--drop", "2", "--dry-run", "--json"]) == 0
    preview = json.loads(capsys.readouterr().out)
    assert preview["dry_run"] and not preview["applied"] and preview["size_after"] < preview["size_before"]
    assert preview["meter_after"] < preview["meter_before"]
    assert cli.main(["trim", THREE_TURNS, "--fork", "--drop", "2", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document) == set(contract.Trim.model_fields)
    assert document["source_session_id"] == THREE_TURNS and document["session_id"] != THREE_TURNS
    assert document["turns"] == [{"number": 2, "turn_id": document["turns"][0]["turn_id"], "change": "dropped"}]
    assert (project / f"{document['session_id']}.jsonl").is_file()
    assert (project / f"{THREE_TURNS}.jsonl").read_bytes() == original


def test_a_forks_context_is_the_estimate_until_it_changes(forks):
    service, project = forks
    ref = service.resolve(THREE_TURNS)
    measured = service.measure(ref)
    result = service.trim(ref, TrimOptions(drop=("2",)), fork=True)
    assert result.plan.meter_before == measured.parts[0].tokens
    estimate = service.measure(result.ref)
    part = estimate.parts[0]
    assert (part.name, part.basis, part.tokens) == ("measured", "estimated", result.plan.meter_after)
    assert "estimate" in (part.note or "") and estimate.measured is None
    assert result.plan.meter_after < measured.parts[0].tokens
    fork_file = project / f"{result.ref.session_id}.jsonl"
    with fork_file.open("ab") as grown:   # Claude Code wrote to the fork: its own figures count again
        grown.write(b'{"type":"mode","mode":"normal","sessionId":"' + result.ref.session_id.encode() + b'"}\n')
    again = service.measure(result.ref)
    assert again.parts[0].basis == "measured" and again.parts[0].tokens == measured.parts[0].tokens


def test_the_models_titles_and_summaries_of_dropped_turns_are_left_out_and_the_persons_title_kept():
    built = ClaudeFile()
    built.turn("the secret is SECRETWORD", "noted")
    built.turn("second question", "second answer")
    built.ai_title("About SECRETWORD")
    built.unknown("summary", summary="They discussed SECRETWORD", leafUuid=built.head)
    built.custom_title("My own title")
    plan = _plan(built.data(), TrimOptions(drop=("1",)))
    assert plan.data is not None and b"SECRETWORD" not in plan.data
    assert [r["customTitle"] for r in _records(plan.data) if r["type"] == "custom-title"] == ["My own title"]
    capped = _plan(built.data(), TrimOptions(cap_replies=3, spare=0))
    assert b"About SECRETWORD" in (capped.data or b"")   # nothing dropped: the title describes what is kept


def test_a_fork_is_never_written_over_a_file_and_leaves_no_temp_file(tmp_path):
    import os

    from reprise.core.rooted import write_new

    (tmp_path / "taken.jsonl").write_bytes(b"theirs\n")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(FileExistsError):
            write_new(fd, "taken.jsonl", b"ours\n")
        write_new(fd, "new.jsonl", b"ours\n")
    finally:
        os.close(fd)
    assert (tmp_path / "taken.jsonl").read_bytes() == b"theirs\n" and (tmp_path / "new.jsonl").read_bytes() == b"ours\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.jsonl", "taken.jsonl"]


def test_a_compaction_names_only_kept_records_as_the_segment_it_preserved():
    data = (ALPHA / f"{COMPACTED}.jsonl").read_bytes()
    [original] = [r for r in _records(data) if r.get("subtype") == "compact_boundary"]
    preserved = original["compactMetadata"]["preservedMessages"]["uuids"]
    assert preserved   # Claude Code 2.1.332 preserved the reply before /compact
    plan = _plan(data, TrimOptions(keep_history=1))
    assert plan.data is not None
    [boundary] = [r for r in _records(plan.data) if r.get("subtype") == "compact_boundary"]
    assert not {"preservedMessages", "preservedSegment"} & set(boundary["compactMetadata"])
    assert boundary["compactMetadata"]["postTokens"] == original["compactMetadata"]["postTokens"]
    assert not any(uuid.encode() in plan.data for uuid in preserved)
    kept = _plan(data, TrimOptions(drop=("1",)))   # the preserved reply is turn 2's: kept as it was
    assert [r for r in _records(kept.data or b"") if r.get("subtype") == "compact_boundary"][0]["compactMetadata"] \
        == original["compactMetadata"]


def test_a_preserved_segment_over_two_turns_keeps_the_kept_ones():
    built = ClaudeFile()
    built.prompt("first MARKone")
    [first_reply] = built.assistant("reply REPLYone")
    built.prompt("second MARKtwo")
    [second_reply] = built.assistant("reply REPLYtwo")
    boundary = built.compact()
    [record] = [r for r in built.records if r.get("uuid") == boundary]
    record["compactMetadata"]["preservedSegment"] = {"headUuid": first_reply, "anchorUuid": "x",
                                                     "tailUuid": second_reply}
    record["compactMetadata"]["preservedMessages"] = {"anchorUuid": "x", "uuids": [first_reply, second_reply],
                                                      "allUuids": [first_reply, second_reply]}
    built.prompt("third MARKthree")
    built.assistant("reply REPLYthree")
    plan = _plan(built.data(), TrimOptions(drop=("1",)))
    assert plan.data is not None and b"REPLYone" not in plan.data
    [kept] = [r for r in _records(plan.data) if r.get("subtype") == "compact_boundary"]
    metadata = kept["compactMetadata"]
    assert metadata["preservedMessages"] == {"anchorUuid": "x", "uuids": [second_reply], "allUuids": [second_reply]}
    assert metadata["preservedSegment"] == {"headUuid": second_reply, "anchorUuid": "x", "tailUuid": second_reply}


def test_the_tool_results_files_of_kept_turns_only_are_named_for_copying():
    built = ClaudeFile()
    built.prompt("first")
    built.assistant("looking", tools=(("toolu_a", "Bash", {"command": "ls"}),))
    built.tool_result("toolu_a", "Output too large. Full output saved to: /h/.claude/projects/p/"
                      f"{built.session_id}/tool-results/toolu_a.txt")
    built.assistant("done")
    built.prompt("second")
    built.assistant("looking again", tools=(("toolu_b", "Bash", {"command": "ls"}),))
    built.tool_result("toolu_b", f"saved to: /h/.claude/projects/p/{built.session_id}/tool-results/toolu_b.txt")
    built.assistant("done again")
    assert _plan(built.data(), TrimOptions(drop=("1",))).state.tool_results == ["toolu_b.txt"]


# --- forks keep the text their markers name (issue 24) ------------------------------------------------

MARKER = re.compile(rb"characters cut; archive ([0-9a-f]{64})\]")


def _capped_fork(service, project):
    """A fork of SUBAGENT with its replies capped: (original ref, fork ref, the original's bytes, the digest
    its markers name)."""
    ref = service.resolve(SUBAGENT)
    original = (project / f"{SUBAGENT}.jsonl").read_bytes()
    result = service.trim(ref, TrimOptions(cap_replies=3, spare=0), fork=True)
    named = set(MARKER.findall((project / f"{result.ref.session_id}.jsonl").read_bytes()))
    assert named == {hashlib.sha256(original).hexdigest().encode()}
    return ref, result.ref, original, named.pop().decode()


def test_a_forks_archive_holds_the_text_its_markers_name_through_rm_and_purge_of_the_original(forks):
    service, project = forks
    ref, fork, original, named = _capped_fork(service, project)
    assert service.archive_bytes(fork, named)[1] == original   # `reprise archive show FORK <sha>`
    service.remove(ref)
    result = service.purge(confirmed=True)
    assert [e.ref.session_id for e in result.purged] == [SUBAGENT]
    assert any(fork.session_id in note and named[:12] in note for note in result.notes), result.notes
    assert service.archive_bytes(fork, named)[1] == original   # still there after the purge


def test_a_purge_shares_the_original_with_a_fork_written_before_forks_held_it(forks):
    service, project = forks
    ref, fork, original, named = _capped_fork(service, project)
    archive = service.sources["claude"].archive
    index = archive.index_path(fork)   # as a fork written before issue 24: only its own bytes
    index.write_bytes(b"".join(line + b"\n" for line in index.read_bytes().splitlines() if named.encode() not in line))
    (archive.directory(fork) / f"{named}.json").unlink(missing_ok=True)
    with pytest.raises(Exception, match="No archive entry"):
        service.archive_bytes(fork, named)
    service.remove(ref)
    result = service.purge(confirmed=True)
    assert any(fork.session_id in note and named[:12] in note for note in result.notes), result.notes
    assert service.archive_bytes(fork, named)[1] == original


def test_a_fork_that_fails_takes_back_the_archive_entries_it_wrote(forks, monkeypatch):
    service, project = forks
    ref = service.resolve(SUBAGENT)
    archive = service.sources["claude"].archive
    before = archive.index_path(ref).read_bytes() if archive.index_path(ref).exists() else None
    from reprise.core.sources import fork_files

    def refused(dir_fd, name, data):
        raise PermissionError(13, "Permission denied", f".{name}.tmp-1-abcd")

    monkeypatch.setattr(fork_files, "write_new", refused)
    with pytest.raises(PermissionError) as raised:
        service.trim(ref, TrimOptions(cap_replies=3, spare=0), fork=True)
    assert raised.value.filename.startswith(str(project)) and ".tmp-" not in raised.value.filename   # the real path
    fork_ids = {p.name for p in archive.directory(ref).parent.iterdir()} - {SUBAGENT}
    assert fork_ids == set()   # no archive of a fork that does not exist
    after = archive.index_path(ref).read_bytes() if archive.index_path(ref).exists() else None
    assert after == before
