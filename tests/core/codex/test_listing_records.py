"""The listing's decode of Codex rollout lines (only the fields the listing fold reads) gives every
listing field a whole decode gives, on the real client's rollouts, the samples and any hostile record."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reprise.core.paths import OwnPaths, workspace_key
from reprise.core.sources.base import SessionFile
from reprise.core.sources.codex import listing as codex_listing
from reprise.core.sources.codex.fields import ListingFold, orjson_exact
from reprise.core.sources.codex.listing import CodexListing
from reprise.core.sources.codex.listing_records import listing_record
from reprise.core.sources.codex.records import parse_rollout, skimmed
from reprise.core.sources.codex.samples import write_samples
from reprise.core.sources.samples import SampleEnv

from .builder import CodexRollout

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = sorted((FIXTURES / "codex-store").rglob("rollout-*.jsonl")) + sorted(
    (FIXTURES / "codex-import").rglob("rollout-*.jsonl"))
READ = ("session_meta", "turn_context", "event_msg")


def folds(data: bytes) -> tuple[ListingFold, ListingFold]:
    """The listing fold over the listing's read of `data`, and over a whole decode (json) of every line;
    the two reads' warnings must be the same."""
    listing, whole = ListingFold(), ListingFold()
    read = codex_listing._parse(data, 0, 1)
    listing.feed(read.records)
    full = parse_rollout(data, 0)
    whole.feed(full.records)
    assert read.warnings == full.warnings and read.end == full.end
    return listing, whole


def assert_same_fields(data: bytes) -> None:
    listing, whole = folds(data)
    assert listing == whole   # every field of the fold's state, not only those the result shows
    assert listing.result() == whole.result()


def test_the_real_rollouts_fold_to_the_same_fields():
    assert len(REAL) >= 8
    for path in REAL:
        data = path.read_bytes()
        assert_same_fields(data)
        # and with every reply and instruction made large, the way long sessions are
        assert_same_fields(data.replace(b'"last_agent_message":"', b'"last_agent_message":"' + b"x" * 50_000)
                           .replace(b'"text":"', b'"text":"' + b"y" * 50_000))


def test_every_line_the_stubs_leave_is_decoded_by_the_listing_not_whole():
    lines = [line for path in REAL for line in path.read_bytes().splitlines() if skimmed(line, 0, len(line)) is None]
    assert sum(any(b'"type":"%s"' % kind.encode() in line[:80] for kind in READ) for line in lines) > 50
    assert all(listing_record(line) is not None for line in lines)
    records = [record for path in REAL for record in codex_listing._parse(path.read_bytes(), 0, 1).records]
    assert sum(type(record) is not dict for record in records) == len(lines)


def test_the_samples_fold_to_the_same_fields(tmp_path):
    write_samples(SampleEnv(tmp_path, tmp_path / "projects", datetime(2026, 6, 1, tzinfo=UTC)))
    files = sorted((tmp_path / "codex").rglob("rollout-*.jsonl"))
    assert files
    for path in files:
        assert_same_fields(path.read_bytes())


def test_a_turned_compacted_failed_interrupted_rollout_folds_to_the_same_fields():
    rollout = CodexRollout(cwd="/work/alpha", branch="feature/x", model="gpt-5.1-codex", source={"subagent": "x"})
    rollout.turn("first", "r1", tokens=(2**70, 3))
    rollout.compacted("summary")
    rollout.tokens(0, 0)
    rollout.turn("second", "r2")
    rollout.task_started()
    rollout.prompt("third")
    rollout.error("boom")
    rollout.task_complete("late")
    rollout.task_started()
    rollout.prompt("fourth")
    rollout.aborted()
    assert_same_fields(rollout.data())


def test_a_session_meta_without_its_own_timestamp_starts_at_its_record():
    stamp = b'{"timestamp":"2026-01-02T03:04:05Z","type":"session_meta","payload":'
    for payload, started in ((b'{"id":"s","cwd":"/w"}', "2026-01-02T03:04:05Z"),
                             (b'{"id":"s","cwd":"/w","timestamp":null}', None),
                             (b'{"id":"s","cwd":"/w","timestamp":"T"}', "T"), (b"null", "2026-01-02T03:04:05Z")):
        listing, whole = folds(stamp + payload + b"}\n")
        assert listing == whole and listing.started_at == started


