"""Search snippets: the matched words found again as the index's tokenizer finds them (checked
against SQLite's own FTS5), and the stretch of the text a width holds, centred on them."""

from __future__ import annotations

import sqlite3

from hypothesis import example, given, settings
from hypothesis import strategies as st

from reprise.core.search_index import TOKENIZER
from reprise.core.search_snippet import (
    ELLIPSIS,
    Excerpt,
    char_cells,
    fold_char,
    folded_in_place,
    substring_spans,
    token_spans,
    tokens,
    word_spans,
)

# Letters the agents' texts hold: ASCII, Latin with diacritics (precomposed and combining), Greek
# (final sigma, tonos), Cyrillic, CJK (two cells wide), punctuation, an underscore, digits, spaces.
ALPHABET = st.sampled_from(list("abcxyzABCXYZ019_-./:'\" \t\n") + list("éÉèüÜñçßøÅİıŉǅ") + ["e\u0301", "\u0308"]
                           + list("αβσςΣάΆ") + list("жЖщ") + list("日本語") + ["\ue000", "½", "Ⅻ"]
                           + ["\u0345", "Ａ", "ﬁ"])
TEXTS = st.lists(ALPHABET, max_size=40).map("".join)


def index_of(text: str) -> sqlite3.Connection:
    """An FTS5 table with the search index's tokenizer (and the text, for fts5vocab), holding the text."""
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE search USING fts5(text, tokenize='{TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE terms USING fts5vocab(search, 'instance')")
    db.execute("INSERT INTO search (text) VALUES (?)", (text,))
    return db


@settings(max_examples=300, deadline=None)
@given(TEXTS)
@example("Café naïve a\u0301b foo_bar ΣΑΣ σς İstanbul ǅ ß ﬁle")
def test_the_text_splits_and_folds_into_the_tokens_of_the_index(text):
    db = index_of(text)
    expected = [term for (term,) in db.execute("SELECT term FROM terms ORDER BY offset")]
    assert [token for _, _, token in tokens(text)] == expected


@settings(max_examples=300, deadline=None)
@given(TEXTS, TEXTS)
@example("the cafeteria", "cafe")
@example("the café", "CAFE")
@example("foo_bar-baz", "bar-baz")
@example("x -- y", "--")
def test_a_word_has_spans_exactly_when_the_index_matches_it(text, word):
    if not word.split():
        return
    db = index_of(text)
    quoted = " ".join('"' + part.replace('"', '""') + '"' for part in word.split())
    matched = db.execute("SELECT count(*) FROM search WHERE search MATCH ?", (quoted,)).fetchone()[0] > 0
    parts = [part for part in word.split() if tokens(part)]   # a part without a token is no condition
    assert bool(parts and all(word_spans(text, part) for part in parts)) == matched
    assert all(0 <= start < end <= len(text) for start, end in word_spans(text, word))


@settings(max_examples=500, deadline=None)
@given(TEXTS, TEXTS)
@example("Café CAFÉ cafe_x", "cafe")
@example("ΣΑΣ σς", "σας")
@example("aΣ", "aσ")
@example("a\u0345b x \u0345 y", "a")   # U+0345: a separator that folds to a letter (ι)
@example("x \u0345 y", "ι")
@example("a a a", "a-a")   # overlapping matches, as splitting into tokens finds them
@example("İstanbul ıx", "istanbul")
@example("日本語 日本", "日本")
@example("\U00010400x \U00010428x", "\U00010400x")   # astral: lowered by str.lower, not by fold_char
def test_the_folded_text_finds_the_spans_tokenizing_finds(text, word):
    """The fast path (the text folded in place, then a regular expression per phrase) gives the very
    spans of splitting the text into its tokens; a text with a diacritic (or U+0345) takes the latter."""
    phrases = [phrase for phrase in (tuple(token for _, _, token in tokens(part)) for part in word.split()) if phrase]
    if folded_in_place(text) is None:
        assert any(0x300 <= ord(ch) <= 0x331 or ch == "\u0345" for ch in text)
    assert word_spans(text, word) == token_spans(text, phrases)


def test_a_character_folded_in_place_stays_what_it_was_part_of_a_token_or_not():
    """Folding in place keeps the tokens where they were: a character whose fold is of another kind
    (U+0345, a separator folding to the letter ι) sends the text the slow way, as a diacritic does."""
    for code in range(0x80, 0x10000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        ch = chr(code)
        folded = folded_in_place(f"a{ch}b")
        if folded is not None:
            assert [token for _, _, token in tokens(folded)] == [token for _, _, token in tokens(f"a{ch}b")], hex(code)
    assert folded_in_place("a\u0345b") is None


def test_str_lower_folds_each_character_of_the_basic_plane_as_the_tokenizer_does():
    """What `folded_in_place` counts on: a character of the Basic Multilingual Plane and its lower
    case fold alike (then only what differs after is replaced), and so do a final sigma and sigma."""
    for code in range(0x80, 0x10000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        ch = chr(code)
        if len(ch.lower()) == 1:
            assert fold_char(ch.lower()) == fold_char(ch), hex(code)
    assert fold_char("ς") == fold_char("Σ") == "σ"


def cells(text: str) -> int:
    return sum(char_cells(ch) for ch in text)


WORDS = st.text(alphabet="abcdefghij日本", min_size=1, max_size=12)
FILLER = st.lists(st.sampled_from(["lorem", "ipsum", "dolor", "sit", "amet", "宽字", "x", "\n", "  "]), max_size=400)


@settings(max_examples=400, deadline=None)
@given(FILLER, FILLER, WORDS, st.integers(min_value=3, max_value=200))
def test_the_hit_is_inside_the_snippet_whenever_the_width_allows_it(before, after, word, width):
    text = " ".join(before) + " " + "zz" + word + " " + " ".join(after)
    query = "zz" + word
    snippet = Excerpt.of(text, query).around(width)
    shown = snippet.marked("", "")
    assert cells(shown) <= width
    needed = cells(query) + (2 if before or after else 0)
    if width >= needed:
        assert any(snippet.text[start:end] == query for start, end in snippet.spans)
        assert f"[{query}]" in snippet.marked("[", "]")
    assert shown.startswith(ELLIPSIS) == snippet.cut_before


def test_a_hit_deep_in_a_long_turn_is_centred_with_an_ellipsis_on_each_cut_side():
    text = ("Setting up the project. " * 60) + "Then the quixotic flux capacitor was recalibrated. " + "Done. " * 40
    snippet = Excerpt.of(text, "quixotic").around(80)
    shown = snippet.marked("[", "]")
    assert shown.startswith("…") and shown.endswith("…") and len(snippet.marked("", "")) <= 80
    hit = shown.index("[quixotic]")
    assert 20 < hit < 60   # near the middle, not at an end
    assert " ".join(snippet.text.split()) == snippet.text and "\n" not in shown


def test_a_short_text_is_whole_and_has_no_ellipsis():
    assert Excerpt.of("fix the\nlogin  bug", "LOGIN").around(80).marked("[", "]") == "fix the [login] bug"


def test_several_words_show_together_where_they_are_near_each_other():
    text = "deploy " + "filler " * 50 + "the deploy on friday went well " + "filler " * 50 + "friday"
    shown = Excerpt.of(text, "deploy friday").around(60).marked("[", "]")
    assert "[deploy] on [friday]" in shown


def test_cuts_fall_between_words_when_a_space_is_near():
    text = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november"
    shown = Excerpt.of(text, "golf").around(30).marked("", "")
    words = shown.strip(ELLIPSIS).split()
    assert all(word in text.split() for word in words) and "golf" in words


def test_a_match_wider_than_the_width_keeps_its_start():
    snippet = Excerpt.of("x " * 20 + "supercalifragilistic " + "y " * 20, "supercalifragilistic").around(10)
    assert snippet.marked("[", "]") == "…[supercal]…"


def test_titles_match_as_substrings_in_any_case():
    assert substring_spans("The Message board", "message BOA") == ((4, 11), (12, 15))
    assert substring_spans("İİ message", "message") == ()   # lower-casing changes the length: no offsets
    assert Excerpt.of("Deploy checklist", "deploy", by_words=False).words() == ("Deploy",)


def test_a_wide_character_counts_two_cells():
    snippet = Excerpt.of("日本語" * 30 + " target " + "日本語" * 30, "target").around(20)
    assert cells(snippet.marked("", "")) <= 20 and "target" in snippet.words()


ASCII_TEXTS = st.lists(st.sampled_from(list("abcABC019_-./ \n") + ["ab", "ba", "abc"]), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(ASCII_TEXTS, ASCII_TEXTS)
@example("a-b c", "A_B")
@example("abc abcabc", "abc")
def test_in_an_ascii_text_the_spans_are_where_the_index_finds_the_word(text, word):
    """The fast path (a regular expression over an ASCII text) finds what tokenizing finds."""
    if not word.split():
        return
    parts = [part for part in word.split() if tokens(part)]
    db = index_of(text)
    quoted = " ".join('"' + part.replace('"', '""') + '"' for part in word.split())
    matched = db.execute("SELECT count(*) FROM search WHERE search MATCH ?", (quoted,)).fetchone()[0] > 0
    assert bool(parts and all(word_spans(text, part) for part in parts)) == matched
    by_tokens = [(start, end) for start, end, _ in tokens(text)]
    for start, end in word_spans(text, word):   # whole tokens
        assert any(s == start for s, _ in by_tokens) and any(e == end for _, e in by_tokens)
