"""Whether an agent's store is read, and from which roots: the one detection every source with a
`StoreLocation` shares (its roots from the config, else its variable, else its default folder under
HOME; on when a root holds its marker folder, unless the config says `enabled`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .spec import SourceSpec, StoreLocation


@dataclass(frozen=True, slots=True)
class SourceChoice:
    """Whether one agent's store is read, from which roots, and why (for `reprise config`)."""

    name: str
    enabled: bool
    roots: tuple[Path, ...]
    why: str


@dataclass(frozen=True, slots=True)
class StoreRoot:
    """One root folder of an agent's store (a folder its variable, its default or the config names);
    each agent's layout names the folders and files under it."""

    path: Path


class StoreSection(Protocol):
    """What the detection reads of a source's `[sources.<name>]` table."""

    @property
    def enabled(self) -> bool | None: ...

    @property
    def roots(self) -> Sequence[str] | None: ...


@dataclass(frozen=True, slots=True)
class Unset:
    """A source without a settings table: neither `enabled` nor `roots` is set."""

    enabled: bool | None = None
    roots: Sequence[str] | None = None


def default_roots(location: StoreLocation, env: Mapping[str, str]) -> tuple[tuple[Path, ...], str]:
    """The roots when the config names none, and where they came from (for `reprise config`)."""
    home = Path(env.get("HOME") or Path.home())
    if location.variable and env.get(location.variable):
        folder = Path(env[location.variable]).expanduser()
        return ((folder / location.default if location.variable_is_home else folder),), location.variable
    return (home / location.default,), f"the default (~/{location.default})"


def detect_store(spec: SourceSpec, chosen: StoreSection, env: Mapping[str, str], path: Path) -> SourceChoice:
    """Whether the store of `spec` (which has a `location`) is read, from which roots, and why;
    `chosen` is its settings table, `path` the config file."""
    location = spec.location
    assert location is not None, "detect_store is for a source with a store location"
    name = spec.name
    if chosen.roots is not None:
        roots, where = tuple(Path(root).expanduser() for root in chosen.roots), f"the config file {path}"
    else:
        roots, where = default_roots(location, env)
    found, unreadable = [], []
    for root in roots:
        try:
            if (root / location.marker).is_dir():
                found.append(root)
        except OSError as exc:   # a root the user may not look into is not listed, and says why
            unreadable.append(f"{root} ({exc.strerror or exc})")
    shown = ", ".join(str(root) for root in roots)
    if unreadable and not found and chosen.enabled is not True:
        return SourceChoice(name, False, roots, f"off: cannot look into {', '.join(unreadable)}")
    if chosen.enabled is False:
        return SourceChoice(name, False, roots, f"off: enabled = false in {path}")
    if chosen.enabled is True:
        return SourceChoice(name, True, roots, f"on: enabled = true in {path}; roots from {where}")
    if found:
        return SourceChoice(name, True, tuple(found), f"on: a {spec.label} store exists at "
                            f"{', '.join(str(root) for root in found)} (roots from {where})")
    return SourceChoice(name, False, roots, f"off: no {spec.label} store (no {location.marker}/ folder) at {shown} "
                        f"(roots from {where})")