def test_the_listing_reads_the_head_of_a_rollout_as_decoded_for_it(tmp_path):
    rollout = CodexRollout(cwd="/work/head")
    rollout.turn("one", "ok")
    path = rollout.write(tmp_path)
    listing = CodexListing([tmp_path], OwnPaths(tmp_path / "data", "codex"))
    info = path.stat()
    file = SessionFile(None, rollout.session_id, str(path), info.st_size, info.st_mtime_ns, None, str(path.parent))
    record, whole = listing.head_record(file, codex_listing._is_meta)
    assert whole and type(record) is not dict   # the listing's Line, as the fold is fed it
    key = listing._head_key(file)
    assert key == workspace_key(Path("/work/head")) == listing.read_listing(file, time.time_ns()).workspace_key


def test_what_msgspec_does_not_take_is_decoded_whole_as_before():
    head = b'{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":'
    for line in (head + b'{"type":"token_count","info":{"model_context_window":NaN}}}',
                 head + b'{"type":"task_started","model_context_window":1e400}}',
                 head + b'{"type":"user_message","message":"\\ud83d half"}}',
                 head + b'"a string"}', head + b"[1]}", b'{"timestamp":"t","type":["event_msg"]}', b'{"type":1}',
                 b"[1]", b'{"type":"event_msg"} x', head + b'{"type":"error"}',
                 head + b'{"type":"token_count","info":' + b'{"a":' * 2000 + b"1" + b"}" * 2002):
        line = line.replace(b'{"type":"error"}', b'{"type":"error"')   # cut short: not JSON either way
        assert listing_record(line) is None
        read = codex_listing._parse(line + b"\n", 0, 1)
        whole = parse_rollout(line + b"\n", 0)
        assert read.records == whole.records and read.warnings == whole.warnings
        assert_same_fields(line + b"\n")


def test_the_first_session_meta_names_the_session_and_the_newest_model_is_the_model():
    lines = [b'{"timestamp":"1","type":"session_meta","payload":{"id":"a","cwd":"/a","git":{"branch":"x"}}}',
             b'{"timestamp":"2","type":"turn_context","payload":{"model":"m1"}}',
             b'{"timestamp":"3","type":"session_meta","payload":{"id":"b","cwd":"/b","git":{"branch":"y"}}}',
             b'{"timestamp":"4","type":"turn_context","payload":{"model":"m2","cwd":"/c"}}',
             b'{"timestamp":"5","type":"turn_context","payload":{"model":7}}']
    listing, whole = folds(b"\n".join(lines) + b"\n")
    assert listing == whole
    assert (listing.session_id, listing.cwd, listing.branch, listing.model) == ("a", "/a", "x", "m2")


def test_duplicate_keys_read_as_json_reads_them():
    line = (b'{"timestamp":"a","timestamp":"b","type":"event_msg","payload":{"type":"token_count","info":null},'
            b'"payload":{"type":"task_started","model_context_window":5,"model_context_window":7}}\n')
    listing, whole = folds(line)
    assert listing == whole and (listing.last_activity, listing.context_window, listing.turns) == ("b", 7, 1)


def test_escaped_names_read_as_json_reads_them():
    lines = [b'{"timestamp":"1","type":"session_meta","payload":{"\\u0069d":"s","cwd":"/w","timestamp":"0",'
             b'"timestamp":null,"git":{"br\\u0061nch":"b"}}}',
             b'{"timestamp":"2","\\u0074ype":"event_msg","payload":{"type":"task_started","model_\\u0063ontext_window":5}}',
             b'{"timestamp":"3","type":"event_msg","payload":{"type":"user_\\u006dessage","message":"hi\\u00e9"}}']
    listing, whole = folds(b"\n".join(lines) + b"\n")
    assert all(listing_record(line) is not None for line in lines)
    assert listing == whole
    assert (listing.session_id, listing.started_at, listing.branch, listing.context_window, listing.last_message) == (
        "s", None, "b", 5, "hi\u00e9")


