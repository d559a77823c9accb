"""Reprise's settings: defaults, overridden by `config.toml`, overridden by environment
variables and command-line flags, with the source of every value kept for `reprise config`."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from . import paths
from .errors import ConfigError

DEFAULT_OVERHEAD = 13_631  # Fractal 0.1.1's fixed prompt text, measured on a live gpt-5 turn (README)
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
    """How to count for models whose name matches `pattern` (fnmatch, first match wins).

    `window` is the input budget, what the prompt may hold. Given only `context_window` and
    `max_output` (the output the model reserves), it is their difference.
    """

    pattern: str
    encoding: str = "o200k_base"
    window: int | None = Field(default=None, gt=0)
    context_window: int | None = Field(default=None, gt=0)
    max_output: int | None = Field(default=None, ge=0)
    overhead: int = Field(default=DEFAULT_OVERHEAD, ge=0)
    exact: bool = False

    @model_validator(mode="after")
    def _derive_window(self) -> ModelSpec:
        if self.window is None:
            if self.context_window is None or self.max_output is None:
                raise ValueError("give window (the input budget), or context_window and max_output")
            if self.max_output >= self.context_window:
                raise ValueError("max_output must be smaller than context_window")
            self.window = self.context_window - self.max_output
        elif self.context_window is not None and self.window > self.context_window:
            raise ValueError("window (the input budget) cannot exceed context_window")
        return self

    @property
    def input_budget(self) -> int:
        return self.window or 0


def _table(pattern: str, encoding: str, context_window: int, max_output: int, exact: bool) -> ModelSpec:
    return ModelSpec(pattern=pattern, encoding=encoding, context_window=context_window, max_output=max_output,
                     exact=exact)


# Context window and the output each model reserves (OpenAI's model pages; Claude's 200,000 includes
# the `max_tokens` Claude Code asks for, 32,000).
DEFAULT_MODELS = [
    _table("gpt-5*", "o200k_base", 400_000, 128_000, True),
    _table("gpt-4.1*", "o200k_base", 1_047_576, 32_768, True),
    _table("gpt-4o*", "o200k_base", 128_000, 16_384, True),
    _table("o[134]*", "o200k_base", 200_000, 100_000, True),
    _table("gpt-4*", "cl100k_base", 128_000, 4_096, True),
    _table("gpt-3.5*", "cl100k_base", 16_385, 4_096, True),
    _table("*claude*", "o200k_base", 200_000, 32_000, False),
    _table("*", "o200k_base", 200_000, 32_000, False),
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
