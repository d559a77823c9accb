"""`reprise doctor` and the TUI's Doctor view: the store's problems, warnings, leftover temp
files and notes, one line each, and under each problem what to do next (decided in core)."""

from __future__ import annotations

from reprise.core.problems import Problem, next_step_for
from reprise.core.service import DoctorReport, IndexState

from ..format import counted, human_size
from ..text import safe_line
from . import Line, line


def _next(problem: Problem) -> Line:
    return line(f"         next: {safe_line(next_step_for(problem))}", style="dim")


def index_phrase(index: IndexState) -> str:
    """The search index's size, the sessions it holds and its cap, or that it is off."""
    held = f"{human_size(index.size)} for {counted(index.sessions, 'session')}"
    if not index.enabled:
        return f"search index off ([search] index = false); {held} left from before"
    cap = f"cap {human_size(index.cap)} ([search] max_mb)" if index.cap is not None else "no cap ([search] max_mb)"
    return f"search index {held}, {cap}"


def doctor_lines(report: DoctorReport, state_root: object) -> list[Line]:
    lines: list[Line] = []
    for problem in report.problems:
        lines += [line(f"problem  {safe_line(problem.path)}: {problem.code}: {safe_line(problem.message)}",
                       style="red"), _next(problem)]
    for warning in report.warnings:
        lines += [line(f"warning  {safe_line(warning.path)}: {safe_line(warning.message)}", style="yellow"),
                  _next(warning)]
    lines += [line(f"tempfile {safe_line(temp)} (left by an interrupted write)") for temp in report.temp_files]
    if report.temp_files:
        lines.append(line("         next: `reprise doctor --clean` removes those older than 10 minutes", style="dim"))
    lines += [line(f"removed  {safe_line(temp)}") for temp in report.cleaned]
    lines += [line(f"note     {safe_line(note)}") for note in report.notes]
    if report.search_index is not None:
        lines.append(line(f"index    {index_phrase(report.search_index)}", style="dim"))
    if report.ok and not report.warnings:
        lines.append(line(f"No problems under {safe_line(state_root)}", style="green"))
    return lines
