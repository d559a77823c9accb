"""agent_json: any JSON an agent wrote decodes into values every later step can encode; a value
without a lone surrogate comes back exactly as json gives it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reprise.core.sources import agent_json

TEXT = st.text(st.characters(categories=["Cs", "Lu", "Ll", "So", "Cc"]) | st.characters(), max_size=12)
VALUES = st.recursive(st.none() | st.booleans() | st.integers() | TEXT,
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                      max_leaves=20)


def encodable(value) -> bool:
    json.dumps(value, ensure_ascii=False).encode("utf-8")
    return True


@settings(max_examples=300, derandomize=True, database=None)
@given(VALUES)
def test_every_decoded_string_and_key_encodes_and_clean_values_come_back_unchanged(value):
    for text in (json.dumps(value), json.dumps(value).encode("ascii")):   # as an agent writes half an emoji: escaped
        decoded = agent_json.loads(text)
        assert encodable(decoded)
        if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in json.dumps(value, ensure_ascii=False)):
            assert decoded == json.loads(text)


def test_half_an_emoji_is_a_replacement_character_and_a_whole_one_is_kept():
    decoded = agent_json.loads(b'{"t":"a\\ud83d","k\\udc00":["\\ud83d\\ude00"]}')
    assert decoded == {"t": "a\ufffd", "k\ufffd": ["\U0001f600"]}


def test_a_value_nested_deeper_than_python_recurses_is_walked_without_recursion():
    depth = 950   # json decodes it; a recursive walk from inside a caller's stack would not
    text = "[" * depth + '"\\ud83d"' + "]" * depth
    value = agent_json.loads(text)
    for _ in range(depth):
        value = value[0]
    assert value == "\ufffd"


@pytest.mark.parametrize("text", ['"\\u0041"', '"plain"', '"\\\\ud83d"'])
def test_text_without_a_surrogate_is_not_walked(text):
    assert agent_json.loads(text) == json.loads(text)
