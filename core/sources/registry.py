"""The open registry of sources: every source, built-in or not, is a `SourceSpec` declared in the
entry-point group `reprise.sources` of an installed distribution (the mechanism pytest's plug-ins
are found by). Reprise's own three are declared in its `pyproject.toml` like any other.

The group is read from the `entry_points.txt` of each `*.dist-info`/`*.egg-info` on `sys.path`
directly: `importlib.metadata` costs 35-55 ms of every start, the scan about 1.5 ms. It is the
fallback when the scan finds no Reprise distribution at all (a zipped or unusual install).

A source that does not load (its module does not import, its attribute is not a valid spec, its
name or mark is taken) is a `LoadFailure`, said in one line, and skipped: the others keep working.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..session_files import ReadProblem, read_head
from .spec import NAME_SHAPE, SourceSpec

GROUP = "reprise.sources"
OWN_DISTRIBUTION = "reprise"
NOT_REGISTERED = "Reprise's own sources are not registered: reinstall Reprise (`pip install -e .`)"
# Ids no source may accept: they are not file names, or they hold a separator, NUL or a control character.
_UNSAFE_IDS = (".", "..", "/", "a/b", "\x00", "a\x00b", "\x01", "\t", "\n", "\x1f", "\x7f", "\x85")
_MAX_METADATA = 1 << 20   # an entry-points or metadata file larger than this is not read
_FIELD_VALUES = {"id_shown": ("head", "tail"), "workspaces": ("group", "recorded", "mapped"),
                 "resume_folder": ("any", "recorded", "exact")}


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """One `name = module:attr` of the group, and the distribution that declares it."""

    name: str
    value: str
    origin: str    # the distribution and its version: "reprise-gemini 0.3.0"
    own: bool      # declared by Reprise's own distribution


@dataclass(frozen=True, slots=True)
class LoadFailure:
    """A source that did not load or start: its entry point's name ("" when Reprise's own sources
    are not registered at all), the distribution that declares it, and why."""

    name: str
    origin: str
    reason: str

    @property
    def line(self) -> str:
        """The one line that says it, wherever it is said (stderr, `reprise config`, `doctor`, the TUI)."""
        if not self.name:
            return self.reason
        origin = f" ({self.origin})" if self.origin else ""
        return f'the source "{self.name}"{origin} did not load: {self.reason}; the other sources work'


@dataclass(frozen=True, slots=True)
class Registry:
    """The sources that loaded, in listing order (`spec.order`, then name), and those that did not."""

    specs: tuple[SourceSpec, ...]
    failures: tuple[LoadFailure, ...]
    origins: dict[str, str]   # {source name: the distribution that declares it}
    own: frozenset[str] = frozenset()   # the sources Reprise's own distribution declares

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.specs)

    def get(self, name: str) -> SourceSpec | None:
        """The spec of the source `name`, or None when no such source loaded."""
        return next((spec for spec in self.specs if spec.name == name), None)

    def failure(self, name: str) -> LoadFailure | None:
        """Why the source `name` did not load, when it is one that did not."""
        return next((failure for failure in self.failures if failure.name == name), None)


_LOADED: dict[tuple[str, ...], Registry] = {}


def registry() -> Registry:
    """The registered sources, loaded once per `sys.path` (a test that puts a distribution on the path
    sees it)."""
    key = tuple(sys.path)
    found = _LOADED.get(key)
    if found is None:
        found = _LOADED[key] = load(entry_points(key))
    return found


def spec_of(name: str) -> SourceSpec | None:
    """The spec of a registered source, or None."""
    return registry().get(name)


def short_id(source: str, session_id: str) -> str:
    """How a listing shows an id in nine characters (`SourceSpec.short_id`; the start of the id for a
    source that did not load)."""
    spec = spec_of(source)
    if spec is not None:
        return spec.short_id(session_id)
    return session_id if len(session_id) <= 9 else f"{session_id[:8]}…"


def id_argument(source: str, session_id: str) -> str:
    """The short form of an id to print in a command the user may type (`reprise trash restore ID`):
    `short_id` without its ellipsis."""
    return short_id(source, session_id).strip("…")


def load_object(dotted: str) -> object:
    """What a dotted path `package.module:attribute.path` names; ImportError or AttributeError when
    nothing is there."""
    module_name, _, attribute = dotted.partition(":")
    value: object = importlib.import_module(module_name.strip())
    for part in filter(None, attribute.strip().split(".")):
        value = getattr(value, part)
    return value


# --- finding the entry points ----------------------------------------------------------------


def entry_points(path: Iterable[str]) -> list[EntryPoint]:
    """The group's entry points of the distributions on `path`, Reprise's own first; read through
    `importlib.metadata` when the direct scan finds no Reprise distribution."""
    found, own_seen = _scan(path)
    if not own_seen:
        found = _from_metadata()
    return sorted(found, key=lambda entry: not entry.own)


def missed_by_scan(path: Iterable[str] | None = None) -> list[EntryPoint]:
    """The group's entry points `importlib.metadata` finds and the direct scan does not (for `doctor`:
    a distribution the fast reader cannot see, zipped or unusual); [] when they agree."""
    scanned = {(entry.name, entry.value) for entry in _scan(tuple(sys.path) if path is None else path)[0]}
    return [entry for entry in _from_metadata() if (entry.name, entry.value) not in scanned]


def _scan(path: Iterable[str]) -> tuple[list[EntryPoint], bool]:
    """The group's entries in each distribution's `entry_points.txt`; the first distribution of a
    name on the path wins, as in `importlib.metadata`. Also whether Reprise's own was seen."""
    seen: set[str] = set()
    found: list[EntryPoint] = []
    for folder in path:
        try:
            names = sorted(os.listdir(folder or "."))
        except OSError:
            continue
        for name in names:
            stem, dot, kind = name.rpartition(".")
            if not dot or kind not in ("dist-info", "egg-info"):
                continue
            project, _, version = stem.partition("-")
            normal = re.sub(r"[-_.]+", "-", project).lower()
            if normal in seen:
                continue
            seen.add(normal)
            text = _read_text(Path(folder or ".", name, "entry_points.txt"))
            if text is None:
                continue
            entries = _group_entries(text, GROUP)
            if entries:
                version = version.split("-")[0] or _version(Path(folder or ".", name))
                origin = f"{project} {version}" if version else project
                found += [EntryPoint(entry, value, origin, normal == OWN_DISTRIBUTION) for entry, value in entries]
    return found, OWN_DISTRIBUTION in seen


