"""What a valid config file is: each section's pydantic model (validated strictly), the `[sources]`
tables built from the registered sources' own models, and the one line that says what a file has
wrong. Imported only when a config file sets something or a setting is read (`config.py`): pydantic
and these models cost a listing 80 ms."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    model_validator,
)

from . import tokens
from .config import (
    DEFAULT_OVERHEAD,
    DEFAULT_REPLY_BYTES,
    DEFAULT_RESUME,
    HISTORY_KEPT,
    MAX_REPLY_BYTES,
    MAX_TIMEOUT_S,
    MAX_TOKENS,
)
from .errors import ConfigError


def _no_nul(text: str) -> str:
    if "\x00" in text:
        raise ValueError("must not contain a NUL character")
    return text


def _known_encoding(name: str) -> str:
    if name not in tokens.ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; the bundled ones are {', '.join(tokens.ENCODINGS)}")
    return name


def _known_backend(name: str) -> str:
    from .backend_names import backend_names  # the specs' backends: read when a config names one

    if name not in (names := backend_names()):
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(names)}")
    return name


Text = Annotated[str, AfterValidator(_no_nul)]


class _Section(BaseModel):
    """Every section: unknown keys are errors, types are TOML's own (no "600" for 600, no 1.0 for 1,
    no 1 for true), numbers are finite; each number field also carries its own range."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, defer_build=True)  # built on first use


class StoreSettings(_Section):
    state_dir: Text | None = None


class AgentSettings(_Section):
    backend: Annotated[Text, AfterValidator(_known_backend)] | None = None
    resume: list[Text] = Field(default_factory=lambda: list(DEFAULT_RESUME), min_length=1)
    turn: list[Text] | None = Field(default=None, min_length=1)
    timeout: float = Field(default=600.0, gt=0, le=MAX_TIMEOUT_S)
    max_reply_bytes: int = Field(default=DEFAULT_REPLY_BYTES, ge=1024, le=MAX_REPLY_BYTES)


class ModelSpec(_Section):
    """How to count for models whose name matches `pattern` (fnmatch, first match wins).

    `window` is the input budget, what the prompt may hold. Given only `context_window` and
    `max_output` (the output the model reserves), it is their difference.
    """

    pattern: Text = Field(min_length=1)
    encoding: Annotated[Text, AfterValidator(_known_encoding)] = "o200k_base"
    window: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    context_window: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    max_output: int | None = Field(default=None, ge=0, le=MAX_TOKENS)
    overhead: int = Field(default=DEFAULT_OVERHEAD, ge=0, le=MAX_TOKENS)
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
    """A built-in model, not validated (a test does): building ModelSpec's validator at import cost
    every command 10 ms."""
    return ModelSpec.model_construct(pattern=pattern, encoding=encoding, window=context_window - max_output,
                                     context_window=context_window, max_output=max_output, exact=exact)


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
    model: Text | None = None
    warn: float = Field(default=0.8, gt=0, le=1)
    models: list[ModelSpec] = Field(default_factory=lambda: [m.model_copy() for m in DEFAULT_MODELS])


class HistorySettings(_Section):
    max_turns: int = Field(default=HISTORY_KEPT, ge=1, le=HISTORY_KEPT)


class SourcesSettings(_Section):
    """`[sources]`: `new_agent`, and one table per registered source that has settings
    (`[sources.<name>]`, its spec's model), added when the model is built (`settings_model`)."""

    new_agent: Text | None = None   # `reprise new`'s agent when more than one is on; checked against the registry

    if TYPE_CHECKING:   # each source's table is a field of the model built from the registry
        def __getattr__(self, name: str) -> Any: ...

    def section(self, name: str) -> BaseModel | None:
        """The `[sources.<name>]` table of a source, or None when the source has none."""
        value = getattr(self, name, None)
        return value if isinstance(value, BaseModel) else None

    def keeps_before_sweep(self, name: str) -> bool:
        """Whether the settings of the source `name` ask to keep what its agent's sweep deletes within the week."""
        return getattr(self.section(name), "keep_before_sweep", False) is True


class SearchSettings(_Section):
    """`[search]`: the full-text index. `index = false` builds and reads none (every search scans the
    files); `max_mb` caps it (beyond it the files left out are scanned by each search)."""

    index: bool = True
    max_mb: int | None = Field(default=None, ge=1, le=1_000_000)

    @property
    def max_bytes(self) -> int | None:
        return None if self.max_mb is None else self.max_mb << 20


class _Settings(_Section):
    """Every section. Fractal's are the top-level `[agent]`, `[store]` and `[history]` (the one legacy
    exception: users' files have them); every other source has its `[sources.<name>]` table."""

    store: StoreSettings = Field(default_factory=StoreSettings.model_construct)
    agent: AgentSettings = Field(default_factory=AgentSettings.model_construct)
    meter: MeterSettings = Field(default_factory=MeterSettings.model_construct)
    history: HistorySettings = Field(default_factory=HistorySettings.model_construct)
    sources: SourcesSettings = Field(default_factory=SourcesSettings.model_construct)
    search: SearchSettings = Field(default_factory=SearchSettings.model_construct)


