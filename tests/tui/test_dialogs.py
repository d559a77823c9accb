"""The dialogs at 80x24, as a person uses them: every choice inside the dialog's box, sessions named
by title, trim in the user's words with turns to tick and ranges to type, one preview per pause in
typing, a confirmation before a rewrite in place, "nothing to trim" said once, a fork undone into
the trash and back, the demo's Enter, a missing agent's command to copy, and the doctor's next steps."""

from __future__ import annotations

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import Button, Input, RadioButton, SelectionList, Static

from reprise.core.paths import SessionRef
from reprise.tui.screens.dialogs import (
    ChoiceDialog,
    CommandDialog,
    ConfirmDialog,
    Dialog,
    ReportScreen,
    TextDialog,
    session_name,
)
from reprise.tui.screens.main import MainScreen
from reprise.tui.screens.trim import TrimDialog
from reprise.tui.widgets.session_list import SessionList

from .conftest import build_app, settle

LONG = "A question that goes on. " * 200


def assert_fits(dialog: Dialog) -> None:
    """The dialog's box is on the screen and each of its buttons inside the box."""
    box = dialog.query_one("#dialog-frame", Vertical).region
    assert dialog.region.contains_region(box), (box, dialog.region)
    buttons = list(dialog.query(Button))
    assert buttons
    for button in buttons:
        assert box.contains_region(button.region), (type(dialog).__name__, button.id, button.region, box)


def preview(dialog: TrimDialog) -> str:
    return str(dialog.query_one("#trim-preview", Static).render())


async def open_trim(pilot, app, operation: str | None = None) -> TrimDialog:
    """The trim dialog of the demo's 60-turn session, on `operation` when given."""
    session_list = app.screen.query_one(SessionList)
    session_list.move_to(next(i for i, r in enumerate(session_list.rows) if r.turns == 60))
    await settle(pilot)
    await pilot.press("ctrl+t")
    await settle(pilot)
    assert isinstance(app.screen, TrimDialog)
    if operation is not None:
        await pilot.click(f"#op-{operation}")
        await settle(pilot)
        assert app.screen.operation == operation
    return app.screen


async def test_every_dialog_shows_its_choices_and_keys_inside_its_box_at_80x24(service):
    app = build_app(service)
    dialogs = [
        ConfirmDialog(LONG, yes="Move to trash", danger=True),
        TextDialog("New title:", value="x" * 300),
        ChoiceDialog("Choose a workspace", [(str(n), f"workspace {n}") for n in range(60)]),
        ReportScreen("Doctor", Text("\n".join(f"problem {n}" for n in range(200)))),
        CommandDialog("What Enter would run", LONG, ["fractal", "--resume", "x" * 200], "/tmp/" + "d" * 200),
    ]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for dialog in dialogs:
            app.push_screen(dialog)
            await settle(pilot)
            assert_fits(dialog)
            keys = str(dialog.query_one("#dialog-keys").render())
            assert "Esc" in keys, keys
            await pilot.press("escape")
            await settle(pilot)
            assert isinstance(app.screen, MainScreen)
        dialog = await open_trim(pilot, app, "drop")
        assert dialog.query_one("#trim-turns", SelectionList).display
        await pilot.press(*"1-40")
        await settle(pilot)
        assert_fits(dialog)
        assert str(dialog.query_one("#dialog-keys").render()) == "Esc Cancel · Enter Apply"