def _version(info: Path) -> str:
    """The version a distribution's metadata file states (an `.egg-info` folder's name has none)."""
    for name in ("METADATA", "PKG-INFO"):
        text = _read_text(Path(info, name))
        for line in (text or "").splitlines():
            if line.startswith("Version:"):
                return line.partition(":")[2].strip()
            if not line.strip():   # the headers end here
                break
    return ""


def _read_text(path: Path) -> str | None:
    """A distribution's small metadata file as text (through the one reader of core/session_files.py);
    None when it is missing or cannot be read."""
    try:
        data, _ = read_head(path, _MAX_METADATA)
        return data.decode("utf-8")
    except (OSError, ReadProblem, UnicodeDecodeError):
        return None


def _group_entries(text: str, group: str) -> list[tuple[str, str]]:
    """The `name = value` lines of one `[group]` of an entry-points file (an INI file)."""
    entries: list[tuple[str, str]] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
        elif inside and "=" in line:
            name, _, value = line.partition("=")
            entries.append((name.strip(), value.strip()))
    return entries


def _from_metadata() -> list[EntryPoint]:
    from importlib import metadata

    found: list[EntryPoint] = []
    for entry in metadata.entry_points(group=GROUP):
        dist = entry.dist
        project = dist.metadata["Name"] if dist is not None else ""
        origin = f"{project} {dist.version}" if dist is not None else ""
        own = re.sub(r"[-_.]+", "-", project or "").lower() == OWN_DISTRIBUTION
        found.append(EntryPoint(entry.name, entry.value, origin, own))
    return found