if TYPE_CHECKING:
    Settings = _Settings
else:
    def __getattr__(name: str) -> object:
        if name == "Settings":   # the model of the registered sources' tables (`settings_model`)
            return settings_model()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, slots=True)
class _Built:
    """The settings model of one registry, and the sources whose settings model did not load (why)."""

    model: type[_Settings]
    broken: dict[str, str]


_BUILT: dict[int, tuple[object, _Built]] = {}


def settings_model() -> type[_Settings]:
    """`Settings` with `[sources]` holding a table per registered source that has settings: its spec's
    model, validated like every section. A source that did not load (or whose settings model did not)
    may keep its table: it is taken unchecked, since nothing reads it."""
    return _built().model


def _built() -> _Built:
    from .sources.registry import load_object, registry
    from .sources.settings import SourceSettings

    found = registry()
    cached = _BUILT.get(id(found))
    if cached is not None and cached[0] is found:
        return cached[1]
    tables: dict[str, Any] = {}
    broken: dict[str, str] = {}
    for spec in found.specs:
        if spec.settings is None:
            continue
        try:
            model = load_object(spec.settings)
            if not (isinstance(model, type) and issubclass(model, SourceSettings)):
                raise TypeError(f"{spec.settings} is not a SourceSettings model")
        except Exception as exc:   # a plug-in's import may raise anything: its source is off, and says why
            broken[spec.name] = f"its settings model did not load: {type(exc).__name__}: {exc}"
            tables[spec.name] = (dict[str, Any] | None, None)
            continue
        tables[spec.name] = (model, Field(default_factory=model.model_construct))
    for failure in found.failures:
        if failure.name and failure.name not in tables and failure.name != "new_agent":
            tables[failure.name] = (dict[str, Any] | None, None)
    sources = create_model("SourcesSettings", __base__=SourcesSettings, **tables)
    model = create_model("Settings", __base__=_Settings,
                         sources=(sources, Field(default_factory=sources.model_construct)))
    built = _Built(model, broken)
    _BUILT[id(found)] = (found, built)
    return built


def broken_models() -> dict[str, str]:
    """The registered sources whose settings model did not load, and why: each of them is off."""
    return _built().broken


def defaults() -> _Settings:
    """Every setting at its default, without building the validators (20 ms)."""
    return settings_model().model_construct()


def validated(data: dict[str, Any], path: Path) -> _Settings:
    """The settings a config file's `data` gives, checked: a ConfigError names the file, the first
    wrong key and what is wrong with it."""
    try:
        settings = settings_model().model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe(exc, path), path=path) from None
    _check_new_agent(settings, path)
    return settings


def _check_new_agent(settings: _Settings, path: Path) -> None:
    """`[sources] new_agent` names a registered source (the registry decides, not a fixed list)."""
    from .sources.registry import registry

    wanted, names = settings.sources.new_agent, registry().names
    if wanted is not None and wanted not in names:
        raise ConfigError(f"{path}: sources.new_agent: unknown agent {_shown(wanted)}; the sources are "
                          f"{', '.join(names)}", path=path)


def describe(exc: ValidationError, path: Path) -> str:
    """One line: the file, the first wrong key (as `meter.models[0].encoding`), what is wrong with it."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = first["loc"]
    key = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".") or "(top level)"
    kind, message = first["type"], first["msg"]
    if kind == "extra_forbidden":
        known = _model_at(loc[:-1]).model_fields
        message = f"unknown key; the keys here are {', '.join(known)}"
    elif kind == "missing":
        message = "is required here"
    elif kind == "value_error":
        message = message.removeprefix("Value error, ")
    elif kind in ("too_short", "too_long"):
        message = message.replace("List should have", "must have").replace(" after validation", "")
    else:
        message = _WANTED.get(kind) or message.replace("Input should be", "must be").replace(
            "less than or equal to", "at most").replace("greater than or equal to", "at least")
        message = f"{message} (got {_shown(first['input'])})"
    more = (f"; and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''} in this file"
            if len(errors) > 1 else "")
    return f"{path}: {key}: {message}{more}"


_WANTED = {"int_type": "must be an integer", "float_type": "must be a number", "string_type": "must be a string",
           "bool_type": "must be true or false", "list_type": "must be an array", "model_type": "must be a table",
           "dict_type": "must be a table", "literal_error": None}


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel]:
    """The settings model that holds the key at `loc` (list indexes skipped)."""
    model: type[BaseModel] = settings_model()
    for part in loc:
        if isinstance(part, str):
            annotation = model.model_fields[part].annotation
            model = next(arg for arg in (annotation, *getattr(annotation, "__args__", ()))
                         if isinstance(arg, type) and issubclass(arg, BaseModel))
    return model


def _shown(value: Any) -> str:
    """A value as it reads in TOML, kept short."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        text = json.dumps(value)
        return text if len(text) <= 60 else text[:57] + '..."'
    return str(value)


