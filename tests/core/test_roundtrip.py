"""Round trips: every file Fractal writes decodes and re-encodes to the same bytes, through the
codec and through the store, for a fixed corpus and for generated sessions; the rendered
summary matches an independent reading of the format reference."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reprise.core.paths import SessionRef
from reprise.core.sources.fractal.codec import decode, encode, fractal_would_drop
from reprise.core.sources.fractal.models import SessionState
from reprise.core.sources.fractal.store import Store
from reprise.core.sources.fractal.summary import render_summary
from tests import factories

CORPUS = factories.corpus()
KEY = "home-dev-project--0123456789abcdef"


def reference_summary(data: dict) -> str:
    """The rendered summary as the format reference describes it, computed from raw JSON data."""
    turns = data["summary"]["turns"]
    if not turns:
        return "No prior Fractal session context."
    text = "## Session Summary"
    for number, turn in enumerate(turns, start=1):
        text += f"\n\nTurn {number} ({turn['turn_id']})\nUser: {turn['user']['message']}"
        agent = turn.get("agent")
        if agent is None:
            text += "\nAgent status: pending"
            continue
        text += f"\nAgent status: {agent['status']}"
        if agent.get("response"):
            text += f"\nAgent response: {agent['response']}"
        for name in ("files_read_count", "files_changed_count", "commands_run_count"):
            text += f"\n{name}: {agent.get(name, 0)}"
        if agent.get("error"):
            text += f"\nError: {agent['error']}"
    return text


# --- the corpus -------------------------------------------------------------------------------

def test_corpus_covers_sizes_statuses_pending_unicode_and_big_payloads():
    turns = {name: len(json.loads(data)["summary"]["turns"]) for name, (_, data) in CORPUS.items()}
    assert {0, 1, 25, 60} <= set(turns.values())
    statuses = {t["status"] for _, data in CORPUS.values() for t in json.loads(data)["history"]}
    assert statuses == {"pending", "succeeded", "failed", "max_iterations", "interrupted"}
    assert len(CORPUS["one_megabyte_response"][1]) > 1_000_000
    unicode = CORPUS["unicode"][1]
    assert b"\\ud83d\\ude80" in unicode and b"\\u4fee" in unicode and b"\\u0645" in unicode  # emoji, CJK, RTL
    assert all(max(data) < 128 for _, data in CORPUS.values())


@pytest.mark.parametrize("name", sorted(set(CORPUS) - factories.CORPUS_WITH_UNKNOWN_FIELDS))
def test_corpus_file_decodes_cleanly_and_reencodes_byte_identically(name):
    session_id, data = CORPUS[name]
    decoded = decode(data, path=f"{name}.json", expected_id=session_id)
    assert decoded.problem is None and decoded.warnings == [] and decoded.rewrite_safe
    assert encode(decoded.state) == data


@pytest.mark.parametrize("name", sorted(factories.CORPUS_WITH_UNKNOWN_FIELDS))
def test_corpus_file_with_unknown_fields_reencodes_json_equal_with_nothing_dropped(name):
    session_id, data = CORPUS[name]
    decoded = decode(data, path=f"{name}.json", expected_id=session_id)
    assert decoded.problem is None and decoded.warnings == [] and decoded.rewrite_safe
    assert json.loads(encode(decoded.state)) == json.loads(data)
    assert fractal_would_drop(decoded.state) == ["fields Fractal does not know"]


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_store_save_after_load_writes_the_bytes_it_read(name, isolated_paths):
    session_id, data = CORPUS[name]
    path = factories.write_session(isolated_paths, KEY, data)
    store = Store(isolated_paths)
    ref = SessionRef(KEY, session_id, "fractal")
    loaded = store.load(ref)
    assert loaded.data == data
    version = store.save(ref, loaded.state, expected=loaded.version)
    written = path.read_bytes()
    if name in factories.CORPUS_WITH_UNKNOWN_FIELDS:
        assert json.loads(written) == json.loads(data)
    else:
        assert written == data
    assert version.size == len(written)
    assert store.load(ref).state == loaded.state


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_rendered_summary_of_corpus_file_matches_the_format_reference(name):
    session_id, data = CORPUS[name]
    state = decode(data, path="x.json", expected_id=session_id).state
    assert render_summary(state.summary) == reference_summary(json.loads(data))


def test_reprise_keeps_history_beyond_fractals_twenty_turns():
    data = factories.session_bytes("a" * 32, turns=25, history_limit=None, seed=20)
    decoded = decode(data, path="x.json", expected_id="a" * 32)
    assert len(decoded.state.history) == 25 and decoded.rewrite_safe
    assert encode(decoded.state) == data


def test_rendered_summary_golden_text():
    data = {"schema_version": 1, "session_id": "s", "summary": {"turns": [
        {"turn_id": "turn-1", "user": {"message": "fix it"},
         "agent": {"status": "succeeded", "response": "done", "files_read_count": 2, "files_changed_count": 1,
                   "commands_run_count": 0, "error": None, "usage": None}},
        {"turn_id": "turn-2", "user": {"message": "again"},
         "agent": {"status": "interrupted", "response": "", "files_read_count": 0, "files_changed_count": 0,
                   "commands_run_count": 3, "error": "Turn interrupted by user.", "usage": None}},
        {"turn_id": "turn-3", "user": {"message": "  raw\ttext  "}, "agent": None},
    ]}, "history": []}
    expected = ("## Session Summary\n\nTurn 1 (turn-1)\nUser: fix it\nAgent status: succeeded\n"
                "Agent response: done\nfiles_read_count: 2\nfiles_changed_count: 1\ncommands_run_count: 0\n\n"
                "Turn 2 (turn-2)\nUser: again\nAgent status: interrupted\nfiles_read_count: 0\n"
                "files_changed_count: 0\ncommands_run_count: 3\nError: Turn interrupted by user.\n\n"
                "Turn 3 (turn-3)\nUser:   raw\ttext  \nAgent status: pending")
    assert render_summary(SessionState.model_validate(data).summary) == expected
    assert render_summary(SessionState(session_id="s").summary) == "No prior Fractal session context."


# --- generated sessions -----------------------------------------------------------------------

# Any code point, plus a heavy share of lone surrogates and control characters.
CHARS = st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr), st.integers(0, 0x1F).map(chr),
                  st.sampled_from("\x7f\u2028\u200f\ufeff\U0001f680"))
TEXT = st.text(alphabet=CHARS, max_size=16)
# Dict keys inside trace and unknown fields leave out lone surrogates: see
# test_codec.py::test_lone_surrogate_in_a_trace_key_round_trips_byte_identically (xfail).
KEY_TEXT = st.text(alphabet=st.one_of(st.characters(exclude_categories=("Cs",)), st.integers(0, 0x1F).map(chr)),
                   max_size=8)
COUNT = st.integers(min_value=0, max_value=2**64)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEY_TEXT, inner, max_size=4),
    max_leaves=12)
EXTRA = st.dictionaries(KEY_TEXT.map(lambda key: f"x_{key}"), JSON, max_size=1)


def with_extra(base: st.SearchStrategy) -> st.SearchStrategy:
    """A model's fields followed by zero or one field Fractal does not know."""
    return st.builds(lambda known, extra: {**known, **extra}, base, EXTRA)


