"""What a search hit shows of the text that matched: the matched words found again in the turn's
text, split and folded as the index's tokenizer does (FTS5 `unicode61`, diacritics removed, so
"Cafe" finds "café" and "cafe" never finds "cafeteria"), and the stretch of the text a given
width holds, centred on them, with an ellipsis on each side where text is left out.

Built from the text in Python, never by the index's own snippet function: an index that keeps no
text of its own would change nothing here, and each front end asks for the width it has.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

Span = tuple[int, int]   # [start, end) of a matched word in an excerpt's text

ELLIPSIS = "…"
KEPT_CHARS = 1_000        # of a hit's text kept on each side of its matches: wider than any terminal
SNAP_CHARS = 20           # a cut moves this far at most to fall between words
_CLUSTER_SPANS = 50       # matches weighed for one window, and windows weighed: a text full of the word
_CLUSTER_STARTS = 500     # ...costs no more than this


def _diacritic_class() -> str:
    """The combining marks FTS5's `unicode61` keeps inside a token and folds away
    (`sqlite3Fts5UnicodeIsdiacritic`: U+0300 to U+0331, by its two masks)."""
    masks = (0x08029FDF, 0x000361F8)
    marks = [chr(768 + bit + 32 * part) for part, mask in enumerate(masks) for bit in range(32) if mask >> bit & 1]
    return "".join(marks)


_DIACRITICS = _diacritic_class()
PRIVATE_USE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
# A token: letters and numbers (Python's \w without "_": categories L* and N*) or private-use
# characters (Co), and the diacritics after its first character.
_TOKEN = re.compile(f"(?:[^\\W_]|[{PRIVATE_USE}])(?:[^\\W_]|[{PRIVATE_USE}{_DIACRITICS}])*")


def fold_char(ch: str) -> str:
    """One character as the tokenizer folds it: lower case (the simple, one-character folding,
    for the Basic Multilingual Plane only), a Latin letter's diacritics removed, a diacritic dropped."""
    if ch in _DIACRITICS:
        return ""
    if ord(ch) > 0xFFFF:
        return ch
    folded = ch.casefold()
    if len(folded) != 1:
        folded = ch.lower()
    decomposed = unicodedata.normalize("NFD", folded)
    if decomposed[0].isascii() and decomposed[0].isalpha() and all(mark in _DIACRITICS for mark in decomposed[1:]):
        return decomposed[0]
    return folded if len(folded) == 1 else ch


def fold(token: str) -> str:
    """A token as the index stores it."""
    return token.lower() if token.isascii() else "".join(fold_char(ch) for ch in token)


def tokens(text: str) -> list[tuple[int, int, str]]:
    """The text's tokens as the index splits them: (start, end, folded)."""
    return [(match.start(), match.end(), fold(match.group())) for match in _TOKEN.finditer(text)]


def flat(text: str) -> str:
    """The text on one line: every run of whitespace one space, none at either end."""
    return " ".join(text.split())


def word_spans(text: str, query: str) -> tuple[Span, ...]:
    """Where the query's words match the text as the index matches them: each word of the query
    (split at whitespace) is a phrase of its tokens, matched as whole tokens in a row."""
    phrases = [phrase for phrase in (tuple(token for _, _, token in tokens(word)) for word in query.split()) if phrase]
    folded = folded_in_place(text)
    if folded is None:
        return token_spans(text, phrases)
    return _merged(span for phrase in phrases for span in phrase_spans(phrase_pattern(phrase), folded))


_ASCII_UPPER: dict[int, str | int] = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}
_IS_TOKEN_CHAR = re.compile(f"[^\\W_]|[{PRIVATE_USE}]").match   # in a folded text (no diacritics left)
_BETWEEN_TOKENS = f"(?:_|[^\\w{PRIVATE_USE}])+"


@functools.lru_cache(maxsize=256)
def phrase_pattern(phrase: tuple[str, ...]) -> re.Pattern[str]:
    """A phrase of folded tokens in a folded text (`folded_in_place`): its tokens with only what is
    not a token's between them; `phrase_spans` keeps the matches that are whole tokens. (No look
    around in the pattern: it then starts with a literal, which the regex engine looks for twenty
    times as fast.)"""
    return re.compile(_BETWEEN_TOKENS.join(map(re.escape, phrase)))


def phrase_spans(pattern: re.Pattern[str], folded: str) -> Iterator[Span]:
    """The pattern's matches in the folded text that are whole tokens, leftmost first: a match inside
    a longer token is passed over, and each next one looked for one character on."""
    at = 0
    while (found := pattern.search(folded, at)) is not None:
        start, end = found.span()
        if (start and _IS_TOKEN_CHAR(folded, start - 1)) or _IS_TOKEN_CHAR(folded, end):
            at = start + 1
            continue
        yield start, end
        at = start + 1   # overlapping matches too ("a a a" holds "a-a" twice), as splitting into tokens finds them


