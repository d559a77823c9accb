"""The context meter: the next turn's first prompt, assembled the way Fractal assembles it,
counted part by part with a bundled tokenizer, each figure labelled with its basis.

Parts (format reference, "The next-turn context in Fractal"): the configured fixed
`overhead`, the workspace `agents_md` section, the rendered `summary`, and the prompt
previews of the `history` and `message` variables. Each counted text is cached by its
digest, and `PreparedMeter` counts the session parts once so a keystroke re-tokenizes only
the message.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import threading
import tomllib
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import tokens
from .config import MeterSettings, ModelSpec
from .models import FRACTAL_MAX_HISTORY, SessionState, last_measured_context
from .rooted import FileProblem, read_regular
from .summary import EMPTY_SUMMARY, render_summary

DEFAULT_MODEL = "gpt-5"
AGENTS_MD_LIMIT = 20_000
AGENTS_MD_READ_CAP = 4 * 1024 * 1024
AGENTS_MD_NOTICE = "\n\n[AGENTS.md truncated — read the full file from the workspace.]"
AGENTS_MD_HEADING = (
    "\n## Workspace instructions (AGENTS.md)\n\n"
    "The workspace contains an AGENTS.md file with project-specific guidance from\n"
    "the user. Follow it when working in this workspace; the current `user_message`\n"
    "takes precedence if they conflict.\n\n"
)
PREVIEW_CHARS = 1000
# The agent's prompt adapter indents every line of the instructions (AGENTS.md and summary
# included) by eight spaces; a compat test checks the parts against the prompt Fractal builds.
INSTRUCTION_INDENT = " " * 8
MESSAGE_DESC = "The user's current request for this turn."
HISTORY_DESC = ("Full prior Fractal turn history, including file, command, and PredictRLM trace "
                "details for exact recall from Python.")
CONFIGURED, COUNTED, FAILED = "configured", "counted", "failed"


@dataclass(frozen=True, slots=True)
class Part:
    name: str
    tokens: int | None
    basis: str
    chars: int = 0
    full_chars: int | None = None
    note: str | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "tokens": self.tokens, "basis": self.basis, "chars": self.chars,
                "full_chars": self.full_chars, "note": self.note, "error": self.error}


@dataclass(frozen=True, slots=True)
class Measured:
    turn: int
    tokens: int

    @property
    def label(self) -> str:
        return f"prompt size of the last model call of turn {self.turn}"

    def as_dict(self) -> dict[str, Any]:
        return {"turn": self.turn, "tokens": self.tokens, "label": self.label}


@dataclass(frozen=True, slots=True)
class MeterResult:
    model: str
    model_source: str
    encoding: str
    parts: tuple[Part, ...]
    window: int
    warn_at: float
    measured: Measured | None
    exact: bool

    @property
    def total(self) -> int:
        return sum(part.tokens or 0 for part in self.parts)

    @property
    def percent(self) -> float:
        return 100.0 * self.total / self.window

    @property
    def state(self) -> str:
        ratio = self.total / self.window
        return "over" if ratio > 1 else "warn" if ratio >= self.warn_at else "ok"

    def part(self, name: str) -> Part:
        return next(part for part in self.parts if part.name == name)

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "model_source": self.model_source, "encoding": self.encoding,
                "parts": [part.as_dict() for part in self.parts], "total": self.total, "window": self.window,
                "percent": round(self.percent, 2), "state": self.state, "exact": self.exact,
                "measured": self.measured.as_dict() if self.measured else None}


def variable_block(name: str, type_name: str, desc: str, value_str: str) -> str:
    """How the agent shows an input variable in the prompt: type, length and a ~1,000-character
    preview, quoted as one item of the prompt's variable list."""
    if len(value_str) > PREVIEW_CHARS:
        half = PREVIEW_CHARS // 2
        preview = value_str[:half] + "..." + value_str[-half:]
    else:
        preview = value_str
    block = (f"Variable: `{name}` (access it in your code)\nType: {type_name}\nDescription: {desc}\n"
             f"Total length: {len(value_str):,} characters\nPreview:\n```\n{preview}\n```")
    return "«««\n    " + block.replace("\n", "\n    ") + "\n»»»"


def history_text(state: SessionState) -> str:
    """The `session_history` value as the agent serialises it (the last 20 turns)."""
    turns = state.history[-FRACTAL_MAX_HISTORY:]
    return json.dumps([turn.model_dump(mode="json") for turn in turns], indent=2)


def as_instructions(text: str) -> str:
    """Text as it stands inside the agent's instructions: every line indented, empty ones too."""
    return "\n".join(INSTRUCTION_INDENT + line for line in text.split("\n"))


def agents_md_section(workspace: Path | None) -> tuple[str, int | None, str | None]:
    """(prompt section, full characters, note) for the workspace's AGENTS.md, cut as the agent cuts it."""
    if workspace is None:
        return "", None, "the workspace folder is unknown, so its AGENTS.md is not counted"
    path = workspace / "AGENTS.md"
    try:  # the repository may be hostile: a regular file only, opened without blocking, read capped
        data, size = read_regular(path, AGENTS_MD_READ_CAP)
        raw = data.decode("utf-8") if size <= AGENTS_MD_READ_CAP else data.decode("utf-8", "ignore")
    except FileNotFoundError:
        return "", None, "no AGENTS.md in the workspace"
    except UnicodeDecodeError:
        return "", None, "AGENTS.md is not UTF-8; the agent ignores it"
    except FileProblem as exc:
        return "", None, f"AGENTS.md cannot be read ({exc.reason}); it is not counted"
    except OSError as exc:
        return "", None, f"AGENTS.md cannot be read ({exc.strerror or exc}); the agent ignores it"
    text = raw.strip()
    full = len(text)
    note = None
    if len(text) > AGENTS_MD_LIMIT:
        text = text[:AGENTS_MD_LIMIT] + AGENTS_MD_NOTICE
        of = f"{full:,} characters" if size <= AGENTS_MD_READ_CAP else f"a {size:,}-byte file"
        note = f"cut at {AGENTS_MD_LIMIT:,} of {of}"
    if not text:
        return "", full, "AGENTS.md is empty"
    return as_instructions((AGENTS_MD_HEADING + text).strip("\n")), full, note


