"""Snapshots of the picker (`reprise pick`) and the F1 key list at 80x24 and 120x40: a list, a
one-line prompt and the preview on demand; the key list inside the screen, and its end: the legend."""

from __future__ import annotations

import pytest

from .conftest import build_app
from .test_snapshots import settled, snap_service  # noqa: F401  (the fixture)

SIZES = [(80, 24), (120, 40)]
IDS = ["80x24", "120x40"]


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_pick_mode_filtered(snap_compare, snap_service, size):  # noqa: F811
    app = build_app(snap_service, mode="pick")
    assert snap_compare(app, terminal_size=size, run_before=settled(*"ref"))


def test_pick_mode_preview_on_demand_at_80x24(snap_compare, snap_service):  # noqa: F811
    app = build_app(snap_service, mode="pick")
    assert snap_compare(app, terminal_size=(80, 24), run_before=settled("ctrl+e"))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_key_list(snap_compare, snap_service, size):  # noqa: F811
    assert snap_compare(build_app(snap_service), terminal_size=size, run_before=settled("f1"))


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_key_list_ends_with_the_legend(snap_compare, snap_service, size):  # noqa: F811
    assert snap_compare(build_app(snap_service), terminal_size=size, run_before=settled("f1", "end"))
