"""The choices a person makes on Reprise's screens that outlive a run: whether the preview is open
on a narrow terminal, whether the sessions an agent's own picker hides are shown. One small JSON
file in Reprise's data folder, written atomically; keys it does not know (a newer Reprise's) are
kept. A file that cannot be read or holds a wrong type gives the defaults with a sentence naming
the file, and is replaced only by the next choice made."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from .errors import RepriseError
from .rooted import Root

FILE_NAME = "ui-state.json"
CAP = 64 * 1024


@dataclass(slots=True)
class UiState:
    preview_when_narrow: bool = False    # below 100 columns the preview waits for ctrl+e, as in a picker
    show_agent_hidden: bool = False      # `claude -p`, SDK and `codex exec` runs, hidden as their pickers do
    unknown: dict[str, object] = field(default_factory=dict)   # keys of a newer Reprise, written back as they were


KNOWN = tuple(f.name for f in fields(UiState) if f.name != "unknown")


def load(folder: Path) -> tuple[UiState, str | None]:
    """The remembered choices, and a sentence when the file could not be used (then the defaults)."""
    path = folder / FILE_NAME
    try:
        raw = Root(folder, "Reprise's data folder").read(path, CAP)
    except FileNotFoundError:
        return UiState(), None
    except (OSError, RepriseError) as exc:
        return UiState(), f"{path}: cannot be read ({exc}); the screen's defaults are used."
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return UiState(), f"{path}: not JSON ({exc}); the screen's defaults are used until a choice is made."
    if not isinstance(data, dict):
        return UiState(), f"{path}: not a JSON object; the screen's defaults are used until a choice is made."
    state = UiState(unknown={key: value for key, value in data.items() if key not in KNOWN})
    wrong = []
    for name in KNOWN:
        if name in data:
            if isinstance(data[name], bool):
                setattr(state, name, data[name])
            else:
                wrong.append(name)
    problem = (f"{path}: {', '.join(wrong)} should be true or false; the default is used." if wrong else None)
    return state, problem


def save(folder: Path, state: UiState) -> None:
    """Write the choices atomically (a reader sees the old file or the new one)."""
    os.makedirs(folder, exist_ok=True)
    data = {**state.unknown, **{name: getattr(state, name) for name in KNOWN}}
    Root(folder, "Reprise's data folder").write_atomic(
        folder / FILE_NAME, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())