def fractal_configured_model(workspace: Path | None, env: dict[str, str] | None = None) -> str | None:
    """Fractal's active model: FRACTAL_MODEL, else the project's .fractal/config.toml, else its global config."""
    environment = os.environ if env is None else env
    if environment.get("FRACTAL_MODEL"):
        return environment["FRACTAL_MODEL"]
    xdg = environment.get("XDG_CONFIG_HOME")
    global_path = Path(xdg).expanduser() / "fractal" / "config.toml" if xdg else Path.home() / ".config/fractal/config.toml"
    candidates = [workspace / ".fractal" / "config.toml"] if workspace else []
    for path in (*candidates, global_path):
        try:
            model = tomllib.loads(path.read_text(encoding="utf-8")).get("active_model")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if isinstance(model, str) and model:
            return model
    return None


def spec_for(model: str, specs: list[ModelSpec]) -> ModelSpec:
    """The first spec whose pattern matches the model name, with or without its provider prefix."""
    bare = model.rsplit("/", 1)[-1]
    for spec in specs:
        if fnmatch.fnmatchcase(bare, spec.pattern) or fnmatch.fnmatchcase(model, spec.pattern):
            return spec
    return ModelSpec(pattern="*", window=200_000)


class Meter:
    """Counts with a digest-keyed cache shared by every session it measures (thread-safe)."""

    def __init__(self, settings: MeterSettings, *, cache_size: int = 4096):
        self.settings = settings
        self._cache: OrderedDict[tuple[str, bytes], int] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def resolve_model(self, workspace: Path | None, override: str | None = None) -> tuple[str, str]:
        if override:
            return override, "--model"
        if self.settings.model:
            return self.settings.model, "[meter] model"
        fractal = fractal_configured_model(workspace)
        if fractal:
            return fractal, "Fractal's configured model"
        return DEFAULT_MODEL, "default"

    def count(self, text: str, encoding: str) -> int:
        key = (encoding, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest())
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

    def prepare(self, state: SessionState, workspace: Path | None, *, model: str | None = None) -> PreparedMeter:
        """Count everything but the message; the result measures any message cheaply."""
        name, source = self.resolve_model(workspace, model)
        spec = spec_for(name, self.settings.models)
        encoding = spec.encoding
        parts = [Part("overhead", spec.overhead, CONFIGURED,
                      note="the agent's fixed instructions and tool descriptions, as configured")]
        parts.append(self._counted("agents_md", encoding, lambda: agents_md_section(workspace)))
        parts.append(self._counted("summary", encoding, lambda: (as_instructions(
            render_summary(state.summary).strip() or EMPTY_SUMMARY), None, None)))
        parts.append(self._counted("history", encoding, lambda: self._history_part(state)))
        measured = last_measured_context(state)
        return PreparedMeter(self, name, source, spec, tuple(parts),
                             Measured(*measured) if measured else None)

    @staticmethod
    def _history_part(state: SessionState) -> tuple[str, int, str]:
        full = history_text(state)
        return (variable_block("session_history", "list", HISTORY_DESC, full), len(full),
                "only a preview enters the prompt; the full history is available to the agent, not in the prompt")

    def _counted(self, name: str, encoding: str, build) -> Part:
        try:
            text, full, note = build()
            return Part(name, self.count(text, encoding) if text else 0, COUNTED, len(text), full, note)
        except Exception as exc:  # reported on the part; the other parts still count
            return Part(name, None, FAILED, error=f"{type(exc).__name__}: {exc}")

    def measure(self, state: SessionState, workspace: Path | None, message: str = "", *,
                model: str | None = None) -> MeterResult:
        return self.prepare(state, workspace, model=model).with_message(message)


@dataclass(slots=True)
class PreparedMeter:
    meter: Meter
    model: str
    model_source: str
    spec: ModelSpec
    session_parts: tuple[Part, ...]
    measured: Measured | None
    _last: tuple[str, Part] | None = field(default=None, repr=False)

    @property
    def base_total(self) -> int:
        """The resume cost: everything the next turn sends before a message is typed."""
        return sum(part.tokens or 0 for part in self.session_parts) + self.message_part("").tokens

    def message_part(self, message: str) -> Part:
        if self._last is not None and self._last[0] == message:
            return self._last[1]
        block = variable_block("user_message", "str", MESSAGE_DESC, message)
        note = None if len(message) <= PREVIEW_CHARS else "only a ~1,000-character preview enters the prompt"
        try:
            part = Part("message", self.meter.count(block, self.spec.encoding), COUNTED, len(block), len(message), note)
        except Exception as exc:
            part = Part("message", None, FAILED, full_chars=len(message), error=f"{type(exc).__name__}: {exc}")
        self._last = (message, part)
        return part

    def with_message(self, message: str) -> MeterResult:
        parts = (*self.session_parts, self.message_part(message))
        exact = self.spec.exact and all(part.basis == COUNTED for part in parts if part.tokens)
        return MeterResult(self.model, self.model_source, self.spec.encoding, parts, self.spec.window,
                           self.meter.settings.warn, self.measured, exact)
