"""Reprise's settings: defaults, overridden by `config.toml`, overridden by environment
variables and command-line flags, with the source of every value kept for `reprise config`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from . import paths
from .errors import ConfigError
from .session_files import ReadProblem, read_head
from .sources.store_location import SourceChoice as SourceChoice  # `reprise config` reads it from here
from .sources.store_location import Unset, detect_store

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .settings_models import DEFAULT_MODELS as DEFAULT_MODELS
    from .settings_models import AgentSettings as AgentSettings
    from .settings_models import HistorySettings as HistorySettings
    from .settings_models import MeterSettings as MeterSettings
    from .settings_models import ModelSpec as ModelSpec
    from .settings_models import SearchSettings as SearchSettings
    from .settings_models import Settings as Settings
    from .settings_models import SourcesSettings as SourcesSettings
    from .settings_models import StoreSettings as StoreSettings
    from .settings_models import Text as Text
    from .settings_models import describe as describe
    from .settings_models import settings_model as settings_model

# The history entries a session keeps: Fractal keeps its newest 20, and Reprise never keeps more.
HISTORY_KEPT = 20
MAX_CONFIG_BYTES = 1 << 20   # a config file larger than this is refused, never read whole

DEFAULT_OVERHEAD = 13_631  # Fractal 0.1.1's fixed prompt text, measured on a live gpt-5 turn (README)
DEFAULT_RESUME = ["fractal", "--workspace", "{workspace}", "--resume", "{session_id}"]
MAX_TIMEOUT_S = 7 * 24 * 3600
MAX_TOKENS = 100_000_000
MAX_REPLY_BYTES = 256 * 1024 * 1024  # a reply this long still leaves a session Reprise opens
DEFAULT_REPLY_BYTES = 4 * 1024 * 1024

# What a valid file is lives in `settings_models.py`, imported on first use (pydantic with it).
_MODELS = frozenset(("DEFAULT_MODELS", "AgentSettings", "HistorySettings", "MeterSettings", "ModelSpec",
                     "SearchSettings", "Settings", "SourcesSettings", "StoreSettings", "Text", "describe",
                     "settings_model"))


def __getattr__(name: str) -> object:
    if name in _MODELS:
        from . import settings_models

        return getattr(settings_models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(slots=True)
class LoadedSettings:
    """The settings of a run, the file they came from, the state root and each source's choice.
    `from_file`: the config file set something (validated as it was read); else every setting is its
    default, built (and pydantic imported) when first read, which a listing or a search never does."""

    config_path: Path
    state_root: Path
    choices: dict[str, SourceChoice]
    from_file: bool
    file_keys: tuple[str, ...]   # the dotted keys the file sets
    state_root_from: str          # what chose the state root
    _settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from .settings_models import defaults

            self._settings = defaults()
        return self._settings

    def for_sources(self) -> Settings:
        """The settings as each source's factory is given them: read through on first use, so that
        starting the sources builds nothing (a source reads its settings when it acts)."""
        return cast("Settings", _ReadOnUse(self))

    @property
    def sources(self) -> dict[str, str]:
        """Where each setting's value comes from (`default`, the file, a variable), for `reprise config`."""
        sources = dict.fromkeys(_keys(self.settings), "default")
        for key in self.file_keys:
            sources[key] = f"config file {self.config_path}"
        sources["store.state_dir"] = self.state_root_from
        return sources


class _ReadOnUse:
    """`LoadedSettings.settings`, its sections read when first asked for."""

    __slots__ = ("_loaded",)

    def __init__(self, loaded: LoadedSettings) -> None:
        self._loaded = loaded

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loaded.settings, name)


def load(*, state_dir: str | None = None, config_path: Path | None = None,
         env: dict[str, str] | None = None) -> LoadedSettings:
    """Settings from defaults, the config file, the environment and a `--state-dir` flag."""
    environment = dict(os.environ if env is None else env)
    path = config_path or paths.config_file(environment)
    data = _read_toml(path)
    settings: Settings | None = None
    if data:
        from .settings_models import validated

        settings = validated(data, path)
    root, where = _state_root(state_dir, environment, settings.store.state_dir if settings else None, path)
    choices = _choices(settings, environment, path, root, where)
    return LoadedSettings(path, root, choices, settings is not None, tuple(_flatten(data)), where, settings)