USAGE = with_extra(st.fixed_dictionaries({
    "input_tokens": COUNT, "output_tokens": COUNT,
    "cost": st.floats(min_value=0, allow_nan=False, allow_infinity=False),
    "duration_ms": COUNT, "iterations": COUNT, "context_tokens": COUNT}))
AGENT = with_extra(st.fixed_dictionaries({
    "status": st.sampled_from(factories.AGENT_STATUSES), "response": TEXT,
    "files_read_count": COUNT, "files_changed_count": COUNT, "commands_run_count": COUNT,
    "error": st.none() | TEXT, "usage": st.none() | USAGE}))
SUMMARY_TURN = with_extra(st.fixed_dictionaries({
    "turn_id": TEXT, "user": with_extra(st.fixed_dictionaries({"message": TEXT})), "agent": st.none() | AGENT}))
HISTORY_TURN = with_extra(st.fixed_dictionaries({
    "turn_id": TEXT, "user_message": TEXT,
    "status": st.sampled_from(("pending",) + factories.AGENT_STATUSES),
    "files_read": st.lists(TEXT, max_size=3), "files_modified": st.lists(TEXT, max_size=3),
    "commands_run": st.lists(TEXT, max_size=3), "trace": JSON, "error": st.none() | TEXT,
    "created_at": TEXT, "updated_at": TEXT}))
SESSION = with_extra(st.fixed_dictionaries({
    "schema_version": st.just(1), "session_id": TEXT,
    "summary": with_extra(st.fixed_dictionaries({"turns": st.lists(SUMMARY_TURN, max_size=3)})),
    "history": st.lists(HISTORY_TURN, max_size=2)}))

BOUNDED = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@BOUNDED
@given(SESSION)
def test_generated_session_encode_decode_encode_gives_identical_bytes(data):
    state = SessionState.model_validate(data)
    first = encode(state)
    assert max(first) < 128
    decoded = decode(first, path="x.json", expected_id=json.loads(first)["session_id"])
    assert decoded.problem is None
    assert decoded.warnings == []
    assert encode(decoded.state) == first
    assert json.loads(first) == json.loads(json.dumps(data))


@BOUNDED
@given(SESSION)
def test_generated_session_summary_matches_the_format_reference(data):
    assert render_summary(SessionState.model_validate(data).summary) == reference_summary(data)
