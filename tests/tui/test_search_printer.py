"""`reprise search` prints a session as soon as the search is past it, and what it prints as the
hits come is what it would print at once."""

from __future__ import annotations

from reprise.core.search_engine import SearchUpdate
from reprise.tui.reports.search import HitPrinter, search_lines

from .conftest import fixed_clock


def test_a_session_is_printed_once_a_later_one_has_hits_and_the_whole_is_the_same(service):
    hits = service.search("jitter", limit=50)
    sessions = list(dict.fromkeys(hit.row.path for hit in hits))
    assert len(sessions) == 2
    first_count = sum(hit.row.path == sessions[0] for hit in hits)
    printer = HitPrinter(service, limit=50, width=100, now=fixed_clock())
    assert printer.ready(hits[:first_count], complete=False) == []   # its session may have more hits to come
    printed = printer.ready(hits[:first_count + 1], complete=False)
    assert printed and all(sessions[1][-10:] not in each.plain for each in printed)
    printed += printer.ready(hits, complete=True)
    assert printer.ready(hits, complete=True) == []   # each session once
    update = SearchUpdate("jitter", hits, searched=5, total=5, cut=2, complete=True)
    closing = [each.plain for each in printer.closing_lines(hits, update)]
    assert [each.plain for each in printed] + closing[:1] == \
        [each.plain for each in search_lines(hits, limit=50, width=100, now=fixed_clock())]
    assert closing[1] == ("Note: 2 sessions searched had outputs cut for the index; words only in the part left "
                          "out are not found.")