_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
                    st.sampled_from(["cli", "exec", "UserMessage", "AgentMessage", "input_text", "text", "Text",
                                     "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "main", "gpt-a", "gpt-b"]))
_VALUE = st.recursive(_SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                      max_leaves=6)
_PART = st.one_of(_VALUE, st.fixed_dictionaries({"type": st.one_of(_SCALAR, st.sampled_from(["input_text", "text"]))},
                                                optional={"text": _VALUE}))
_ITEM = st.one_of(_VALUE, st.fixed_dictionaries(
    {"type": st.one_of(_SCALAR, st.sampled_from(["UserMessage", "AgentMessage"]))},
    optional={"content": st.one_of(_VALUE, st.lists(_PART, max_size=3)), "id": _SCALAR}))
_USAGE = st.one_of(_VALUE, st.dictionaries(st.sampled_from(["input_tokens", "cached_input_tokens", "output_tokens",
                                                            "total_tokens", "reasoning_output_tokens"]),
                                           st.one_of(_SCALAR, st.integers(0, 10**6)), max_size=5))
_INFO = st.one_of(_VALUE, st.fixed_dictionaries({}, optional={
    "last_token_usage": _USAGE, "total_token_usage": _USAGE, "model_context_window": _SCALAR, "other": _VALUE}))
_INNER = st.one_of(_VALUE, st.sampled_from(["task_started", "user_message", "item_completed", "task_complete",
                                             "turn_aborted", "aborted", "error", "token_count", "agent_message",
                                             "message", "reasoning"]))
_PAYLOAD = st.one_of(_VALUE, st.fixed_dictionaries({"type": _INNER}, optional={
    "id": _SCALAR, "cwd": _SCALAR, "source": _VALUE, "forked_from_id": _SCALAR,
    "forked_from_ordinal_exclusive": _SCALAR, "timestamp": _SCALAR,
    "git": st.one_of(_VALUE, st.fixed_dictionaries({}, optional={"branch": _SCALAR, "commit_hash": _SCALAR})),
    "model": _SCALAR, "model_context_window": _SCALAR, "message": _SCALAR, "item": _ITEM, "error": _VALUE,
    "info": _INFO, "other": _VALUE}), st.fixed_dictionaries({}, optional={"id": _SCALAR, "cwd": _SCALAR}))
_KIND = st.one_of(st.sampled_from(["session_meta", "turn_context", "event_msg", "response_item", "compacted",
                                   "world_state"]), st.sampled_from(["session_meta", "turn_context", "event_msg"]),
                  _SCALAR)
_ABSENT = object()


@st.composite
def _record(draw: st.DrawFn) -> dict[str, Any]:
    """A record with its keys in Codex's order (so the stubs take what they would), any of them absent."""
    record = {"timestamp": draw(st.one_of(_SCALAR, st.just(_ABSENT))), "type": draw(st.one_of(_KIND, st.just(_ABSENT))),
              "payload": draw(st.one_of(_PAYLOAD, st.just(_ABSENT)))}
    if draw(st.booleans()):
        record["other"] = draw(_VALUE)
    return {key: value for key, value in record.items() if value is not _ABSENT}


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_record(), min_size=1, max_size=8))
def test_any_records_fold_to_the_same_fields(records):
    assert_same_fields(b"".join(_line(record) + b"\n" for record in records))


def test_the_whole_decode_of_the_listing_stays_exact_for_orjson():
    # a line msgspec refuses is decoded whole by orjson where `orjson_exact` says it gives json's numbers
    line = (b'{"timestamp":"t","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":'
            b'{"input_tokens":' + b"9" * 25 + b',"output_tokens":1},"model_context_window":NaN}}}\n')
    assert listing_record(line[:-1]) is None and not orjson_exact(json.loads(line))
    assert_same_fields(line)
