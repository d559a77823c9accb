"""Whether a text matches a query, by the index's token rules (FTS5 `unicode61`, diacritics
removed: `search_snippet.tokens`).

A record matches when every word of the query (split at whitespace) is found in it as a phrase of
its tokens: whole tokens in a row, folded. The index only preselects records holding every token;
this rule confirms them, and confirms the records of the files the first search parses after
scanning their bytes, so the two paths give the same hits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .search_scan import folded
from .search_snippet import folded_in_place, phrase_pattern, phrase_spans, token_spans, tokens


@dataclass(frozen=True, slots=True)
class Query:
    """A query as the index's rules read it: each word's folded tokens (a phrase)."""

    text: str
    phrases: tuple[tuple[str, ...], ...]
    _patterns: tuple[re.Pattern[str], ...] = field(default=(), repr=False, compare=False)   # `phrase_pattern`s
    _term_bytes: tuple[bytes, ...] | None = field(default=None, repr=False, compare=False)   # an ASCII query's

    @classmethod
    def of(cls, text: str) -> Query:
        phrases = tuple(phrase for phrase in (tuple(token for _, _, token in tokens(word)) for word in text.split())
                        if phrase)
        patterns = tuple(map(phrase_pattern, phrases))
        if not all(token.isascii() for phrase in phrases for token in phrase):
            return cls(text, phrases, patterns)
        terms = dict.fromkeys(token for phrase in phrases for token in phrase)
        return cls(text, phrases, patterns, tuple(term.encode("ascii") for term in terms))

    def __bool__(self) -> bool:
        return bool(self.phrases)

    @property
    def terms(self) -> tuple[str, ...]:
        """Every token of the query, each once, in order."""
        return tuple(dict.fromkeys(token for phrase in self.phrases for token in phrase))

    def fts_match(self) -> str:
        """An FTS5 query for the records holding every token (any order, any place): the preselection."""
        return " AND ".join('"' + term.replace('"', '""') + '"' for term in self.terms)

    def matches(self, text: str) -> bool:
        """Whether every word of the query is found in the text as a phrase of whole tokens."""
        if not self.phrases:
            return False
        if self._term_bytes is not None and not text.isascii():
            # Its bytes folded as the byte scan folds a file's: a text without every token's bytes
            # cannot match (a millisecond a megabyte), and most texts of a search have none.
            found_bytes = folded(text.encode("utf-8", "replace").lower(), json=False)
            if not all(term in found_bytes for term in self._term_bytes):
                return False
        # Folded as a whole (a tenth of the time of splitting it into folded tokens), where that keeps
        # its tokens (`folded_in_place`); else split into them.
        folded_text = folded_in_place(text)
        if folded_text is not None:
            return all(next(phrase_spans(pattern, folded_text), None) is not None for pattern in self._patterns)
        return all(token_spans(text, [phrase]) for phrase in self.phrases)

    def needles(self) -> tuple[bytes, ...] | None:
        """The tokens as a file's lowered bytes hold them when they hold them literally; None when a
        token is not ASCII (its bytes in the file can differ in case: every file is then parsed)."""
        return self._term_bytes

