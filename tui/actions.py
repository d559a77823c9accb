"""Every key of the app in one table: the main screen's and the app's `BINDINGS`, the F1 key list
and the command palette (F2) are all built from it, so a key is described once and shown the same
way everywhere.

A command works in the modes it names: `list` (the session list, where what is typed goes to the
filter), `composer` (writing a message) and `pick` (`reprise pick`, where letters go to the prompt).
No printable key and no alt chord is bound in `list`: a word typed on the list only filters it. The main screen's
`check_action` hides a command outside its modes, so the footer shows the keys of the mode at hand.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textual.binding import Binding

LIST, COMPOSER, PICK = "list", "composer", "pick"
EVERY_MODE = frozenset({LIST, COMPOSER, PICK})
WIDE = "wide"


@dataclass(frozen=True, slots=True)
class Command:
    keys: str                 # Textual key names, comma-separated; the first is the one shown
    action: str
    label: str                # the footer's word
    description: str          # the sentence of the key list and the palette
    footer: bool | str = False   # shown in the footer (a few: it must fit 80 columns); "wide": from 100 up
    modes: frozenset[str] = frozenset({LIST})
    where: str = "screen"     # screen | app: whose BINDINGS; list | composer | filter: that widget's own
    palette: bool = True      # offered in the command palette
    priority: bool = False


COMMANDS: tuple[Command, ...] = (
    # the session list: typing goes to the filter, so no printable key and no alt chord is bound here
    # (tests/tui/test_keys.py); the keys are fzf's and the agents' pickers' (issue 26)
    Command("typing / backspace / escape", "", "Filter",
            "Filter the list as you type (title, messages, folder, git branch or id prefix); Backspace edits it, "
            "Esc clears it",
            where="list", palette=False),
    Command("enter", "resume", "Resume", "Resume the selected session in its agent", footer=True),
    Command("enter", "pick", "Pick", "Print the selected session's id and leave", footer=True,
            modes=frozenset({PICK}), palette=False),
    Command("ctrl+f", "search", "Search", "Search the full text of every turn", footer=True),
    Command("ctrl+a", "toggle_scope", "All/here", "Show all workspaces, or this one again", footer=True),
    Command("f1", "keys", "Keys", "Show every key and what the marks in the list mean", footer=True),
    Command("f1", "help", "Keys", "Show every key and what the marks in the list mean", footer=True,
            modes=frozenset({COMPOSER, PICK}), palette=False),
    Command("ctrl+o", "new", "New", "Start a new session"),
    Command("ctrl+t", "trim", "Trim", "Trim the selected session (preview first, the original archived)", footer=WIDE),
    Command("ctrl+z", "undo", "Undo", "Undo the last trim or move to the trash"),
    Command("ctrl+x", "delete", "Trash", "Move the selected session to Reprise's trash (asks first)"),
    Command("ctrl+r", "rename", "Rename", "Rename the selected session", footer=WIDE),
    Command("ctrl+b", "pin", "Pin", "Pin or unpin the selected session (pinned ones stay on top)", footer=WIDE),
    Command("ctrl+l", "continue_in", "Continue in…",
            "Continue the session in another agent: its history written as a new session of that agent "
            "(a preview first; the original is not changed)"),
    Command("ctrl+k", "keep", "Keep a copy", "Keep a copy of the session that its agent would delete"),
    Command("", "keep_due", "Keep every session due",
            "Keep a copy of every session its agent deletes within a week, in every folder"),
    Command("ctrl+w", "choose_workspace", "Workspace", "Choose a workspace to list"),
    Command("ctrl+s", "cycle_sort", "Sort", "Sort by another column; after the last, each again reversed"),
    Command("ctrl+g", "cycle_agent", "Agent", "Show one agent's sessions, then the next agent's, then all"),
    Command("", "toggle_agent_hidden", "-p runs",
            "Show or hide the -p/exec runs, the sessions the agents' own pickers hide (the legend, F1, "
            "names them by agent); remembered"),
    Command("", "copy_id", "Copy id", "Copy the selected session's id to the clipboard"),
    Command("ctrl+y", "copy_command", "Copy command", "Copy the command that resumes the session (cd DIR && ARGV)"),
    Command("shift+down", "scroll_preview(1)", "Preview down", "Scroll the preview down from the list",
            modes=frozenset({LIST, PICK}), palette=False),
    Command("shift+up", "scroll_preview(-1)", "Preview up", "Scroll the preview up from the list",
            modes=frozenset({LIST, PICK}), palette=False),
    Command("ctrl+e", "toggle_preview", "Preview", "Show or hide the preview"),
    Command("ctrl+e", "preview", "Preview", "Show or hide the preview", footer=True, modes=frozenset({PICK}),
            palette=False, priority=True),   # before the prompt's own ctrl+e (end of line): one habit
    Command("", "raw", "Raw text", "Show the raw text (Fractal's own rendered summary: what the meter counts; "
            "the whole transcript for other agents), or the conversation again"),
    Command("", "ids", "Ids", "Show the session's and each turn's ids in the preview, or hide them"),
    # Tab is a priority key: the app takes it before the keys after it, so the letters a fast typist
    # sends with it in one read go to the composer it opens, not to the filter.
    Command("tab", "focus_composer", "Write", "Write a message to the selected session", footer=True,
            priority=True),
    Command("", "recover", "Mark interrupted", "Mark the session's stale pending turn interrupted"),
    Command("", "show_tab('tab-summary')", "Conversation", "Show the Conversation tab"),
    Command("", "show_tab('tab-history')", "History", "Show the History tab"),
    Command("", "show_tab('tab-context')", "Context", "Show the Context tab"),
    Command("", "restore_draft", "Bring back draft", "Bring back the draft ctrl+c cleared"),
    Command("escape", "back", "Clear", "Clear the filter (on an empty one, nothing)", palette=False),
    Command("escape", "cancel", "Cancel", "Clear the filter, then cancel", footer=True, modes=frozenset({PICK}),
            palette=False),
    # the app's own
    Command("ctrl+q", "quit_app", "Quit", "Quit Reprise (a dialog closes first)", footer=True, where="app",
            modes=EVERY_MODE, priority=True),
    Command("ctrl+c", "ctrl_c", "Stop", "Stop a running turn; else clear the draft; else press twice to quit",
            where="app", modes=EVERY_MODE, palette=False, priority=True),
    # the widgets' own: listed in the key list, bound by the widget
    Command("down,ctrl+n / up,ctrl+p", "", "Move", "Move the cursor", where="list", modes=frozenset({LIST}),
            palette=False),
    Command("pagedown / pageup", "", "Page", "Move a page", where="list", modes=frozenset({LIST}), palette=False),
    Command("home / end", "", "First / last", "Go to the first or the last session", where="list",
            palette=False),
    Command("down,ctrl+n,ctrl+j / up,ctrl+p,ctrl+k", "", "Move", "Move the list while typing in the prompt",
            where="filter", modes=frozenset({PICK}), palette=False),
    Command("home / end", "", "First / last", "Go to the first or the last session (the prompt keeps ctrl+a)",
            where="filter", modes=frozenset({PICK}), palette=False),
    Command("ctrl+s", "", "Send", "Send the message", where="composer", modes=frozenset({COMPOSER}), palette=False),
    Command("escape", "", "Back to list", "Leave the composer (the draft stays)", where="composer",
            modes=frozenset({COMPOSER}), palette=False),
    Command("ctrl+z", "", "Undo", "Undo the last edit (brings back a draft ctrl+c cleared)", where="composer",
            modes=frozenset({COMPOSER}), palette=False),
)

# The store-wide views the app opens (the palette lists them first).
VIEWS: tuple[Command, ...] = (
    Command("", "show_doctor", "Doctor", "Doctor: problems in the store and what to do next", where="app"),
    Command("", "show_trash", "Trash", "Trash: restore a session moved to the trash", where="app"),
    Command("", "show_audit", "Audit", "Audit log: every operation that changed a session", where="app"),
)


def _modes_by_action(where: str) -> dict[str, frozenset[str]]:
    """An action's modes: the union over its keys (Enter resumes in the list, picks in the picker)."""
    modes: dict[str, frozenset[str]] = {}
    for command in COMMANDS:
        if command.where == where:
            name = command.action.split("(")[0]
            modes[name] = modes.get(name, frozenset()) | command.modes
    return modes


