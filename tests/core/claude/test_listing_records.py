"""The listing's decode of Claude Code lines (only the fields the listing reads) gives every listing
field a whole decode gives, on the real client's files, the samples and any hostile record."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reprise.core.sources.claude.chain import KIND
from reprise.core.sources.claude.fields import ListingFold
from reprise.core.sources.claude.listing_records import as_record, listing_record
from reprise.core.sources.claude.records import parse_lines
from reprise.core.sources.claude.samples import write_samples
from reprise.core.sources.samples import SampleEnv

from .builder import ClaudeFile, rewound

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REAL = sorted((FIXTURES / "claude-store").rglob("*.jsonl")) + sorted((FIXTURES / "claude-meter").rglob("*.jsonl"))


def folds(data: bytes) -> tuple[ListingFold, ListingFold]:
    """The listing fold over the listing's decode of `data`, and over a whole decode of every line."""
    listing, whole = ListingFold(), ListingFold()
    read = parse_lines(data, 0, skim_results=True)
    listing.feed(read.records, read.warnings)
    full = parse_lines(data, 0, skim=False)
    whole.feed(full.records, full.warnings)
    return listing, whole


def assert_same_fields(data: bytes) -> None:
    listing, whole = folds(data)
    assert listing.result() == whole.result()
    assert listing.chain == whole.chain and listing.usage == whole.usage


def test_the_real_files_fold_to_the_same_fields():
    assert len(REAL) >= 10
    for path in REAL:
        data = path.read_bytes()
        assert_same_fields(data)
        # and with every tool result and reply made large, the way real outputs are
        marker = b'"type":"tool_result","content":"'
        assert_same_fields(data.replace(marker, marker + b"x" * 50_000)
                           .replace(b'"type":"text","text":"', b'"type":"text","text":"' + b"y" * 50_000))


def test_the_real_files_lines_are_decoded_by_the_listing_not_whole():
    lines = [line for path in REAL for line in path.read_bytes().splitlines()
             if b'"role":"assistant"' in line or b'"tool_result"' in line]
    assert len(lines) > 20
    assert all(listing_record(line) is not None for line in lines)


def test_the_samples_fold_to_the_same_fields(tmp_path):
    write_samples(SampleEnv(tmp_path, tmp_path / "projects", datetime(2026, 6, 1, tzinfo=UTC)))
    files = sorted((tmp_path / "claude").rglob("*.jsonl"))
    assert files
    for path in files:
        assert_same_fields(path.read_bytes())


def test_a_rewound_compacted_interrupted_session_folds_to_the_same_fields():
    session = ClaudeFile()
    session.turn("first", "r1")
    session.command("review", "reviewed")
    session.turn("second", "r2")
    session.compact(post=123)
    session.turn("third", "r3")
    session.prompt("fourth")
    session.interrupt()
    session.api_error()
    session.custom_title("named")
    session.cost_state(1.5)
    assert_same_fields(session.data())
    assert_same_fields(rewound().data())


def test_a_large_tool_result_that_carries_an_interruption_is_an_interruption():
    from reprise.core.sources.claude.messages import INTERRUPT, kind_of

    record = {"parentUuid": "p", "isSidechain": False, "type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": "toolu_1", "type": "tool_result", "content": "y" * 100_000},
        {"type": "text", "text": "[Request interrupted by user for tool use]"}]}, "uuid": "u", "timestamp": "t"}
    read = listing_record(_line(record))
    assert read is not None and kind_of(as_record(read)) == INTERRUPT
    fold = ListingFold()
    fold.feed([read])
    assert [row[KIND] for row in fold.chain.rows] == [INTERRUPT]
    assert_same_fields(_line(record) + b"\n")


def test_what_msgspec_does_not_take_is_decoded_whole_as_before():
    for line in (b'{"type":"user","x":NaN}', b'{"type":"assistant","timestamp":1e400}',
                 b'{"type":"user","t":"\\ud83d"}', b'{"type":"user","message":"text"}',
                 b'{"type":"user","message":{"content":[1]}}', b'{"type":1}', b"[1]", b'{"type":"user"} x',
                 b'{"a":' * 2000 + b"1" + b"}" * 2000):
        assert listing_record(line) is None
        read = parse_lines(line + b"\n", 0, skim_results=True)
        whole = parse_lines(line + b"\n", 0, skim=False)
        assert read.records == whole.records and read.warnings == whole.warnings


_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
                    st.sampled_from(["u1", "u2", "u3", "user", "assistant", "system", "compact_boundary",
                                     "[Request interrupted by user]", "<command-name>/c</command-name>",
                                     "<synthetic>", "sdk-cli", "2026-01-01T00:00:00Z"]))
_VALUE = st.recursive(_SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                      max_leaves=6)
_BLOCK = st.one_of(_VALUE, st.fixed_dictionaries({"type": st.sampled_from(["text", "tool_result", "image"])},
                                                 optional={"text": _VALUE, "content": _VALUE}))
_USAGE = st.one_of(_VALUE, st.dictionaries(st.sampled_from(["input_tokens", "output_tokens", "cache_read_input_tokens",
                                                            "cache_creation_input_tokens", "service_tier"]),
                                           _SCALAR, max_size=5))
_MESSAGE = st.one_of(_VALUE, st.fixed_dictionaries({}, optional={
    "id": st.one_of(_SCALAR, st.sampled_from(["m1", "m2"])), "model": _SCALAR, "role": _SCALAR, "usage": _USAGE,
    "content": st.one_of(_VALUE, st.lists(_BLOCK, max_size=3))}))
_KEYS = ("uuid", "parentUuid", "logicalParentUuid", "isSidechain", "isMeta", "isCompactSummary", "isApiErrorMessage",
         "error", "subtype", "sessionId", "cwd", "entrypoint", "timestamp", "gitBranch", "version", "customTitle",
         "aiTitle", "summary", "totalCostUSD", "leafUuid", "other")
_RECORD = st.fixed_dictionaries(
    {"type": st.one_of(st.sampled_from(["user", "assistant", "system", "custom-title", "ai-title", "summary",
                                        "cost-state", "last-prompt"]), _SCALAR)},
    optional={**{key: _VALUE for key in _KEYS}, "message": _MESSAGE,
              "compactMetadata": st.one_of(_VALUE, st.fixed_dictionaries({}, optional={"postTokens": _SCALAR}))})


def _line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_RECORD, min_size=1, max_size=8))
def test_any_records_fold_to_the_same_fields(records):
    assert_same_fields(b"".join(_line(record) + b"\n" for record in records))
