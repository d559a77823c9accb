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
from collections.abc import Callable, Iterable
from pathlib import Path

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


def _searched_lines(chunk: bytes, skipped: tuple[bytes, ...], head: int, *, whole: bool) -> bytes:
    """A chunk without the lines no search record comes from (one of `skipped` in their first `head`
    bytes); its first piece always kept when it ends a line begun in the chunk before (not `whole`)."""
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
