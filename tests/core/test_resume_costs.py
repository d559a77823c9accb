"""The background fill of resume costs: the rows on screen first, progress as it goes, a figure
per session read one at a time."""

from __future__ import annotations

from reprise.core.resume_costs import CostProgress, in_priority_order
from reprise.core.service import Service
from tests.factories import session_bytes, write_session


def _service(state, tmp_path, count: int) -> Service:
    folder = tmp_path / "project"
    folder.mkdir()
    for index in range(count):
        write_session(state, folder, session_bytes(f"{index:032x}", turns=1 + index % 3))
    return Service.from_environment(workspace=str(folder))


def test_the_rows_on_screen_are_computed_first_then_the_rest_in_list_order(isolated_paths, tmp_path, monkeypatch):
    service = _service(isolated_paths, tmp_path, 120)
    rows = service.list_sessions().rows
    order: list[str] = []
    source = service.sources["fractal"]
    monkeypatch.setattr(source, "resume_cost", lambda ref, *_: order.append(ref.session_id) or 1000)
    heard: list[CostProgress] = []
    on_screen = [rows[70], rows[3], rows[71]]
    computed = service.fill_resume_costs(rows, first=on_screen, progress=heard.append)
    assert computed == 120
    expected = [row.file_id for row in on_screen] + [row.file_id for row in rows if row not in on_screen]
    assert order == expected
    assert heard == [CostProgress(50, 120), CostProgress(100, 120), CostProgress(120, 120)]
    assert heard[-1].finished and not heard[0].finished
    order.clear()
    assert service.fill_resume_costs(rows, first=on_screen) == 0 and order == []  # cached: nothing to read


def test_a_stopped_fill_keeps_what_it_computed(isolated_paths, tmp_path, monkeypatch):
    service = _service(isolated_paths, tmp_path, 5)
    rows = service.list_sessions().rows
    done: list[str] = []
    monkeypatch.setattr(service.sources["fractal"], "resume_cost", lambda ref, *_: done.append(ref.session_id) or 7)
    assert service.fill_resume_costs(rows, should_stop=lambda: len(done) >= 2) == 2
    fresh = Service.from_environment(workspace=str(tmp_path / "project")).list_sessions().rows
    assert sorted(row.resume_cost for row in fresh if row.resume_cost is not None) == [7, 7]


def test_the_real_figure_is_the_meter_total(isolated_paths, tmp_path):
    service = _service(isolated_paths, tmp_path, 2)
    rows = service.list_sessions().rows
    service.fill_resume_costs(rows, first=[rows[1]])
    for row in rows:
        assert row.resume_cost == service.measure(row.ref, "").total


def test_priority_order_puts_each_row_once():
    rows = [object() for _ in range(4)]
    assert in_priority_order(rows, [rows[2], rows[2], object(), rows[0]]) == [rows[2], rows[0], rows[1], rows[3]]
