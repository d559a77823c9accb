"""The byte scan's fast path (`folded_holds`: the chunk searched as it is, ignoring ASCII case, and
only the bytes around what folds lowered and folded) against the scan as first written: every
chunk lowered and folded whole, the lines of no record cut out first. Both say the same for any
bytes, any seams, any needles and any line rule."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hypothesis import example, given, settings
from hypothesis import strategies as st

from reprise.core.search_scan import _Lines, chunks_may_match, folded, folded_holds
from reprise.core.sources.byte_scan import ByteScanRule
from reprise.core.sources.codex.search_scan import byte_scan_rule

# Pieces of text that fold, or nearly do: accented letters (lead bytes C3-C8), a combining mark (CC),
# Latin Extended Additional (E1), the Kelvin and Angstrom signs, a dash that does not fold, lone lead
# and continuation bytes, escapes of every kind (folding, lowered, not folding, cut), newlines and
# the marks of Codex's line rule.
PIECES = st.sampled_from([
    b"a", b"b", b"e", b"k", b"E", b"K", b"A", b"B", b"x", b"1", b" ", b"_", b'"', b":", b"\n", b"\n", b"\\",
    "é".encode(), "É".encode(), "è".encode(), "æ".encode(), "ß".encode(), "ø".encode(), "ǅ".encode(),
    "ı".encode(), "×".encode(), "\u0301".encode(), "\u0345".encode(), "ḁ".encode(), "ẞ".encode(),
    "\u212a".encode(), "\u212b".encode(), "—".encode(), "日".encode(), "\U0001f600".encode(),
    b"\xc3", b"\xcc", b"\xe1", b"\xe1\xb8", b"\xe2\x84", b"\xa9", b"\xaa", b"\xab", b"\x80",
    b"\\u00e9", b"\\u00C9", b"\\U00e9", b"\\u0301", b"\\u0041", b"\\u0062", b"\\u001b", b"\\u212a", b"\\u1e01",
    b"\\u00", b"\\u",
    b'{"timestamp":"', b'"type":"session_meta"', b'"role":"user"', b'"role":"developer"',
    b'"forked_from_id":"',
])
TEXT = st.lists(PIECES, max_size=60).map(b"".join)
NEEDLE = st.text(alphabet="abekx1", min_size=1, max_size=5).map(str.encode)
NEEDLES = st.lists(NEEDLE, min_size=1, max_size=3).map(lambda found: tuple(dict.fromkeys(found)))
# A line rule with a short head, so that marks are found across it as well as within it.
SHORT_HEAD = ByteScanRule(skipped_line_heads=(b'"role":"user"', b"kk"), head=16,
                          candidate_if_in_first=b'"forked_from_id":"')
RULES: list[Callable[[bytes], ByteScanRule | None]] = [lambda _: None, byte_scan_rule, lambda _: SHORT_HEAD]


def _searched_lines(chunk: bytes, skipped: tuple[bytes, ...], head: int, *, whole: bool) -> bytes:
    """The chunk without the lines a rule leaves out, as the scan first cut them."""
    kept = []
    start = 0
    if not whole:
        start = chunk.find(b"\n") + 1 or len(chunk)
        kept.append(chunk[:start])
    size = len(chunk)
    while start < size:
        end = chunk.find(b"\n", start)
        end = size if end < 0 else end + 1
        line_head = chunk[start:min(end, start + head)]
        if not any(mark in line_head for mark in skipped):
            kept.append(chunk[start:end])
        start = end
    return b"".join(kept)


def _chunks_may_match_as_before(chunks: Iterable[bytes], needles: tuple[bytes, ...],
                                rule_of: Callable[[bytes], ByteScanRule | None]) -> bool:
    """`chunks_may_match` as first written: each chunk's kept lines lowered and folded whole."""
    missing = list(needles)
    edge = max(64, *(len(needle) * 6 + 8 for needle in needles))
    tail = b""
    first = True
    skipped: tuple[bytes, ...] = ()
    head = 0
    mark: bytes | None = None
    for chunk in chunks:
        if first:
            rule = rule_of(chunk)
            if rule is not None:
                if rule.always_candidate:
                    return True
                skipped, head, mark = rule.skipped_line_heads, rule.head, rule.candidate_if_in_first
        kept = _searched_lines(chunk, skipped, head, whole=first or tail.endswith(b"\n")) if skipped else chunk
        text = folded(kept.lower())
        seam = folded((tail + chunk[:edge]).lower()) if tail else b""
        missing = [needle for needle in missing if needle not in text and needle not in seam]
        if not missing or (first and mark is not None and mark in text):
            return True
        first = False
        tail = chunk[-edge:] if len(chunk) >= edge else (tail + chunk)[-edge:]
    return False


@settings(max_examples=3000, deadline=None)
@given(TEXT, NEEDLES, st.booleans(), st.booleans())
@example(b"xe\xcc\x81bk", (b"ebk",), False, True)               # a dropped mark between the letters
@example(b"\\u0041\\u0062", (b"ab",), False, True)               # escapes of ASCII letters, in an ASCII text
@example(b"u0041b", (b"u0041b",), False, True)                   # the lowered bytes hold it, the folded ones do not
@example(b"\\u0041b", (b"u0041b",), False, True)
@example(b"\xe1\xcc\x81\xb8\x80b", (b"ab",), False, True)       # a Latin Extended letter joined once a mark is dropped
@example(b'"role":"user"e\xcc\x81\n\xc3\xa9b\xe2\x80\x94', (b"eb",), True, False)
@example(b'"role":"user"\xc3\xa9\n\\u0041b', (b"ab",), True, True)   # the kept lines ASCII: their escapes fold
def test_the_fast_path_holds_what_the_lowered_and_folded_kept_lines_hold(chunk: bytes, sought: tuple[bytes, ...],
                                                                          with_lines: bool, whole: bool) -> None:
    lines = _Lines((b'"role":"user"', b"kk"), 16) if with_lines else None
    kept = _searched_lines(chunk, lines.skipped, lines.head, whole=whole) if lines is not None else chunk
    text = folded(kept.lower())
    assert folded_holds(chunk, sought, lines, whole=whole) == {needle for needle in sought if needle in text}


@settings(max_examples=1500, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=4), NEEDLES, st.sampled_from(range(len(RULES))),
       st.integers(min_value=1, max_value=40))
def test_the_scan_of_a_file_says_what_it_said_before(texts: list[bytes], needles: tuple[bytes, ...], rule: int,
                                                     cut: int) -> None:
    data = b"".join(texts)
    if rule == 1:
        data = b'{"timestamp":"t","type":"session_meta","payload":{}}\n' + data   # a rollout as Codex starts one
    chunks = [data[start:start + cut] for start in range(0, len(data), cut)] or [b""]
    assert chunks_may_match(chunks, needles, RULES[rule]) == _chunks_may_match_as_before(chunks, needles, RULES[rule])