# --- loading and checking the specs ---------------------------------------------------------


def load(entries: Iterable[EntryPoint]) -> Registry:
    """Each entry's spec, checked; an entry that fails is a `LoadFailure` and the others load."""
    specs: dict[str, SourceSpec] = {}
    origins: dict[str, str] = {}
    own: set[str] = set()
    failures: list[LoadFailure] = []
    own_seen = False
    for entry in entries:
        own_seen = own_seen or entry.own
        try:
            spec = _checked(entry, load_object(entry.value.split("[")[0]), specs, origins)
        except Exception as exc:   # a plug-in's import may raise anything: said, and skipped
            failures.append(LoadFailure(entry.name, entry.origin, _reason(exc)))
            continue
        specs[spec.name] = spec
        origins[spec.name] = entry.origin
        if entry.own:
            own.add(spec.name)
    if not own_seen:
        failures.insert(0, LoadFailure("", OWN_DISTRIBUTION, NOT_REGISTERED))
    ordered = tuple(sorted(specs.values(), key=lambda spec: (spec.order, spec.name)))
    return Registry(ordered, tuple(failures), origins, frozenset(own))


class SpecError(ValueError):
    """A registered spec that Reprise refuses (its message says why, as one clause)."""


def _checked(entry: EntryPoint, value: object, specs: dict[str, SourceSpec], origins: dict[str, str]
             ) -> SourceSpec:
    if not isinstance(value, SourceSpec):
        raise SpecError(f"{entry.value} is a {type(value).__name__}, not a SourceSpec")
    spec = value
    if not NAME_SHAPE.fullmatch(spec.name):
        raise SpecError(f"its name {spec.name[:40]!r} is not a source name (a-z, 0-9, _ and -, "
                        "starting with a letter, at most 32 characters)")
    if spec.name != entry.name:
        raise SpecError(f"its spec is named {spec.name!r}, not {entry.name!r} as its entry point says")
    if spec.name in specs:
        raise SpecError(f"the name is taken by {origins[spec.name]}")
    if not spec.label.strip():
        raise SpecError("its label is empty")
    if len(spec.mark) != 1 or not ("A" <= spec.mark <= "Z"):
        raise SpecError(f"its mark {spec.mark[:8]!r} is not one capital letter")
    taken = next((other for other in specs.values() if other.mark == spec.mark), None)
    if taken is not None:
        raise SpecError(f"its mark {spec.mark!r} is taken by {taken.label}")
    for name, allowed in _FIELD_VALUES.items():
        if getattr(spec, name) not in allowed:
            raise SpecError(f"its {name} is {getattr(spec, name)!r}, not one of {', '.join(allowed)}")
    _check_id_pattern(spec.id_pattern)
    for name in ("factory", "listing_module"):
        if not getattr(spec, name):
            raise SpecError(f"its {name} is empty")
    if ":" not in spec.factory:
        raise SpecError(f"its factory {spec.factory!r} is not a dotted path module:attribute")
    if spec.location is None and spec.detect is None:
        raise SpecError("it names neither a store location nor a detection")
    return spec


def _check_id_pattern(pattern: str) -> None:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise SpecError(f"its id pattern does not compile: {exc}") from None
    for unsafe in _UNSAFE_IDS:
        if compiled.fullmatch(unsafe):
            shown = unsafe.encode("unicode_escape").decode("ascii")
            raise SpecError(f"its id pattern accepts {shown!r}, which is not a safe file name")


def _reason(exc: BaseException) -> str:
    """An exception as the reason a source did not load: its kind and message, on one line."""
    if isinstance(exc, SpecError):
        return f"a bad spec: {exc}"
    text = " ".join(str(exc).split())
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cc")
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__

