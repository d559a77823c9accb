"""The debouncer: a burst of pokes starts one call with the newest value; older results go stale."""

from __future__ import annotations

from textual.app import App

from reprise.tui.debounce import Debouncer


async def test_a_burst_runs_once_with_the_newest_value() -> None:
    calls: list[tuple[str, int]] = []
    app: App[None] = App()
    async with app.run_test() as pilot:
        debouncer: Debouncer[str] = Debouncer(app, 0.05, lambda value, generation: calls.append((value, generation)))
        for text in ("2", "23", "235", "2350", "23500"):
            debouncer.poke(text)
        assert debouncer.pending
        await pilot.pause(0.2)
        assert [value for value, _ in calls] == ["23500"]
        assert debouncer.runs == 1
        generation = calls[0][1]
        assert debouncer.is_current(generation)
        debouncer.poke("2")
        assert not debouncer.is_current(generation)  # a newer value makes the running call's result stale
        debouncer.cancel()
        await pilot.pause(0.2)
        assert debouncer.runs == 1


async def test_now_runs_at_once_and_cancels_the_pause() -> None:
    calls: list[str] = []
    app: App[None] = App()
    async with app.run_test() as pilot:
        debouncer: Debouncer[str] = Debouncer(app, 0.05, lambda value, _generation: calls.append(value))
        debouncer.poke("a")
        debouncer.now("ab")
        assert calls == ["ab"]
        await pilot.pause(0.2)
        assert calls == ["ab"]