def folded_in_place(text: str) -> str | None:
    """The text with each character folded as the tokenizer folds it, where that keeps every
    character one character of its kind (the same offsets, the same tokens): None when the text
    holds a diacritic (dropped inside a token, it moves the offsets after it) or a separator that
    folds to a letter (U+0345).

    Lower-cased by `str.lower` where it keeps the length and so folds each character as the
    tokenizer does but for those that differ after (an accented letter's accent), replaced
    where they stand; `str.translate` of the whole text took ten times as long. `str.lower` lowers
    a capital sigma by its context (`ς` at a word's end), which folds to `σ` as well, and lowers
    characters beyond the Basic Multilingual Plane, which `fold_char` keeps as they are: a text
    with one of those takes the slow way."""
    marks = set(_NON_ASCII.findall(text))
    table: dict[int, str | int] = {}
    for ch in marks:
        folded = _fold_one(ch)
        if folded is None:
            return None
        table[ord(ch)] = folded
    lowered = text.lower()
    if len(lowered) != len(text) or any(ord(ch) > 0xFFFF and ch.lower() != ch for ch in marks):
        return text.translate(_ASCII_UPPER | table)
    # What `str.lower` made of each character (a capital sigma: `σ` or, at a word's end, `ς`), where
    # its fold differs: the same fold as the character's own (a test checks every one).
    lowers = {ch.lower() for ch in marks} | ({"ς"} if "Σ" in marks else set())
    fixes = {ch: fold for ch in lowers if not ch.isascii() and (fold := _fold_one(ch) or ch) != ch}
    if not fixes:
        return lowered
    return re.sub(f"[{re.escape(''.join(fixes))}]", lambda match: fixes[match.group()], lowered)


_NON_ASCII = re.compile("[^\\x00-\\x7f]")


@functools.lru_cache(maxsize=4096)
def _fold_one(ch: str) -> str | None:
    """The character as the tokenizer folds it, when that is one character of the same kind (part of a
    token or not); None for a diacritic (dropped) and for U+0345, a separator that folds to a letter."""
    folded = fold_char(ch)
    if len(folded) != 1 or bool(_IS_TOKEN_CHAR(ch)) != bool(_IS_TOKEN_CHAR(folded)):
        return None
    return folded


def token_spans(text: str, phrases: list[tuple[str, ...]]) -> tuple[Span, ...]:
    """`word_spans` by splitting the whole text into its tokens (any text)."""
    found = tokens(text)
    starts: dict[str, list[int]] = {}
    for index, (_, _, token) in enumerate(found):
        starts.setdefault(token, []).append(index)
    spans: list[Span] = []
    for phrase in phrases:
        for index in starts.get(phrase[0], ()):
            if tuple(token for _, _, token in found[index:index + len(phrase)]) == phrase:
                spans.append((found[index][0], found[index + len(phrase) - 1][1]))
    return _merged(spans)


def substring_spans(text: str, query: str) -> tuple[Span, ...]:
    """Where each word of the query occurs in the text in any case (how titles are searched); none
    where lower-casing changes the text's length (the offsets would not hold)."""
    folded = text.lower()
    if len(folded) != len(text):
        return ()
    spans: list[Span] = []
    for word in query.lower().split():
        start = folded.find(word)
        while start >= 0:
            spans.append((start, start + len(word)))
            start = folded.find(word, start + len(word))
    return _merged(spans)


def _merged(spans: Iterable[Span]) -> tuple[Span, ...]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return tuple(merged)


def char_cells(ch: str) -> int:
    """The terminal cells one character takes: two for a wide one (CJK), none for a combining mark."""
    if " " <= ch < "\x7f":
        return 1
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


