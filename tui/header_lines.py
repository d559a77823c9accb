"""The main screen's two header lines as (text, style) parts: where the list is and the state
root, then how many rows are shown and why; and a picker's filter prompt, under them. The screen
assembles them into Rich text; the first frame, written before Textual is imported
(`first_frame.py`), into the terminal's colours."""

from __future__ import annotations

from dataclasses import dataclass

from .text import safe_line

Part = tuple[str, str]   # text and a Rich style ("" for none)
LOADING = "loading sessions…"
FILTERED_BY = "title, messages, folder, branch, id"   # what the filter looks in (`rows.matches`)
PICK_PROMPT = f"filter: {FILTERED_BY} · Enter picks · Esc cancels"   # a picker's filter, below the header


@dataclass(frozen=True, slots=True)
class HeaderState:
    scope: str              # "workspace /path" or "all folders"
    state_root: str
    visible: int            # rows in the list
    total: int              # rows in scope
    loading: str | None     # while rows load: how far the read is (LOADING before it says)
    sort: str
    reverse: bool = False
    filter_text: str = ""
    agent_label: str | None = None   # the one agent shown
    hidden: int = 0                  # rows left out that the agents' own pickers hide
    kept_before_sweep: int = 0
    costs: str | None = None         # the resume-cost fill's progress
    problems: int = 0                # rows that cannot be read
    picking: bool = False


def header_parts(state: HeaderState) -> tuple[list[Part], list[Part]]:
    """The header's two lines: where (in bold, the state root dim), then the counts."""
    where = [("Reprise ", "bold"), (safe_line(state.scope), "bold cyan"), ("  state ", "dim"),
             (safe_line(state.state_root), "dim")]
    counts: list[Part] = []
    if state.loading is not None:
        counts.append((f"{state.loading} ", "bold yellow"))
    shown = f"{state.visible:,} of {state.total:,} sessions shown"
    counts.append((shown, "bold" if state.visible < state.total else ""))
    if state.filter_text:
        counts.append((f" · filter: {safe_line(state.filter_text)}", "yellow"))
    if state.agent_label:
        counts.append((f" · agent: {state.agent_label}", "yellow"))
    if state.hidden:   # what the agents' pickers leave out: F2 shows them
        counts.append((f" · {state.hidden:,} -p/exec runs hidden", "yellow"))
    counts.append((f" · sort: {state.sort}" + (" reversed" if state.reverse else ""), ""))
    if state.kept_before_sweep:   # `keep_before_sweep`: said once as a notice, counted here for the run
        counts.append((f" · {state.kept_before_sweep:,} kept before the agent's sweep", "green"))
    if state.costs:
        counts.append((f" · {state.costs}", "dim"))
    if state.problems:
        counts.append((f" · {state.problems} unreadable", "red"))
    if state.picking:
        counts.append((" · PICK", "bold"))
    return where, counts
