"""What a context meter reports, the same for every source: the next turn's parts, each with
its token figure and its basis (counted with a bundled tokenizer, configured, measured by the
provider, or failed), the window they are measured against, and the shared digest-keyed token
count cache. Each source builds its parts its own way (Fractal's: core/sources/fractal/meter.py).
"""

from __future__ import annotations

import fnmatch
import hashlib
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from . import tokens
from .errors import OverWindowError

if TYPE_CHECKING:
    from .settings_models import MeterSettings, ModelSpec

CONFIGURED, COUNTED, FAILED, MEASURED = "configured", "counted", "failed", "measured"
ESTIMATED = "estimated"              # counted with a tokenizer that is not the model's, or derived from figures
CALIBRATED = "calibrated estimate"   # a bundled tokenizer's count scaled by the session's calibration factor

SEND, RESUME = "send", "resume"      # how the next turn goes: `[sources.*] send` (-p / exec), or the agent's own TUI
VIAS = (SEND, RESUME)


@dataclass(frozen=True, slots=True)
class Part:
    name: str
    tokens: int | None
    basis: str
    chars: int = 0
    full_chars: int | None = None
    note: str | None = None
    error: str | None = None
    text: str | None = field(default=None, repr=False, compare=False)  # the counted text, when kept


@dataclass(frozen=True, slots=True)
class Measured:
    turn: int
    tokens: int

    @property
    def label(self) -> str:
        return f"prompt size of the last model call of turn {self.turn}"


@dataclass(frozen=True, slots=True)
class ContextLimit:
    """A model's window and the share of it at which the meter warns: the one rule for ok, warn, over
    and unknown (no window known for the model: no share, never over)."""

    window: int | None
    warn_at: float

    def share(self, total: int) -> float | None:
        return None if self.window is None else total / self.window

    def state(self, total: int) -> str:
        ratio = self.share(total)
        if ratio is None:
            return "unknown"
        return "over" if ratio > 1 else "warn" if ratio >= self.warn_at else "ok"


@dataclass(frozen=True, slots=True)
class MeterResult:
    model: str
    model_source: str
    encoding: str
    parts: tuple[Part, ...]
    window: int | None                # None: the model's window is not known (no share, never over)
    warn_at: float
    measured: Measured | None
    exact: bool
    window_source: str = "model table"
    draft: int = 0  # the total with this draft minus the total with an empty composer
    via: str = SEND
    compacts_at: int | None = None    # the total at which the agent compacts on its own, when known
    calibration: float | None = None  # the factor applied to the parts whose basis is CALIBRATED

    @property
    def total(self) -> int:
        return sum(part.tokens or 0 for part in self.parts)

    @property
    def percent(self) -> float | None:
        return None if self.window is None else 100.0 * self.total / self.window

    @property
    def state(self) -> str:
        return ContextLimit(self.window, self.warn_at).state(self.total)

    def sendable(self, *, confirm_over: bool) -> MeterResult:
        """This result, unless the turn is over the window and not confirmed (OverWindowError)."""
        if self.state == "over" and not confirm_over:
            raise OverWindowError(f"The next turn would send {self.total:,} tokens, over the {self.window:,}-token "
                                  f"window of {self.model}.", hint="trim the session first, or confirm to send anyway")
        return self

    def part(self, name: str) -> Part:
        return next(part for part in self.parts if part.name == name)


class LiveMeter(Protocol):
    """A session's meter with everything but the draft counted: a keystroke counts only what the draft changes."""

    @property
    def base_total(self) -> int: ...

    def with_message(self, message: str) -> MeterResult: ...


class DraftMeter(ABC):
    """A `LiveMeter` whose every part but the draft is known (a measured context, as Claude Code and
    Codex record it), for the model `chosen_model` picks: the result with an empty draft and with the
    last draft are kept, so a keystroke counts only the draft."""

    def __init__(self, settings: MeterSettings, counter: TokenCounter, *, model: str | None,
                 recorded: tuple[str | None, str], default: tuple[str, str], via: str = SEND):
        self.settings = settings
        self.counter = counter
        self.via = via
        self.model, self.model_source = chosen_model(model, settings.model, recorded, default)
        self.spec = spec_for(self.model, settings.models)
        self._empty: MeterResult | None = None
        self._last: tuple[str, MeterResult] | None = None

    @abstractmethod
    def _result(self, message: str) -> MeterResult:
        """The next turn's meter with this draft."""

    @property
    def base_total(self) -> int:
        return self.with_message("").total

    def with_message(self, message: str) -> MeterResult:
        if not message:
            if self._empty is None:
                self._empty = self._result("")
            return self._empty
        if self._last is None or self._last[0] != message:
            self._last = (message, self._result(message))
        return self._last[1]


def chosen_model(model: str | None, configured: str | None, recorded: tuple[str | None, str],
                 default: tuple[str, str]) -> tuple[str, str]:
    """(the model a meter counts for, why): `--model`, else `[meter] model`, else the one the session
    recorded (with where), else the default (with why)."""
    if model:
        return model, "--model"
    if configured:
        return configured, "config meter.model"
    if recorded[0]:
        return recorded[0], recorded[1]
    return default


def spec_for(model: str, specs: list[ModelSpec]) -> ModelSpec:
    """The first spec whose pattern matches the model name, with or without its provider prefix."""
    from .settings_models import DEFAULT_MODELS

    bare = model.rsplit("/", 1)[-1]
    for spec in specs:
        if fnmatch.fnmatchcase(bare, spec.pattern) or fnmatch.fnmatchcase(model, spec.pattern):
            return spec
    return DEFAULT_MODELS[-1]


def user_spec(model: str, specs: list[ModelSpec]) -> ModelSpec | None:
    """The first `[[meter.models]]` entry the user configured (not one of the defaults) that
    matches the model: it wins over any agent's own table."""
    from .settings_models import DEFAULT_MODELS

    bare = model.rsplit("/", 1)[-1]
    for spec in specs:
        if spec in DEFAULT_MODELS:
            continue
        if fnmatch.fnmatchcase(bare, spec.pattern) or fnmatch.fnmatchcase(model, spec.pattern):
            return spec
    return None


def _text_digest(text: str, chunk: int = 1 << 20) -> bytes:
    """The cache key of a text: its UTF-8 (surrogates passed through) hashed a slice at a time,
    so a huge text is not copied whole to be hashed."""
    digest = hashlib.blake2b(digest_size=16)
    for start in range(0, len(text), chunk):
        digest.update(text[start:start + chunk].encode("utf-8", "surrogatepass"))
    return digest.digest()


class TokenCounter:
    """Counts texts with a digest-keyed cache shared by every session it measures (thread-safe)."""

    def __init__(self, *, cache_size: int = 4096):
        self._cache: OrderedDict[tuple[str, bytes], int] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def count(self, text: str, encoding: str) -> int:
        key = (encoding, _text_digest(text))
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        value = tokens.count_tokens(text, encoding)
        with self._lock:
            self._cache[key] = value
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return value

