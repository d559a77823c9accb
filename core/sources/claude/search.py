"""The texts a full-text search looks in, for one Claude Code session: each turn of its main chain,
as `core/sources/transcript_search.py` takes them from the neutral transcript.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..base import SearchRecord
from ..transcript_search import SEARCH_CHARS
from ..transcript_search import search_records as transcript_texts
from .records import Record
from .transcript import read_transcript

__all__ = ["SEARCH_CHARS", "search_records"]


def search_records(records: Iterable[Record]) -> list[SearchRecord]:
    transcript, _ = read_transcript(records)
    return transcript_texts(transcript)