@dataclass(frozen=True, slots=True)
class Excerpt:
    """A stretch of a text on one line, where its matched words are, and whether text was left out
    before and after it."""

    text: str
    spans: tuple[Span, ...] = ()
    cut_before: bool = False
    cut_after: bool = False

    @classmethod
    def of(cls, text: str, query: str, *, by_words: bool = True) -> Excerpt:
        """A hit's text on one line with the query's words found in it: as the index matches them
        (`by_words`), else as substrings in any case (titles); only `KEPT_CHARS` on each side of
        the matches are kept."""
        line = flat(text)
        spans = word_spans(line, query) if by_words else substring_spans(line, query)
        return cls(line, spans).kept(KEPT_CHARS)

    def words(self) -> tuple[str, ...]:
        """The matched words as the text has them, each once, in order."""
        return tuple(dict.fromkeys(self.text[start:end] for start, end in self.spans))

    def _cluster(self, room: int) -> Span:
        """The stretch from the first to the last match of the window that holds the most different
        words (then the most matches) within `room` characters; the text's start when nothing matched."""
        spans = self.spans[:_CLUSTER_STARTS + _CLUSTER_SPANS]
        if not spans:
            return (0, 0)
        keys = [self.text[start:end].casefold() for start, end in spans]
        best, best_score = (0, 1), (0, 0)
        for first in range(min(len(spans), _CLUSTER_STARTS)):
            last = first + 1
            while (last < len(spans) and last - first < _CLUSTER_SPANS
                   and spans[last][1] - spans[first][0] <= room):
                last += 1
            score = (len(set(keys[first:last])), last - first)
            if score > best_score:
                best, best_score = (first, last), score
        return spans[best[0]][0], spans[best[1] - 1][1]

    def kept(self, chars: int) -> Excerpt:
        """At most `chars` characters on each side of the matches' cluster (cheap: no cells counted)."""
        start, end = self._cluster(2 * chars)
        low, high = max(start - chars, 0), min(end + chars, len(self.text))
        if low == 0 and high == len(self.text):
            return self
        return self._slice(low, high)

    def around(self, width: int, cells: Callable[[str], int] = char_cells) -> Excerpt:
        """The part of the text `width` terminal cells wide at most, ellipses included (`cells`
        measures a character as it will be shown), centred on the matches that fit together, cut
        between words where one is near. A match wider than the width keeps its start; below three
        cells nothing is shown."""
        if width < 3:   # not even one character between two ellipses
            return Excerpt("")
        text, size = self.text, len(self.text)
        start, end = self._cluster(max(width - 2, 1))

        def room(low: int, high: int) -> int:
            return width - (low > 0 or self.cut_before) - (high < size or self.cut_after)

        low = high = start
        used = 0
        while high < end:   # the matches first, as much of them as the width holds
            need = cells(text[high])
            if used + need > room(low, high + 1):
                break
            used, high = used + need, high + 1
        if high < end:
            return self._slice(low, high)
        grow_left, grow_right = low > 0, high < size
        while grow_left or grow_right:   # then the text on both sides, a character at a time
            if grow_right:
                need = cells(text[high])
                grow_right = used + need <= room(low, high + 1)
                if grow_right:
                    used, high = used + need, high + 1
                    grow_right = high < size
            if grow_left:
                need = cells(text[low - 1])
                grow_left = used + need <= room(low - 1, high)
                if grow_left:
                    used, low = used + need, low - 1
                    grow_left = low > 0
        return self._slice(*self._between_words(low, high, start, end))

    def _between_words(self, low: int, high: int, start: int, end: int) -> Span:
        """The window's ends moved (inwards, never into the matches) to the nearest space when they
        cut a word and one is near, then off the spaces."""
        text = self.text
        if 0 < low < start and text[low - 1] != " " and text[low] != " ":
            space = text.find(" ", low, min(start, low + SNAP_CHARS))
            if space >= 0:
                low = space + 1
        if end < high < len(text) and text[high - 1] != " " and text[high] != " ":
            space = text.rfind(" ", max(end, high - SNAP_CHARS), high)
            if space >= 0:
                high = space
        while low < start and text[low] == " ":
            low += 1
        while high > end and text[high - 1] == " ":
            high -= 1
        return low, high

    def _slice(self, low: int, high: int) -> Excerpt:
        spans = tuple((max(start, low) - low, min(end, high) - low) for start, end in self.spans
                      if start < high and end > low)
        return Excerpt(self.text[low:high], spans, self.cut_before or low > 0, self.cut_after or high < len(self.text))

    def pieces(self) -> list[tuple[str, bool]]:
        """The excerpt as it reads, ellipses included: (text, is a match) in order."""
        pieces: list[tuple[str, bool]] = [(ELLIPSIS, False)] if self.cut_before else []
        at = 0
        for start, end in self.spans:
            if start > at:
                pieces.append((self.text[at:start], False))
            pieces.append((self.text[start:end], True))
            at = end
        if at < len(self.text):
            pieces.append((self.text[at:], False))
        if self.cut_after:
            pieces.append((ELLIPSIS, False))
        return pieces

    def marked(self, before: str, after: str) -> str:
        """The excerpt as text, each match between `before` and `after`."""
        return "".join(f"{before}{piece}{after}" if hit else piece for piece, hit in self.pieces())