async def test_trim_names_its_operations_in_the_users_words(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        dialog = await open_trim(pilot, app)
        labels = {button.id: str(button.label) for button in dialog.query(RadioButton)}
        assert labels["op-cap"] == "Shorten long replies"
        assert labels["op-fold"] == "Condense old turns into a digest"
        assert labels["op-drop"] == "Remove turns"
        assert dialog.border_title is None and "Big refactor" in str(dialog.query_one("#dialog-frame").border_title)
        await pilot.click("#op-fold")
        await settle(pilot)
        assert "no AI summary" in str(dialog.query_one("#trim-help", Static).render())


async def test_remove_turns_ticks_what_the_range_field_names_and_the_field_follows_the_ticks(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        dialog = await open_trim(pilot, app, "drop")
        turns = dialog.query_one("#trim-turns", SelectionList)
        assert turns.option_count == 60
        first = str(turns.get_option_at_index(0).prompt)
        assert first.split()[0] == "1" and "KB" in first and "tok" in first
        await pilot.press(*"5-9, 12")
        await settle(pilot)
        assert sorted(turns.selected) == [5, 6, 7, 8, 9, 12]
        assert dialog.result is not None and dialog.result.plan.options.drop == ("5", "6", "7", "8", "9", "12")
        assert dialog.result.plan.counts()["dropped"] == 6
        turns.select(20)
        await settle(pilot)
        assert dialog.query_one("#trim-value", Input).value == "5-9, 12, 20"
        assert dialog.result is not None and "20" in dialog.result.plan.options.drop
        await pilot.press("ctrl+u", *"70")
        await settle(pilot)
        assert "There is no turn 70" in preview(dialog) and dialog.result is None
        assert dialog.query_one("#apply", Button).disabled


async def test_typing_a_figure_previews_once_per_pause(service, monkeypatch):
    app = build_app(service)
    dry_runs = []
    trim = service.trim

    def counted(ref, options, **kwargs):
        if kwargs.get("dry_run"):
            dry_runs.append(options)
        return trim(ref, options, **kwargs)

    monkeypatch.setattr(service, "trim", counted)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        dialog = await open_trim(pilot, app)
        assert len(dry_runs) == 1   # the default figure, at once
        await pilot.press("ctrl+u", *"23500")
        await settle(pilot)
        assert [options.fit for options in dry_runs] == [68_000, 23_500]
        assert dialog.preview.runs == 2 and dialog.result is not None and dialog.result.plan.options.fit == 23_500


async def test_trimming_in_place_asks_first_naming_the_session_and_the_archive(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        dialog = await open_trim(pilot, app)
        ref = dialog.ref
        path = service.sources["fractal"].store.paths.session_file(ref)
        original = path.read_bytes()
        await pilot.press("enter")
        await settle(pilot)
        confirm = app.screen
        assert isinstance(confirm, ConfirmDialog)
        assert_fits(confirm)
        assert "“Big refactor (60 turns)”" in confirm.question and "archive" in confirm.question
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is dialog and path.read_bytes() == original
        await pilot.click("#apply")
        await settle(pilot)
        await pilot.click("#yes")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen) and len(path.read_bytes()) < len(original)


async def test_nothing_to_trim_is_said_once_and_apply_is_off(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        dialog = await open_trim(pilot, app, "cap")
        said = dialog.nothing_said
        await pilot.press("ctrl+u", *"9000000")
        await settle(pilot)
        assert dialog.nothing_said == said + 1
        assert preview(dialog).count("Nothing to trim") == 1
        assert dialog.query_one("#apply", Button).disabled and dialog.query_one("#fork", Button).disabled
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is dialog   # Enter does nothing when nothing would change


async def test_undoing_a_fork_moves_it_to_the_trash_and_u_brings_it_back(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        original = app.screen.query_one(SessionList).current
        original_bytes = open(original.path, "rb").read()
        await pilot.press("ctrl+t")
        await settle(pilot)
        await pilot.click("#op-drop")
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        await pilot.click("#fork")
        await settle(pilot)
        fork = app.screen.query_one(SessionList).current
        assert fork.title == f"{original.title} (trimmed)"
        fork_bytes = open(fork.path, "rb").read()
        await pilot.press("ctrl+z")
        await settle(pilot)
        confirm = app.screen
        assert isinstance(confirm, ConfirmDialog) and "trash" in confirm.question
        assert f"“{fork.title}”" in confirm.question and fork.ref.session_id[:8] in confirm.question
        await pilot.click("#yes")
        await settle(pilot)
        assert not service.sources["fractal"].store.exists(fork.ref)
        assert [entry.ref for entry in service.trash_entries()] == [fork.ref]
        assert open(original.path, "rb").read() == original_bytes
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog) and "from the trash" in app.screen.question
        await pilot.click("#yes")
        await settle(pilot)
        assert open(fork.path, "rb").read() == fork_bytes


async def resume_shows_a_command(pilot, app) -> tuple[SessionRef, CommandDialog]:
    """Enter on the first row; the app keeps running and shows the command in its dialog."""
    await settle(pilot)
    ref = app.screen.query_one(SessionList).current.ref
    await pilot.press("enter")
    await settle(pilot)
    dialog = app.screen
    assert isinstance(dialog, CommandDialog) and app.is_running and app.return_value is None
    assert_fits(dialog)
    return ref, dialog


async def test_in_the_demo_enter_shows_what_would_run(service):
    app = build_app(service, demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        ref, dialog = await resume_shows_a_command(pilot, app)
        shown = str(dialog.query_one("#command-line", Static).render())
        assert f"--resume {ref.session_id}" in shown and str(service.workspace) in shown
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)


async def test_a_missing_agent_offers_its_command_to_copy(service, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        ref, dialog = await resume_shows_a_command(pilot, app)
        assert "not found on PATH" in dialog.why
        await pilot.click("#copy")
        await settle(pilot)
        assert app.clipboard == f"cd {service.workspace} && fractal --workspace {service.workspace} --resume " \
                                f"{ref.session_id}"
        assert app.clipboard in str(dialog.query_one("#command-line", Static).render())


async def test_the_doctor_view_says_what_to_do_next(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.run_action("show_doctor")
        await settle(pilot)
        assert isinstance(app.screen, ReportScreen)
        assert_fits(app.screen)
        body = str(app.screen.query_one("#report-body").render())
        assert "invalid_json" in body and "next: open the file:" in body and "reprise rm" in body


async def test_a_dialog_names_a_hostile_title_on_one_safe_line(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        row = app.screen.query_one(SessionList).current
        service.rename(row.ref, "[b]bold?[/b]\x1b[31m red\nsecond line")
        app.screen.load_rows()
        await settle(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        title = str(app.screen.query_one("#dialog-frame").border_title)   # as markup: its brackets escaped
        assert "\x1b" not in title and "\n" not in title and "\\[b]bold?\\[/b]" in title and "second line" in title
    assert session_name("a\x1b[2Jb\n\tc " + "x" * 80, 12) == "“a␛[2Jb c xx…”"
    assert session_name("  ") == session_name(None) == "an untitled session"
