"""The first search's byte scan: a session file's raw bytes, read with the one safe reader within
its source's root, ASCII-lowered and searched for every token of the query, so that only the files
that can hold a match are parsed.

A correct superset first, speed second: the bytes are searched as the tokenizer would fold them,
every character it folds to an ASCII letter or drops written as it folds (UTF-8 sequences with
lead bytes C3-C8 and CC, Latin Extended Additional E1 B8-BB, the Kelvin and Angstrom signs, and the
JSON escapes of those and of ASCII letters and digits), so "Kübernetes" or "K\u00fcbernetes" holds
"kubernetes". A query token that is not ASCII makes every file one. What a store knows better (a
file always parsed, lines no search record comes from) comes from its source as a `ByteScanRule`
(`ListingSource.byte_scan_rule`), told from the file's first chunk.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import RepriseError
from .search_snippet import fold
from .session_files import ReadProblem, chunks_of, opened_regular_file
from .sources.base import ListingSource
from .sources.byte_scan import ByteScanRule

_LEADS = (*range(0xC3, 0xC9), 0xCC)   # the two-byte sequences of U+00C0-U+023F and U+0300-U+033F
_LONG = re.compile(rb"\xe1[\xb8-\xbb][\x80-\xbf]|\xe2\x84[\xaa\xab]")   # U+1E00-U+1EFF; Kelvin, Angstrom signs
_ESCAPE = re.compile(rb"\\u[0-9a-f]{4}")   # a JSON escape, lowered


def _folded_bytes(char: str) -> bytes | None:
    """What the tokenizer makes of a character, as bytes, when that is ASCII or nothing (a diacritic)."""
    folded = fold(char)
    return folded.encode("ascii") if folded.isascii() and folded != char else None


@functools.cache
def _tables() -> tuple[dict[int, list[bytes]], dict[bytes, bytes], dict[bytes, bytes]]:
    """For each lead byte, the bytes each second byte stands for once folded (the same two bytes
    when the character does not fold to ASCII); the folds of the longer sequences and of the JSON
    escapes (of those characters, and of ASCII letters and digits)."""
    leads: dict[int, list[bytes]] = {}
    for lead in _LEADS:
        row = leads[lead] = []
        for second in range(256):
            pair = bytes((lead, second))
            try:
                char = pair.decode("utf-8")
            except UnicodeDecodeError:
                row.append(pair)
                continue
            folded = _folded_bytes(char)
            row.append(pair if folded is None else folded)
    longer = {}
    for point in (*range(0x1E00, 0x1F00), 0x212A, 0x212B):
        folded = _folded_bytes(chr(point))
        if folded is not None:
            longer[chr(point).encode("utf-8")] = folded
    escapes = {}
    for point in (*range(0x30, 0x80), *range(0xC0, 0x340), *range(0x1E00, 0x1F00), 0x212A, 0x212B):
        char = chr(point)
        folded = (char.lower().encode("ascii") if char.isalnum() else None) if char.isascii() else _folded_bytes(char)
        if folded is not None:
            escapes[f"\\u{point:04x}".encode("ascii")] = folded
    return leads, longer, escapes




def folded(lowered: bytes, *, json: bool = True) -> bytes:
    """ASCII-lowered bytes with every character the tokenizer folds to ASCII (or drops) written as
    it folds: what an ASCII token of the query is found in. Each step runs only when a memchr finds
    its first byte. JSON escapes (of `json` bytes, not of a text's) are read in pure ASCII bytes only:
    a writer that escapes one non-ASCII character escapes them all (Python's `ensure_ascii`), and the
    search for them is the scan's costliest step (measured: 1.3 ms a MB, as much as the rest together)."""
    pairs, longer, escapes = _tables()
    if lowered.isascii():
        if json and b"\\u" in lowered:
            lowered = _ESCAPE.sub(lambda found: escapes.get(found.group(), found.group()), lowered)
        return lowered
    for lead in _LEADS:
        mark = bytes((lead,))
        at = lowered.find(mark)
        if at < 0:
            continue
        row = pairs[lead]
        pieces: list[bytes] = []   # the bytes between the pairs that fold, and their folds: one copy of the rest
        done, size = 0, len(lowered)
        while at >= 0:
            if at + 1 < size and (folds_to := row[lowered[at + 1]]) != lowered[at:at + 2]:
                pieces += (lowered[done:at], folds_to)
                done = at + 2
            at = lowered.find(mark, at + 1)
        if pieces:
            pieces.append(lowered[done:])
            lowered = b"".join(pieces)
    if (b"\xe1" in lowered or b"\xaa" in lowered or b"\xab" in lowered) and _LONG.search(lowered):
        lowered = _LONG.sub(lambda found: longer.get(found.group(), found.group()), lowered)
    return lowered


def _every_byte(first_chunk: bytes) -> ByteScanRule | None:
    return None


def chunks_may_match(chunks: Iterable[bytes], needles: tuple[bytes, ...],
                     rule_of: Callable[[bytes], ByteScanRule | None] = _every_byte) -> bool:
    """Whether a file of these chunks can hold a record with every needle (a folded ASCII token), read
    by the rule its source gives for its first chunk (`rule_of`; None: every byte).
    Each chunk is folded alone, and the bytes around each seam between two chunks once more
    together, so a needle (or a character, or an escape) across a seam is found too."""
    missing = list(needles)
    edge = max(64, *(len(needle) * 6 + 8 for needle in needles))
    tail = b""
    first = True
    lines: _Lines | None = None
    mark: bytes | None = None
    for chunk in chunks:
        if first:
            rule = rule_of(chunk)
            if rule is not None:
                if rule.always_candidate:
                    return True
                lines = _Lines(rule.skipped_line_heads, rule.head) if rule.skipped_line_heads else None
                mark = rule.candidate_if_in_first
        whole = first or tail.endswith(b"\n")
        sought = [*missing, mark] if first and mark is not None else missing
        held = folded_holds(chunk, sought, lines, whole=whole)
        if first and mark is not None and mark in held:
            return True
        seam = folded((tail + chunk[:edge]).lower()) if tail else b""
        missing = [needle for needle in missing if needle not in held and needle not in seam]
        if not missing:
            return True
        first = False
        tail = chunk[-edge:] if len(chunk) >= edge else (tail + chunk)[-edge:]
    return False


@dataclass(frozen=True, slots=True)
class _Lines:
    """The lines of a chunk no search record comes from: one of `skipped` in their first `head` bytes."""

    skipped: tuple[bytes, ...]
    head: int

    def kept(self, chunk: bytes, start: int, end: int, *, whole: bool) -> bool:
        """Whether the line from `start` (to `end`, its newline included) is searched: the first
        piece of a chunk that is not `whole` ends a line begun in the chunk before, and always is."""
        if start == 0 and not whole:
            return True
        line_head = chunk[start:min(end, start + self.head)]
        return not any(mark in line_head for mark in self.skipped)


def folded_holds(chunk: bytes, sought: Iterable[bytes], lines: _Lines | None = None, *,
                 whole: bool = True) -> set[bytes]:
    """Which of the `sought` (lowered ASCII, no newline) the chunk's searched lines hold once lowered
    and folded: `sought in folded(kept.lower())`, with `kept` the lines `lines` keeps (every line
    when None), without lowering, folding or copying the chunk. Each is searched for in the chunk's
    own bytes, ignoring ASCII case (most of the time goes there, a pass as fast as `bytes.find`);
    for those not found so, only the bytes around the characters whose fold can make a sought byte
    or drop a character ("sites") are lowered and folded, in windows cut where no fold reaches over
    (a fold changes non-ASCII bytes alone, or an escape's six). A fold never crosses a newline: the
    lines `lines` leaves out are passed over where a window or a find falls in one."""
    held: set[bytes] = set()
    rest: dict[bytes, bool] = {}   # each needle not found so: whether it is where an escape that folds meets it
    for needle in dict.fromkeys(sought):
        found = _found(chunk, needle, lines, whole=whole)
        if found:
            held.add(needle)
        else:
            rest[needle] = found is None
    if not rest:
        return held
    reach = max(map(len, rest))
    escaped = chunk.isascii()   # `folded` folds escapes in an ASCII text alone
    windows: list[tuple[int, int]] = []
    if not escaped:
        windows = _run_windows(chunk, _fold_sites(chunk, _letters(rest)), reach, lines, whole=whole)
        escaped = lines is not None and not windows and not _kept_non_ascii(chunk, lines, whole=whole)
    if escaped:
        windows = _escape_windows(chunk, _escape_sites(chunk), reach, lines, whole=whole)
    text = folded(b"\n".join(chunk[start:end] for start, end in windows).lower(), json=escaped) if windows else b""
    # Where an escape that folds meets it, the lowered bytes hold it in the folded text as well when
    # escapes do not fold (the kept lines are not ASCII); else only what a window holds counts.
    held.update(needle for needle, met in rest.items() if needle in text or (met and not escaped))
    return held


@functools.cache
def _regex() -> Any:
    import regex  # type: ignore[import-untyped]  # tiktoken's own dependency; imported by the scan alone

    return regex


@functools.lru_cache(maxsize=64)
def _caseless(needle: bytes) -> Callable[[bytes, int], Any]:
    """The search for a lowered needle in bytes of any ASCII case (the `regex` module's, as fast as
    `bytes.find`; `re`'s ignoring case is five times slower)."""
    regex = _regex()
    search: Callable[[bytes, int], Any] = regex.compile(regex.escape(needle), regex.IGNORECASE).search
    return search


def _letters(sought: Iterable[bytes]) -> bytes:
    return bytes(sorted(set(b"".join(sought))))


@functools.lru_cache(maxsize=64)
def _site_seconds(letters: bytes) -> dict[int, frozenset[int]]:
    """For each lead byte, the second bytes of the pairs whose fold matters to a needle of these
    letters: it drops the character, or writes one of the letters (a fold to other letters keeps
    bytes no needle holds, as a character that does not fold does)."""
    pairs = _tables()[0]
    seconds = {}
    for lead in _LEADS:
        row = pairs[lead]
        seconds[lead] = frozenset(second for second in range(256) if row[second] != bytes((lead, second))
                                  and (not row[second] or any(byte in letters for byte in row[second])))
    return seconds


def _fold_sites(chunk: bytes, letters: bytes) -> list[int]:
    """Where a non-ASCII text holds a character whose fold matters to a needle of these letters,
    sorted: a pair of `_site_seconds`, any 0xE1, a Kelvin or Angstrom sign."""
    seconds = _site_seconds(letters)
    sites = []
    last = len(chunk) - 1
    for lead in _LEADS:
        mark = bytes((lead,))
        wanted = seconds[lead]
        at = chunk.find(mark)
        while at >= 0:
            if at < last and chunk[at + 1] in wanted:
                sites.append(at)
            at = chunk.find(mark, at + 1)
    for mark in (b"\xe1", *((b"\xe2\x84\xaa", b"\xe2\x84\xab") if b"\xaa" in chunk or b"\xab" in chunk else ())):
        at = chunk.find(mark)
        while at >= 0:
            sites.append(at)
            at = chunk.find(mark, at + 1)
    sites.sort()
    return sites


@functools.cache
def _runs() -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    """A run of non-ASCII bytes from a place on, and up to one (a reverse match); a non-ASCII byte."""
    regex = _regex()
    return (regex.compile(rb"[\x80-\xff]*").match, regex.compile(rb"[\x80-\xff]*", regex.REVERSE).match,
            regex.compile(rb"[\x80-\xff]").search)


class _LineOf:
    """The line of a place in a chunk, and whether `lines` keeps it (every place one line when None)."""

    __slots__ = ("chunk", "lines", "whole", "start", "end", "kept")

    def __init__(self, chunk: bytes, lines: _Lines | None, *, whole: bool):
        self.chunk, self.lines, self.whole = chunk, lines, whole
        self.start, self.end, self.kept = 0, (-1 if lines is not None else len(chunk)), True

    def at(self, place: int) -> bool:
        """Move to the line of `place` (at or after the last one asked); whether it is kept."""
        if place >= self.end:
            chunk = self.chunk
            assert self.lines is not None
            self.start = chunk.rfind(b"\n", 0, place) + 1
            newline = chunk.find(b"\n", place)
            self.end = len(chunk) if newline < 0 else newline + 1
            self.kept = self.lines.kept(chunk, self.start, self.end, whole=self.whole)
        return self.kept


def _run_windows(chunk: bytes, sites: Sequence[int], reach: int, lines: _Lines | None, *,
                 whole: bool) -> list[tuple[int, int]]:
    """The windows of a non-ASCII text around its sites, in the lines kept: each site's run of non-ASCII
    bytes and `reach` bytes on each side, out to an ASCII byte or the line's end (a fold is of non-ASCII
    bytes alone, so it never crosses where one is), merged where they meet. A needle of up to `reach`
    bytes that a fold makes is within one: the runs it meets have sites (windowed too, and merged), or
    hold bytes no needle holds."""
    windows: list[tuple[int, int]] = []
    if not sites:
        return windows
    forward, backward, _ = _runs()
    line = _LineOf(chunk, lines, whole=whole)
    run_end = -1
    for site in sites:
        if site < run_end or not line.at(site):
            continue   # in a window's run already, or in a line left out
        first, last = line.start, line.end
        run_start = site if site == first or chunk[site - 1] < 0x80 else backward(chunk, first, site).start()
        run_end = site + 2 if site + 2 < last and chunk[site + 2] < 0x80 else forward(chunk, site, last).end()
        start = run_start - reach
        if start <= first:
            start = first
        elif chunk[start - 1] >= 0x80:
            start = backward(chunk, first, start).start()
        end = run_end + reach
        if end >= last:
            end = last
        elif chunk[end] >= 0x80:
            end = forward(chunk, end, last).end()
        if windows and start <= windows[-1][1] and windows[-1][0] >= first:
            windows[-1] = (windows[-1][0], max(windows[-1][1], end))
        else:
            windows.append((start, end))
    return windows


def _kept_non_ascii(chunk: bytes, lines: _Lines, *, whole: bool) -> bool:
    """Whether a line `lines` keeps holds a non-ASCII byte."""
    search = _runs()[2]
    line = _LineOf(chunk, lines, whole=whole)
    at = 0
    while (found := search(chunk, at)) is not None:
        if line.at(found.start()):
            return True
        at = line.end
    return False


@functools.cache
def _escape() -> Callable[..., Any]:
    """Every JSON escape's place, of either case (as `_ESCAPE` finds them once lowered)."""
    finditer: Callable[..., Any] = _regex().compile(rb"\\[uU][0-9a-fA-F]{4}").finditer
    return finditer


def _escape_sites(chunk: bytes) -> list[int]:
    """Where an ASCII text holds a JSON escape that `folded` changes (of any case: it is lowered first)."""
    escapes = _tables()[2]
    return [found.start() for found in _escape()(chunk) if found.group().lower() in escapes]


def _escape_windows(chunk: bytes, sites: Sequence[int], reach: int, lines: _Lines | None, *,
                    whole: bool) -> list[tuple[int, int]]:
    """The windows of an ASCII text around its escapes that fold, in the lines kept: each escape and
    `reach` bytes on each side, merged where they meet (an escape a window's end cuts is a site whose
    window meets it; one that does not fold is the same cut or whole)."""
    windows: list[tuple[int, int]] = []
    line = _LineOf(chunk, lines, whole=whole)
    for site in sites:
        if not line.at(site):
            continue
        start, end = max(line.start, site - reach), min(line.end, site + 6 + reach)
        if windows and start <= windows[-1][1] and windows[-1][0] >= line.start:
            windows[-1] = (windows[-1][0], max(windows[-1][1], end))
        else:
            windows.append((start, end))
    return windows


def _found(chunk: bytes, needle: bytes, lines: _Lines | None, *, whole: bool) -> bool | None:
    """Whether the chunk's lowered bytes hold the needle in a line `lines` keeps: True where no escape
    that folds overlaps it (there the folded text holds it too, whether escapes fold or not), None
    where one always does, False nowhere."""
    search = _caseless(needle)
    escapes = _tables()[2]
    met = False
    at = 0
    while (found := search(chunk, at)) is not None:
        start, end = found.span()
        if lines is not None:
            line_start = chunk.rfind(b"\n", 0, start) + 1
            line_end = chunk.find(b"\n", end)
            line_end = len(chunk) if line_end < 0 else line_end + 1
            if not lines.kept(chunk, line_start, line_end, whole=whole):
                at = line_end
                continue
        escape = chunk.find(b"\\", max(0, start - 5), end)
        while escape >= 0 and chunk[escape:escape + 6].lower() not in escapes:
            escape = chunk.find(b"\\", escape + 1, end)
        if escape < 0:
            return True
        met = True
        at = start + 1
    return None if met else False


def file_root(source: ListingSource, path: str) -> Path | None:
    """The root the source reads this file within, for the byte scan to read it within the same;
    None when the source names none or the path is outside its roots (the file is then parsed by
    the source's reader, which checks it)."""
    try:
        return source.file_root(path)
    except RepriseError:
        return None


Verdict = bool | tuple[str, str] | None   # may match; the problem (code, message); None: the file is gone


def verdict(source: ListingSource, path: str, needles: tuple[bytes, ...] | None) -> Verdict:
    """`may_match`, its refusal as a problem, None for a file gone since it was listed."""
    try:
        return may_match(source, path, needles)
    except FileNotFoundError:
        return None
    except ReadProblem as exc:
        return exc.code, exc.message
    except OSError as exc:
        return "unreadable", exc.strerror or str(exc)


def may_match(source: ListingSource, path: str, needles: tuple[bytes, ...] | None) -> bool:
    """Whether the file can hold a record matching the query of these needles (None: any can).
    Raises what the safe reader raises (FileNotFoundError, ReadProblem) for a file it refuses."""
    root = None if needles is None else file_root(source, path)
    if needles is None or root is None:
        return True
    with opened_regular_file(Path(path), root) as (fd, _):
        return chunks_may_match(chunks_of(fd), needles, source.byte_scan_rule)