SCREEN_MODES = _modes_by_action("screen")   # the modes each of the main screen's actions works in


def bindings(where: str) -> list[Binding | tuple[str, str] | tuple[str, str, str]]:
    """The `BINDINGS` of the main screen (`screen`) or the app (`app`).

    A command shown in the footer only when the terminal is wide gets a second binding first, of
    the action `wide('name')`: the screen hides it when narrow (the key then falls to the hidden
    one), and greys it as it greys the action itself."""
    made: list[Binding | tuple[str, str] | tuple[str, str, str]] = []
    for command in COMMANDS:
        if command.where != where or not command.keys:   # no key: the palette's alone
            continue
        display = KEY_NAMES.get(command.keys) if command.keys in NAMED_KEYS else None   # F1, not Textual's f1
        if command.footer == WIDE:
            made.append(Binding(command.keys, f"wide({command.action!r})", command.label, tooltip=command.description,
                                key_display=display))
        made.append(Binding(command.keys, command.action, command.label, show=command.footer is True,
                            tooltip=command.description, priority=command.priority, key_display=display))
    return made


def palette_commands() -> Iterable[Command]:
    """What the command palette offers, in its order: the views first, then each action once."""
    yield from VIEWS
    seen: set[str] = set()
    for command in COMMANDS:
        if command.palette and command.action not in seen:
            seen.add(command.action)
            yield command


PALETTE_KEY = "f2"   # the command palette's key (Textual's ctrl+p moves the list up, as in fzf)

NAMED_KEYS = ("f1", "f2", "tab", "escape")   # shown by our names (F1, Tab, Esc), not Textual's (f1, tab, esc)
KEY_NAMES = {"f1": "F1", "f2": "F2", "backspace": "Backspace", "enter": "Enter", "escape": "Esc", "tab": "Tab",
             "pagedown": "PgDn", "pageup": "PgUp", "home": "Home", "end": "End", "down": "↓", "up": "↑",
             "shift+down": "shift+↓", "shift+up": "shift+↑"}


def key_text(keys: str) -> str:
    """Keys as people write them: `?`, `/`, `Enter`, `ctrl+d`; alternatives joined by spaces."""
    groups = [" ".join(KEY_NAMES.get(key.strip(), key.strip()) for key in group.split(","))
              for group in keys.split(" / ")]
    return " / ".join(groups)
