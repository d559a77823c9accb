"""What a source says about itself before any of its code is imported: its name, label, mark, id
shape, where its store is found, how it names workspaces, and the dotted paths of the code that
builds it. Each source's package exports one `SourceSpec` as `SPEC` (`<package>/spec.py`), declared
in the entry-point group `reprise.sources` (`registry.py` finds and checks them).

Plain frozen dataclasses and nothing else: the command line's `--source` choices read the specs, and
`reprise --help` must not import pydantic or any source's code. Everything heavy is a dotted path
(`module:attribute`) loaded on first use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from ..paths import SOURCE_NAME

NAME_SHAPE = SOURCE_NAME   # a source's name: a-z, 0-9, _ and -, starting with a letter, at most 32 characters


def _empty() -> Mapping[str, Any]:
    """A read-only empty mapping: a frozen spec's default for its tables."""
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """How an agent's store is found when the config names no roots: `$variable` when set, else
    `~/default`; a root holds sessions when its `marker` folder exists."""

    variable: str | None            # CLAUDE_CONFIG_DIR, CODEX_HOME
    variable_is_home: bool = False  # the variable names a home folder: the store is $variable/default
    default: str = ""               # ".claude", ".codex": the store's folder under HOME
    marker: str = ""                # "projects", "sessions": the folder that shows a store exists


@dataclass(frozen=True, slots=True)
class ClientSpec:
    """The real client the compat harness installs and runs offline."""

    registry: Literal["npm", "pypi"]
    packages: tuple[str, ...]       # pinned: ("@anthropic-ai/claude-code@2.1.332",)
    binary: tuple[str, ...] = ()    # globs under the install prefix; the first executable over min_size wins
    binary_env: str = ""            # the variable the compat tests read the client's path from
    min_size: int = 0               # a placeholder script is smaller than the real binary
    needs: tuple[str, ...] = ()     # system programs the compat cases need ("tmux",)
    env: Mapping[str, str] = field(default_factory=_empty)   # set while the client runs
    side_venvs: Mapping[str, tuple[str, ...]] = field(default_factory=_empty)
    offline: str = ""               # one line for the docs: how it runs against a fake server

    def __hash__(self) -> int:
        return hash((self.registry, self.packages))


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """One source, as the registry, the settings, the command line and the TUI know it."""

    name: str                       # `[sources.<name>]`, `SessionRef.source`, `--source <name>`
    label: str                      # the name people read: "Claude Code"
    mark: str                       # one capital letter, unique: the agent column and the legend
    order: int                      # where its sessions come in a listing (Fractal 0, Claude Code 10, Codex 20)
    id_pattern: str                 # a session id, matched whole (never ".", "..", "/", NUL or control characters)
    id_shown: Literal["head", "tail"] = "head"   # the part of a long id a row shows ("tail": the id starts with a time)
    settings: str | None = None     # dotted path of its settings model, the `[sources.<name>]` table
    location: StoreLocation | None = None   # how its store is found; None: `detect` decides
    detect: str | None = None       # dotted path of a detection of its own (Fractal's state root)
    workspaces: Literal["group", "recorded", "mapped"] = "recorded"   # how its store names workspaces
    factory: str = ""               # dotted path of what builds it: called as factory(roots, settings, data_dir)
    listing_module: str = ""        # the module of its listing, preloaded by the scan pool's workers
    samples: str | None = None      # dotted path of what writes sample sessions (demo, conformance suite)
    client: ClientSpec | None = None   # the real client, for the compat harness
    isolate: Mapping[str, str] = field(default_factory=_empty)   # environment set for tests ({"X": "{tmp}/x"})
    unset: tuple[str, ...] = ()     # environment removed for tests
    session_files: str = "files"    # what its session files are called in sentences ("rollouts")
    resume_folder: Literal["any", "recorded", "exact"] = "recorded"
    # any: the agent finds a session by id from any folder; recorded: it runs in the recorded folder;
    # exact: only in that very folder, refused when it is gone
    window_per_folder: bool = False   # the meter's window reads the folder's own settings
    cost_label: str = "cost"        # what the USD figure the agent records is
    rename_note: str | None = None  # what a rename in Reprise means to the agent
    trash_note: str | None = None   # what the agent does with a session in Reprise's trash
    resume_setting: str = ""        # the config key of its resume argv; "" is "[sources.<name>] resume"
    where_sessions_live: str | None = None   # the empty listing's sentence; "{root}": its store's first root
    hidden_note: str | None = None  # what the agent's own picker hides, for the legend ("`codex exec`")
    role_hints: Mapping[str, str] = field(default_factory=_empty)   # why a role is absent, by role name
    file_is_session: bool = True    # False: a row's session id comes from its fields, not its file id
    backends: Mapping[str, str] = field(default_factory=_empty)   # agent backends it offers by name: {name: class}

    def __post_init__(self) -> None:
        if not self.resume_setting:
            object.__setattr__(self, "resume_setting", f"[sources.{self.name}] resume")

    def __hash__(self) -> int:
        return hash(self.name)

    def short_id(self, session_id: str) -> str:
        """How a listing shows an id in nine characters: its start, or its end when the spec says
        `id_shown = "tail"` (ids whose first characters are a time that months of sessions share).
        Either part, without the ellipsis, names the session in an id argument when it is unique."""
        if len(session_id) <= 9:
            return session_id
        return f"…{session_id[-8:]}" if self.id_shown == "tail" else f"{session_id[:8]}…"

    def matches_id(self, session_id: str) -> bool:
        """Whether `session_id` has this source's id shape."""
        return _compiled(self.id_pattern).fullmatch(session_id) is not None


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    compiled = _PATTERNS.get(pattern)
    if compiled is None:
        compiled = _PATTERNS[pattern] = re.compile(pattern)
    return compiled


UUID_PATTERN = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
