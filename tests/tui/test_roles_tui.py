"""The TUI with every combination of roles: a source that lacks an optional role still shows its
sessions, greys exactly the actions it cannot take and says why. The source is the demo's Fractal
source masked down to the roles a test keeps: roles are nominal, so the masked class has exactly
those (built here from the roles, no entry point needed)."""

from __future__ import annotations

import pytest

from reprise.core.service import Service
from reprise.core.sources.roles import (
    OPTIONAL,
    Creator,
    Forking,
    Metered,
    Sender,
    Trashing,
    TrimmingInPlace,
)
from reprise.tui.widgets.composer import Composer
from reprise.tui.widgets.meter import MeterBar

from ..masked import masked
from .conftest import build_app, settle

KEYED = ("trim", "delete", "keep", "focus_composer", "new")   # the actions a role decides


FRACTAL_OPTIONAL = [role for role in OPTIONAL if role.__name__ not in ("Swept", "Keeping", "SessionWriter")]
MASKS = [frozenset({role}) for role in FRACTAL_OPTIONAL] + [frozenset(OPTIONAL)]


def expected_greyed(absent: frozenset[type]) -> set[str]:
    greyed = {"keep"}   # Fractal keeps nothing: its agent deletes no session
    if Forking in absent and TrimmingInPlace in absent:
        greyed.add("trim")
    if Trashing in absent:
        greyed.add("delete")
    if Sender in absent:
        greyed.add("focus_composer")
    if Creator in absent:
        greyed.add("new")
    return greyed


def mask_id(absent: frozenset[type]) -> str:
    return "all-absent" if len(absent) > 1 else f"no-{next(iter(absent)).__name__}"


@pytest.mark.parametrize("absent", MASKS, ids=mask_id)
async def test_the_detail_shows_and_exactly_the_absent_roles_actions_are_greyed(service: Service, absent):
    service.sources["fractal"] = masked(service.sources["fractal"], absent)
    assert not absent & service.sources["fractal"].roles
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.detail is not None and screen.detail.meta.title == "Dark mode"   # shown, not a problem
        assert {action for action in KEYED if screen.available(action) is not True} == expected_greyed(absent)
        bar = str(screen.query_one(MeterBar).render())
        if Metered in absent:
            assert "Reprise does not meter Fractal sessions" in bar and screen.meter_result is None
        else:
            assert screen.meter_result is not None and "Next turn" in bar
        conversation = str(screen.query_one("#conversation-before").render())
        said = {"Fractal sessions cannot be sent a turn by Reprise.": Sender in absent,
                "Fractal sessions cannot be trimmed by Reprise.": Forking in absent and TrimmingInPlace in absent,
                "Fractal sessions cannot be moved to the trash by Reprise.": Trashing in absent}
        assert {sentence for sentence in said if sentence in conversation} == {s for s, due in said.items() if due}


async def test_a_draft_for_a_source_that_cannot_send_stays_and_the_refusal_names_the_source(service: Service):
    service.sources["fractal"] = masked(service.sources["fractal"], frozenset({Sender}))
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        composer = app.screen.query_one(Composer)
        composer.load_text("hello")
        composer.post_message(Composer.SendRequested("hello"))
        await settle(pilot)
        assert app.screen.running is None and composer.text == "hello"
        assert any("Fractal sessions cannot be sent a turn by Reprise." in str(toast.message)
                   for toast in app._notifications)


async def test_a_source_that_forks_only_opens_the_trim_dialog_on_a_fork(service: Service):
    from reprise.tui.screens.trim import TrimDialog

    service.sources["fractal"] = masked(service.sources["fractal"], frozenset({TrimmingInPlace}))
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert isinstance(app.screen, TrimDialog) and app.screen.fork_only