def _broken_models(with_file: bool) -> dict[str, str]:
    """The sources whose settings model did not load (each is off, and says why). Reprise's own models
    load (a test imports each): a run with no settings to validate loads only the plug-ins' ones."""
    from .sources.registry import registry

    found = registry()
    if not with_file and all(spec.settings is None or spec.name in found.own for spec in found.specs):
        return {}
    from .settings_models import broken_models

    return broken_models()


def _choices(settings: Settings | None, env: dict[str, str], path: Path, state_root: Path,
             where: str) -> dict[str, SourceChoice]:
    """Whether each registered source is on, from which roots, and why: by its store location (the
    generic detection) or by a detection of its own (Fractal: always on, at the state root).
    `settings` is None when the file sets nothing: every source's table is unset."""
    from .sources.registry import load_object, registry

    broken = _broken_models(settings is not None)
    choices: dict[str, SourceChoice] = {}
    for spec in registry().specs:
        if spec.name in broken:
            choices[spec.name] = SourceChoice(spec.name, False, (), f"off: {broken[spec.name]}")
        elif spec.location is not None:
            section = getattr(settings.sources, spec.name, None) if settings is not None else None
            choices[spec.name] = detect_store(spec, section or Unset(), env, path)
        elif spec.detect is not None:
            try:
                detect = load_object(spec.detect)
                enabled, roots, why = detect(state_root, where)  # type: ignore[operator]
            except Exception as exc:   # a plug-in's detection may raise anything: the source is off, and says why
                enabled, roots, why = False, (), f"off: its detection failed: {type(exc).__name__}: {exc}"
            choices[spec.name] = SourceChoice(spec.name, bool(enabled), tuple(roots), str(why))
    return choices


def _state_root(flag: str | None, env: dict[str, str], configured: str | None, path: Path) -> tuple[Path, str]:
    """The state root and what chose it; `configured`: the file's `[store] state_dir`."""
    if flag:
        return Path(flag).expanduser(), "--state-dir"
    if env.get("REPRISE_STATE_DIR"):
        return Path(env["REPRISE_STATE_DIR"]).expanduser(), "REPRISE_STATE_DIR"
    if configured:
        return Path(configured).expanduser(), f"config file {path}"
    root = paths.fractal_state_root(env)
    if env.get("FRACTAL_STATE_HOME"):
        return root, "FRACTAL_STATE_HOME (Fractal's state root)"
    if env.get("XDG_STATE_HOME"):
        return root, "XDG_STATE_HOME (Fractal's state root)"
    return root, "default (Fractal's state root)"


def _read_toml(path: Path) -> dict[str, Any]:
    try:   # a regular file only, opened without blocking
        data, size = read_head(path, MAX_CONFIG_BYTES)
        if size > MAX_CONFIG_BYTES:
            raise ReadProblem("too_large", f"{size:,} bytes is over the {MAX_CONFIG_BYTES:,}-byte limit")
        text = data.decode("utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc}", path=path) from None
    except ReadProblem as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.message}", path=path) from None
    import tomllib  # only when there is a file: most runs have none

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}", path=path) from None


def _keys(section: BaseModel, prefix: str = "") -> list[str]:
    """The dotted key of every setting, in order (`meter.warn`), read from the models without dumping them."""
    import pydantic

    keys: list[str] = []
    for name in type(section).model_fields:
        value = getattr(section, name)
        if isinstance(value, pydantic.BaseModel):
            keys += _keys(value, f"{prefix}{name}.")
        else:
            keys.append(f"{prefix}{name}")
    return keys


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def effective(loaded: LoadedSettings) -> list[tuple[str, Any, str]]:
    """(key, value, source) for every setting, for `reprise config`."""
    values = _flatten(loaded.settings.model_dump(mode="json"))
    values["store.state_dir"] = str(loaded.state_root)
    sources = loaded.sources
    return [(key, value, sources.get(key, "default")) for key, value in sorted(values.items())]
