"""The Claude Code meter within 1% of the request the real client sends next (issue 25).

One store per module (meter_cases.measure): the real Claude Code 2.1.332 makes a session per case
against the fake server in counting mode (its usage is o200k x 1.15 plus a framing per message, so
only a calibrated meter lands within 1%); each session is copied per (draft, via), metered with the
draft, then continued by the client with it: sent by `[sources.claude] send`'s `-p` command, or
typed into its own UI after `claude --resume ID` on a pty. The first request of that turn, counted
the fake's way, is the truth."""

from __future__ import annotations

import itertools

import pytest

from reprise.core.sources.claude.windows import claude_window

from . import meter_cases
from .meter_cases import CASES, DRAFTS, VIAS, Row
from .sessions import LiveClaude

pytestmark = pytest.mark.compat

KEYS = list(itertools.product(CASES, DRAFTS, VIAS))


@pytest.fixture(scope="module")
def rows(claude_bin, tmp_path_factory) -> dict[tuple[str, str, str], Row]:
    root = tmp_path_factory.mktemp("meter")
    return {(row.case, row.draft, row.via): row for row in meter_cases.measure(root, claude_bin)}


@pytest.mark.parametrize(("case", "draft", "via"), KEYS)
def test_the_meter_is_within_one_percent_of_the_clients_next_request(rows, case, draft, via):
    row = rows[(case, draft, via)]
    assert row.calibration is not None, "no calibration: the request log did not rebuild a measured call"
    assert abs(row.error) < 0.01, row.line()


def test_the_calibration_finds_the_fakes_scale(rows):
    """The fake counts o200k x 1.15 plus a framing per message: every factor is a little above 1.15."""
    factors = {row.calibration for row in rows.values()}
    assert all(factor is not None and 1.15 <= factor < 1.18 for factor in factors), factors


def test_resume_sends_more_than_send_by_about_the_client_part(rows):
    for case, draft in itertools.product(CASES, DRAFTS):
        sent, typed = rows[(case, draft, "send")], rows[(case, draft, "resume")]
        assert 1_400 < typed.real - sent.real < 2_200, (sent.line(), typed.line())


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-sonnet-4-6"])
def test_the_window_and_compaction_point_are_what_claude_codes_context_shows(claude_bin, tmp_path, model):
    live = LiveClaude(claude_bin, tmp_path)
    folder = tmp_path / "work"
    folder.mkdir()
    live.trust(folder)
    shown, compacts_at = meter_cases.client_window(live, folder, model)
    known = claude_window(model)
    assert known is not None and (known[0], known[1]) == (meter_cases.shown_tokens(shown), compacts_at), shown
