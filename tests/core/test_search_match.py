"""The one match rule both search paths confirm hits with, checked against SQLite's own FTS5 (a table
with full detail matching each word as a phrase), the index's preselection (contentless,
`detail=none`) never missing a match, and the byte scan never missing a file that holds one."""

from __future__ import annotations

import json
import sqlite3

from hypothesis import example, given, settings
from hypothesis import strategies as st

from reprise.core.search_index import TABLES, TOKENIZER
from reprise.core.search_match import Query
from reprise.core.search_scan import chunks_may_match, folded
from reprise.core.search_snippet import fold
from reprise.core.sources.codex.search_scan import byte_scan_rule

ALPHABET = st.sampled_from(list("abcxyzKABCXYZ019_-./:'\" \t\n\\") + list("éÉèüÜñçßøÅİıŉǅ") + ["e\u0301", "\u0308"]
                           + list("αβσςΣάΆ") + list("жЖщ") + list("日本語") + ["\ue000", "½", "Ⅻ", "\u212a", "ḁ"])
TEXTS = st.lists(ALPHABET, max_size=40).map("".join)


def _full_index(text: str) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE search USING fts5(text, tokenize='{TOKENIZER}')")
    db.execute("INSERT INTO search (text) VALUES (?)", (text,))
    db.execute(TABLES[0])   # the index as built: contentless, no positions
    db.execute("INSERT INTO search_text (rowid, text) VALUES (1, ?)", (text,))
    return db


@settings(max_examples=400, deadline=None)
@given(TEXTS, TEXTS)
@example("the cafeteria", "cafe")
@example("the café", "CAFE")
@example("foo_bar-baz", "bar-baz")
@example("x -- y", "--")
@example("a b c", "c-a")
@example("\u212aelvin", "kelvin")
def test_a_text_matches_exactly_when_fts5_matches_every_word_as_a_phrase(text: str, query: str) -> None:
    db = _full_index(text)
    parsed = Query.of(query)
    phrases = [word for word in query.split() if Query.of(word)]
    quoted = " ".join('"' + word.replace('"', '""') + '"' for word in phrases)
    expected = bool(phrases) and db.execute("SELECT count(*) FROM search WHERE search MATCH ?",
                                            (quoted,)).fetchone()[0] > 0
    assert parsed.matches(text) == expected
    if parsed:
        preselected = db.execute("SELECT count(*) FROM search_text WHERE search_text MATCH ?",
                                 (parsed.fts_match(),)).fetchone()[0] > 0
        assert preselected or not expected   # the preselection never loses a match


@settings(max_examples=400, deadline=None)
@given(TEXTS, TEXTS, st.booleans(), st.integers(min_value=1, max_value=30))
@example("Kübernetes", "kubernetes", False, 3)
@example("K\u00fcbernetes", "kubernetes", True, 7)
@example("ca\u0301fe", "cafe", False, 3)
def test_the_byte_scan_never_misses_a_file_whose_text_matches(text: str, query: str, ascii_json: bool,
                                                              cut: int) -> None:
    parsed = Query.of(query)
    needles = parsed.needles()
    if not parsed.matches(text) or needles is None:
        return
    line = json.dumps({"type": "user", "message": {"content": text}}, ensure_ascii=ascii_json).encode() + b"\n"
    data = b'{"type":"other"}\n' + line
    chunks = [data[start:start + cut] for start in range(0, len(data), cut)]   # seams anywhere
    assert chunks_may_match(chunks, needles)


def _folded_by_splitting(lowered: bytes) -> bytes:
    """The fold of `folded`'s non-ASCII bytes as first written: split at each lead byte, each piece's
    first byte replaced by what the pair folds to (the reference for the find-loop that replaced it)."""
    from reprise.core.search_scan import _LEADS, _tables

    pairs = _tables()[0]
    for lead in _LEADS:
        mark = bytes((lead,))
        pieces = lowered.split(mark)
        pieces[1:] = [pairs[lead][piece[0]] + piece[1:] if piece else mark for piece in pieces[1:]]
        lowered = b"".join(pieces)
    return lowered


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"E", b"\xc3", b"\xc3\xa9", b"\xc3\xc3", b"\xc4\x81", b"\xc8", b"\xcc\x81",
                                 b"\xcc", b"\xc5\x93", b"\xe2\x80\xa6", b"\xc3\x97", b"\xa9", b" "]), max_size=40))
def test_the_pairs_are_folded_as_splitting_at_each_lead_byte_folds_them(parts: list[bytes]) -> None:
    lowered = b"x\x80" + b"".join(parts)   # never ASCII: the pairs' loop always runs
    assert folded(lowered, json=False) == _folded_by_splitting(lowered)


def test_every_character_that_folds_to_ascii_is_folded_in_bytes_and_in_escapes() -> None:
    for point in range(0x80, 0x10000):
        if 0xD800 <= point < 0xE000:
            continue
        char = chr(point)
        expected = fold(char)
        if expected == char or not expected.isascii():
            continue
        assert folded(char.encode().lower()) == expected.encode(), hex(point)
        assert folded(f"\\u{point:04x}".encode()) == expected.encode(), hex(point)


def test_a_file_without_the_words_is_no_candidate() -> None:
    needles = Query.of("kubernetes cluster").needles()
    assert needles is not None
    assert not chunks_may_match([b'{"text":"a kubernetes note, no other word \\u00e9"}\n'], needles)
    assert chunks_may_match([b'{"text":"Kubernetes CLUSTER"}\n'], needles)
    # A Codex rollout's injected instructions are no search record: their words make no candidate.
    codex = (b'{"timestamp":"t","type":"session_meta","payload":{"instructions":"kubernetes cluster"}}\n'
             b'{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"developer",'
             b'"content":"kubernetes cluster"}}\n{"timestamp":"t","type":"event_msg","payload":{"text":"hello"}}\n')
    assert not chunks_may_match([codex], needles, byte_scan_rule)
    assert chunks_may_match([codex], needles)   # read as every byte without Codex's rule
    assert chunks_may_match([codex.replace(b'"payload":{"instructions"', b'"payload":{"forked_from_id":"x",'
                                                                           b'"instructions"')], needles, byte_scan_rule)
    # A head Codex does not write: every byte read, and a candidate when its first chunk names a parent.
    odd = b'{"type":"session_meta","payload":{"forked_from_id":"x"}}\n{"text":"hello"}\n'
    assert chunks_may_match([odd], needles, byte_scan_rule)
    assert not chunks_may_match([odd], needles)
