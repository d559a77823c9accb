"""The command line's streamed outputs (`show --json`, the summary of `show`, its one-line
fields) print exactly what the one-piece versions printed."""

from __future__ import annotations

import io
import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from reprise.tui.cli import output
from reprise.tui.json_writer import write_json
from reprise.tui.text import one_line, safe_text, short_line


def test_emit_prints_the_one_piece_json_document(capsys):
    long_text = "line \"one\"\n\té → 😀 \x1b[31m\ud800" * 200_000  # written in slices
    data = {"summary": long_text, "history": [{"turn_id": f"turn-{n}", "files": ["a", "b"] * 50}
                                              for n in range(3000)], "usage": {"cost": 0.25}, "empty": []}
    output.emit(data)
    assert capsys.readouterr().out == json.dumps(data, indent=2, allow_nan=False) + "\n"


def test_emit_still_writes_a_non_finite_number_as_null(capsys):
    data = {"usage": {"cost": float("inf"), "other": [1.5, float("nan")]}, "text": "x"}
    output.emit(data)
    assert capsys.readouterr().out == json.dumps({"usage": {"cost": None, "other": [1.5, None]}, "text": "x"},
                                                 indent=2) + "\n"


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab \n\t\x00\x1b\x85\u200f\ud800é😀"), max_size=400),
       st.integers(min_value=1, max_value=40))
def test_the_summary_printed_in_slices_is_the_safe_text(text, chunk):
    import io
    import sys

    saved, sys.stdout = sys.stdout, io.StringIO()
    try:
        output.print_safe(text, chunk=chunk)
        printed = sys.stdout.getvalue()
    finally:
        sys.stdout = saved
    assert printed == safe_text(text) + "\n"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab \n\t\x0b\x00\x1b\x85é😀…"), max_size=3000),
       st.integers(min_value=1, max_value=120))
def test_a_short_line_of_a_long_text_is_its_one_line(text, width):
    assert short_line(text, width) == one_line(text, width)


def test_a_short_line_of_a_huge_text_is_its_one_line():
    text = "  word\x1b  " * 3_000_000
    assert short_line(text, 100) == one_line(text, 100)
    assert short_line("x" * 5000 + " end", 100) == one_line("x" * 5000 + " end", 100)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.tuples(children, children)
    | st.dictionaries(st.text(max_size=8) | st.integers() | st.booleans() | st.none(), children, max_size=4),
    max_leaves=40)


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


@settings(max_examples=300, deadline=None)
@given(value=_JSON)
def test_the_json_writer_writes_what_json_dumps_writes_for_any_document(value):
    written = io.StringIO()
    write_json(value, written.write)
    assert written.getvalue() == json.dumps(_finite(value), indent=2) + "\n"


def test_the_json_writer_writes_long_and_odd_values_nested_in_lists_and_tables_as_json_dumps_does():
    import enum

    class Kind(enum.IntEnum):
        ONE = 1

    class Name(enum.StrEnum):
        A = "a"

    border = "é" * 5461 + "😀"   # about as long as a string may be and still be written with its neighbours
    value = {"rows": [{"id": n, "text": "x" * (5000 + n * 500), "kind": Kind.ONE, "name": Name.A,
                       "near": border, "usage": {"cost": 0.5, "odd": 2.5e300, "tokens": 1 << 70},
                       "nested": [[], {}, [True, None, "😀" * 70_000]]} for n in range(4)],
             1: "one", None: [False], 2.5: {"deep": [[["\x00\ud800"]]]}}
    written = io.StringIO()
    write_json(value, written.write)
    assert written.getvalue() == json.dumps(value, indent=2) + "\n"
