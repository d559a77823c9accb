"""How the search's byte scan (`core/search_scan.py`) reads one store's files, when a source knows
better than "every byte": a file it must always parse, the lines no search record comes from, and a
mark whose presence in the first chunk makes the file a candidate. A source returns a rule from
`ListingSource.byte_scan_rule(first_chunk)`; the scan knows no store's format.
"""

from __future__ import annotations

from dataclasses import dataclass

LINE_HEAD = 300   # of a line, where a JSON-lines record's type and role are


@dataclass(frozen=True, slots=True)
class ByteScanRule:
    """How the byte scan reads one file, told from its first chunk.

    `always_candidate`: the file is parsed whatever the query (its search texts include what is not
    in its bytes, such as a parent's). `skipped_line_heads`: a line whose first `head` bytes hold one
    of these gives no search record, so its bytes make no candidate. `candidate_if_in_first`: the
    file is a candidate when the folded text of its first chunk (after the skipped lines) holds this."""

    always_candidate: bool = False
    skipped_line_heads: tuple[bytes, ...] = ()
    head: int = LINE_HEAD
    candidate_if_in_first: bytes | None = None
