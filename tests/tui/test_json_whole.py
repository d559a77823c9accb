"""`encoded_whole` (orjson, for `list --json` and `search --json`) gives json's bytes exactly, or
None where orjson's could differ; `emit(whole=True)` prints the same document either way."""

from __future__ import annotations

import json
import math
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from reprise.tui.cli import output
from reprise.tui.json_writer import encoded_whole

_TEXT = st.text(alphabet=st.sampled_from("ab \"\\/\n\t\x00\x1b\x7f\x85\u2028\u200fé€😀\ud800e-7,0."), max_size=30)
_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
            | st.floats(allow_nan=False, allow_infinity=False) | _TEXT)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=5)
                       | st.dictionaries(_TEXT, inner, max_size=5), max_leaves=40)


def _dumped(value: object) -> bytes:
    return (json.dumps(value, indent=2) + "\n").encode("ascii")


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_whole_is_json_s_bytes_or_none(value):
    encoded = encoded_whole(value)
    assert encoded is None or encoded == _dumped(value)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_every_finite_float_is_json_s_or_left_to_the_writer(bits):
    number = struct.unpack("<d", struct.pack("<Q", bits))[0]
    if not math.isfinite(number):
        return
    encoded = encoded_whole({"cost": number, "list": [number]})
    assert encoded is None or encoded == _dumped({"cost": number, "list": [number]})
    if number == 0.0 or 1e-4 <= abs(number):
        assert encoded is not None   # the fast path is taken for every float a listing has


def test_a_listing_like_document_takes_the_fast_path():
    rows = [{"session_id": f"0b9e-7c{n}", "title": "Café → naïve 😀 \u2028 del\x7f", "cost": 0.25 * n,
             "turns": n, "pending": n % 2 == 0, "branch": None, "usage": {"cost": 12.5}, "empty": [], "none": {}}
            for n in range(50)]
    document = {"sessions": rows, "shown": 50, "total": 50, "scope": "all workspaces", "sort": "updated"}
    assert encoded_whole(document) == _dumped(document)


def test_what_orjson_writes_otherwise_is_left_to_the_writer():
    assert encoded_whole({"cost": 5e-05}) is None       # orjson: 0.00005
    assert encoded_whole({"cost": 2.5e-07}) is None     # orjson: 2.5e-7
    assert encoded_whole({"text": "\ud83d"}) is None    # a lone surrogate
    assert encoded_whole({"turns": 2**64}) is None      # beyond 64 bits
    assert encoded_whole({1: "a"}) is None              # a key that is not a string


def test_emit_whole_prints_the_same_document_both_ways(capsys):
    for document in ({"cost": 5e-05, "title": "é"}, {"cost": 0.5, "title": "é😀", "n": [1, 2.5, None]},
                     {"cost": float("inf"), "x": "\ud800"}):
        output.emit(document, whole=True)
        finite = {key: (None if isinstance(value, float) and not math.isfinite(value) else value)
                  for key, value in document.items()}
        assert capsys.readouterr().out == json.dumps(finite, indent=2) + "\n"
