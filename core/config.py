"""Reprise's settings: defaults, overridden by `config.toml`, overridden by environment
variables and command-line flags, with the source of every value kept for `reprise config`."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import paths
from .errors import ConfigError

DEFAULT_RESUME = ["fractal", "--workspace", "{workspace}", "--resume", "{session_id}"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StoreSettings(_Section):
    state_dir: str | None = None


class AgentSettings(_Section):
    backend: str | None = None
    resume: list[str] = Field(default_factory=lambda: list(DEFAULT_RESUME), min_length=1)
    turn: list[str] | None = None
    timeout: float = Field(default=600.0, gt=0)


class ModelSpec(_Section):
    """How to count for models whose name matches `pattern` (fnmatch, first match wins)."""

    pattern: str
    encoding: str = "o200k_base"
    window: int = Field(gt=0)
    overhead: int = Field(default=13_700, ge=0)
    exact: bool = False


DEFAULT_MODELS = [
    ModelSpec(pattern="gpt-5*", encoding="o200k_base", window=400_000, exact=True),
    ModelSpec(pattern="gpt-4.1*", encoding="o200k_base", window=1_047_576, exact=True),
    ModelSpec(pattern="gpt-4o*", encoding="o200k_base", window=128_000, exact=True),
    ModelSpec(pattern="o[134]*", encoding="o200k_base", window=200_000, exact=True),
    ModelSpec(pattern="gpt-4*", encoding="cl100k_base", window=128_000, exact=True),
    ModelSpec(pattern="gpt-3.5*", encoding="cl100k_base", window=16_385, exact=True),
    ModelSpec(pattern="*claude*", encoding="o200k_base", window=200_000, exact=False),
    ModelSpec(pattern="*", encoding="o200k_base", window=200_000, exact=False),
]


class MeterSettings(_Section):
    model: str | None = None
    warn: float = Field(default=0.8, gt=0, le=1)
    models: list[ModelSpec] = Field(default_factory=lambda: [m.model_copy() for m in DEFAULT_MODELS])


class HistorySettings(_Section):
    max_turns: int = Field(default=20, ge=1)


class Settings(_Section):
    store: StoreSettings = Field(default_factory=StoreSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    meter: MeterSettings = Field(default_factory=MeterSettings)
    history: HistorySettings = Field(default_factory=HistorySettings)


@dataclass(slots=True)
class LoadedSettings:
    settings: Settings
    config_path: Path
    state_root: Path
    sources: dict[str, str] = field(default_factory=dict)


def load(*, state_dir: str | None = None, config_path: Path | None = None,
         env: dict[str, str] | None = None) -> LoadedSettings:
    """Settings from defaults, the config file, the environment and a `--state-dir` flag."""
    environment = dict(os.environ if env is None else env)
    path = config_path or paths.config_file(environment)
    data = _read_toml(path)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: {where}: {first['msg']}", path=path) from None
    sources = {key: "default" for key in _flatten(Settings().model_dump())}
    for key in _flatten(data):
        sources[key] = f"config file {path}"
    root, sources["store.state_dir"] = _state_root(state_dir, environment, settings, path)
    return LoadedSettings(settings, path, root, sources)


def _state_root(flag: str | None, env: dict[str, str], settings: Settings, path: Path) -> tuple[Path, str]:
    if flag:
        return Path(flag).expanduser(), "--state-dir"
    if env.get("REPRISE_STATE_DIR"):
        return Path(env["REPRISE_STATE_DIR"]).expanduser(), "REPRISE_STATE_DIR"
    if settings.store.state_dir:
        return Path(settings.store.state_dir).expanduser(), f"config file {path}"
    root = paths.fractal_state_root(env)
    if env.get("FRACTAL_STATE_HOME"):
        return root, "FRACTAL_STATE_HOME (Fractal's state root)"
    if env.get("XDG_STATE_HOME"):
        return root, "XDG_STATE_HOME (Fractal's state root)"
    return root, "default (Fractal's state root)"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc}", path=path) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}", path=path) from None


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
    return [(key, value, loaded.sources.get(key, "default")) for key, value in sorted(values.items())]
