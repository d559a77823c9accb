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
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import tokens
from .codec import json_view
from .config import MeterSettings, ModelSpec
from .models import FRACTAL_MAX_HISTORY, SessionState, last_measured_context
from .rooted import FileProblem, read_regular
from .summary import EMPTY_SUMMARY, render_summary, summary_parts

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
    return _quoted_block(name, type_name, desc, len(value_str), preview)


def _quoted_block(name: str, type_name: str, desc: str, length: int, preview: str) -> str:
    block = (f"Variable: `{name}` (access it in your code)\nType: {type_name}\nDescription: {desc}\n"
             f"Total length: {length:,} characters\nPreview:\n```\n{preview}\n```")
    return "«««\n    " + block.replace("\n", "\n    ") + "\n»»»"


def history_text(state: SessionState) -> str:
    """The `session_history` value as the agent serialises it (the last 20 turns)."""
    turns = state.history[-FRACTAL_MAX_HISTORY:]
    return json.dumps([turn.model_dump(mode="json") for turn in turns], indent=2)


def history_block(state: SessionState) -> tuple[str, int]:
    """`variable_block` of `history_text(state)` and that text's length, without holding the text:
    it can be the size of the file, and only its length and ends enter the prompt. The history
    is encoded as a stream from a view of the models; a value the view cannot encode as pydantic
    dumps it for JSON (a non-finite float, which pydantic writes as null) takes the plain way."""
    turns = state.history[-FRACTAL_MAX_HISTORY:]
    try:
        length, preview = _length_and_preview(
            json.JSONEncoder(indent=2, allow_nan=False).iterencode([json_view(turn) for turn in turns]))
    except (ValueError, TypeError, RecursionError):
        full = history_text(state)
        length, preview = len(full), (full[:PREVIEW_CHARS // 2] + "..." + full[-(PREVIEW_CHARS // 2):]
                                      if len(full) > PREVIEW_CHARS else full)
    return _quoted_block("session_history", "list", HISTORY_DESC, length, preview), length


def _length_and_preview(chunks) -> tuple[int, str]:
    """The length of the joined chunks and `variable_block`'s preview of them (its two ends)."""
    half = PREVIEW_CHARS // 2
    head: list[str] = []
    head_chars = 0
    tail: deque[str] = deque()
    tail_chars = 0
    length = 0
    for chunk in chunks:
        length += len(chunk)
        if head_chars <= PREVIEW_CHARS:
            head.append(chunk)
            head_chars += len(chunk)
        tail.append(chunk)
        tail_chars += len(chunk)
        while tail_chars - len(tail[0]) >= half:
            tail_chars -= len(tail.popleft())
    if length <= PREVIEW_CHARS:
        return length, "".join(head)
    return length, "".join(head)[:half] + "..." + "".join(tail)[-half:]


def as_instructions(text: str) -> str:
    """Text as it stands inside the agent's instructions: every line indented, empty ones too."""
    return INSTRUCTION_INDENT + text.replace("\n", "\n" + INSTRUCTION_INDENT)


def summary_instructions(state: SessionState) -> str:
    """`as_instructions(render_summary(state.summary).strip() or EMPTY_SUMMARY)`, indented piece by
    piece: the summary of a huge session is not held once rendered and once indented."""
    parts = summary_parts(state.summary)
    while parts and not parts[-1].rstrip():
        parts.pop()
    if parts:
        parts[-1] = parts[-1].rstrip()
    if not parts or not parts[0].strip():  # a summary that strips to nothing (never rendered so)
        return as_instructions(render_summary(state.summary).strip() or EMPTY_SUMMARY)
    indented = [part.replace("\n", "\n" + INSTRUCTION_INDENT) for part in parts]
    del parts
    return INSTRUCTION_INDENT + "".join(indented)


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


def _text_digest(text: str, chunk: int = 1 << 20) -> bytes:
    """The cache key of a text: its UTF-8 (surrogates passed through) hashed a slice at a time,
    so a huge text is not copied whole to be hashed."""
    digest = hashlib.blake2b(digest_size=16)
    for start in range(0, len(text), chunk):
        digest.update(text[start:start + chunk].encode("utf-8", "surrogatepass"))
    return digest.digest()


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

    def prepare(self, state: SessionState, workspace: Path | None, *, model: str | None = None) -> PreparedMeter:
        """Count everything but the message; the result measures any message cheaply."""
        name, source = self.resolve_model(workspace, model)
        spec = spec_for(name, self.settings.models)
        encoding = spec.encoding
        parts = [Part("overhead", spec.overhead, CONFIGURED,
                      note="the agent's fixed instructions and tool descriptions, as configured")]
        parts.append(self._counted("agents_md", encoding, lambda: agents_md_section(workspace)))
        parts.append(self._counted("summary", encoding, lambda: (summary_instructions(state), None, None)))
        parts.append(self._counted("history", encoding, lambda: self._history_part(state)))
        measured = last_measured_context(state)
        return PreparedMeter(self, name, source, spec, tuple(parts),
                             Measured(*measured) if measured else None)

    @staticmethod
    def _history_part(state: SessionState) -> tuple[str, int, str]:
        block, length = history_block(state)
        return (block, length,
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
