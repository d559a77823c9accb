"""The context meter: the next turn's first prompt, assembled the way Fractal assembles it,
counted part by part with a bundled tokenizer, each figure labelled with its basis.

Parts (format reference, "The next-turn context in Fractal"): the configured fixed
`overhead`, the workspace `agents_md` section, the rendered `summary`, and the prompt
previews of the `history` and `message` variables. Each counted text is cached by its
digest, and `PreparedMeter` counts the session parts once so a keystroke re-tokenizes only
the message.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...meter import (
    CONFIGURED,
    COUNTED,
    FAILED,
    Measured,
    MeterResult,
    Part,
    TokenCounter,
    spec_for,
)
from ...session_files import ReadProblem, read_head
from .codec import json_view
from .models import (
    FRACTAL_MAX_HISTORY,
    HistoryTurn,
    SessionState,
    last_measured_context,
)
from .summary import pending_block, render_summary_head

if TYPE_CHECKING:
    from ...config import MeterSettings, ModelSpec

DEFAULT_MODEL = "gpt-5"
# Part of every cached resume cost's key: a figure counted by an older meter is counted again.
# 2: the draft counted as Fractal's pending turn.
METER_VERSION = "meter2"
AGENTS_MD_LIMIT = 20_000
FRACTAL_CONFIG_CAP = 1 << 20
AGENTS_MD_READ_CAP = 4 * 1024 * 1024
AGENTS_MD_NOTICE = "\n\n[AGENTS.md truncated — read the full file from the workspace.]"
AGENTS_MD_HEADING = (
    "\n## Workspace instructions (AGENTS.md)\n\n"
    "The workspace contains an AGENTS.md file with project-specific guidance from\n"
    "the user. Follow it when working in this workspace; the current `user_message`\n"
    "takes precedence if they conflict.\n\n"
)
PREVIEW_CHARS = 1000
# Fractal's runtime adds the typed message as a pending turn (`add_user_message`) before it
# builds the prompt. Its id is random (`turn-` + uuid4 hex) and its times are now(): the meter
# counts stand-ins of the same shape, the id one of median token count among uuid4 ids.
PENDING_TURN_ID = "turn-89e2c1cc57204dc799bca14e543d8057"
PENDING_TIME = "2026-01-01T12:00:00.000000+00:00"
_WHITESPACE_ONLY_LINE = re.compile(r"^[ \t]+$", re.MULTILINE)  # textwrap.dedent's
_INSTRUCTION_CHUNK = 1 << 20
_UNMERGED_BREAK = re.compile(r"\n(?=[^\S\n]*\S)")
# The agent's prompt adapter indents every line of the instructions (AGENTS.md and summary
# included) by eight spaces; a compat test checks the parts against the prompt Fractal builds.
INSTRUCTION_INDENT = " " * 8
MESSAGE_DESC = "The user's current request for this turn."
HISTORY_DESC = ("Full prior Fractal turn history, including file, command, and PredictRLM trace "
                "details for exact recall from Python.")


def variable_block(name: str, type_name: str, desc: str, value_str: str) -> str:
    """How the agent shows an input variable in the prompt: type, length and a ~1,000-character
    preview, quoted as one item of the prompt's variable list."""
    return _variable_block(name, type_name, desc, len(value_str), value_str, value_str)


def _variable_block(name: str, type_name: str, desc: str, length: int, head: str, tail: str) -> str:
    """`variable_block` of a value given by its length and its first and last characters (at
    least PREVIEW_CHARS // 2 of each, or the whole value in both when it is short)."""
    if length > PREVIEW_CHARS:
        half = PREVIEW_CHARS // 2
        preview = head[:half] + "..." + tail[-half:]
    else:
        preview = head
    block = (f"Variable: `{name}` (access it in your code)\nType: {type_name}\nDescription: {desc}\n"
             f"Total length: {length:,} characters\nPreview:\n```\n{preview}\n```")
    return "«««\n    " + block.replace("\n", "\n    ") + "\n»»»"


def history_json(turns: list[HistoryTurn]) -> str:
    """History turns as the agent serialises the `session_history` value."""
    return json.dumps([turn.model_dump(mode="json") for turn in turns], indent=2)


def history_text(state: SessionState) -> str:
    """The `session_history` value of the file as it stands (the last 20 turns)."""
    return history_json(state.history[-FRACTAL_MAX_HISTORY:])


def pending_history_json(message: str) -> str:
    """`history_json` of the one entry `add_user_message` appends, with the stand-in id and times."""
    entry = HistoryTurn(turn_id=PENDING_TURN_ID, user_message=message, status="pending",
                        created_at=PENDING_TIME, updated_at=PENDING_TIME)
    return history_json([entry])


def as_instructions(text: str) -> str:
    """Text as it stands inside the agent's instructions. DSPy cleans the signature's docstring
    (`inspect.cleandoc`: tabs expanded), the prompt adapter dedents it (whitespace-only lines
    blanked; nothing else, as Fractal's own lines start at the margin), splits it with
    `str.splitlines` and indents every line, empty ones too. `text` starts at a line start."""
    if len(text) <= _INSTRUCTION_CHUNK:
        return _indented(text) or INSTRUCTION_INDENT
    # A summary can be hundreds of MB: done a line-aligned slice at a time, the same text comes out
    # (splitlines of a text cut after a "\n" is the lines of each piece; tabs and the blanked
    # whitespace-only lines never reach past a "\n"), without a list of every line of the whole.
    pieces, start = [], 0
    while start < len(text):
        end = text.find("\n", start + _INSTRUCTION_CHUNK) + 1 or len(text)
        piece = _indented(text[start:end])
        if piece:  # a piece with no lines (a blanked last line) adds none
            pieces.append(piece)
        start = end
    return "\n".join(pieces) or INSTRUCTION_INDENT


def _indented(text: str) -> str:
    """The lines of `text`, each indented; "" when it has none."""
    lines = _WHITESPACE_ONLY_LINE.sub("", text.expandtabs()).splitlines()
    return "\n".join(INSTRUCTION_INDENT + line for line in lines)


def agents_md_section(workspace: Path | None) -> tuple[str, int | None, str | None]:
    """(prompt section, full characters, note) for the workspace's AGENTS.md, cut as the agent cuts it."""
    if workspace is None:
        return "", None, "the workspace folder is unknown, so its AGENTS.md is not counted"
    path = workspace / "AGENTS.md"
    try:  # the repository may be hostile: a regular file only, opened without blocking, read capped
        data, size = read_head(path, AGENTS_MD_READ_CAP)
        raw = data.decode("utf-8") if size <= AGENTS_MD_READ_CAP else data.decode("utf-8", "ignore")
    except FileNotFoundError:
        return "", None, "no AGENTS.md in the workspace"
    except UnicodeDecodeError:
        return "", None, "AGENTS.md is not UTF-8; the agent ignores it"
    except ReadProblem as exc:
        return "", None, f"AGENTS.md cannot be read ({exc.message}); it is not counted"
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
    import tomllib  # here, not at every command's start

    environment = os.environ if env is None else env
    if environment.get("FRACTAL_MODEL"):
        return environment["FRACTAL_MODEL"]
    xdg = environment.get("XDG_CONFIG_HOME")
    global_path = (Path(xdg).expanduser() / "fractal" / "config.toml" if xdg
                   else Path.home() / ".config/fractal/config.toml")
    candidates = [workspace / ".fractal" / "config.toml"] if workspace else []
    for path in (*candidates, global_path):
        try:
            data, _ = read_head(path, FRACTAL_CONFIG_CAP)  # a repository may be hostile: never a FIFO
            model = tomllib.loads(data.decode("utf-8")).get("active_model")
        except (OSError, ReadProblem, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if isinstance(model, str) and model:
            return model
    return None


class Meter(TokenCounter):
    """Fractal's next prompt, counted with the shared digest-keyed cache (thread-safe)."""

    def __init__(self, settings: MeterSettings, *, cache_size: int = 4096):
        super().__init__(cache_size=cache_size)
        self.settings = settings

    def resolve_model(self, workspace: Path | None, override: str | None = None) -> tuple[str, str]:
        if override:
            return override, "--model"
        if self.settings.model:
            return self.settings.model, "[meter] model"
        fractal = fractal_configured_model(workspace)
        if fractal:
            return fractal, "Fractal's configured model"
        return DEFAULT_MODEL, "default"

    def prepare(self, state: SessionState, workspace: Path | None, *, model: str | None = None,
                stated_window: int | None = None) -> PreparedMeter:
        """Count everything that does not depend on the draft; the result measures any draft cheaply.

        `stated_window` is an input budget the session file itself states (Codex records its
        usable window); it is preferred over the model table.
        """
        name, source = self.resolve_model(workspace, model)
        spec = spec_for(name, self.settings.models)
        encoding = spec.encoding
        fixed = (Part("overhead", spec.overhead, CONFIGURED,
                      note="the agent's fixed instructions and tool descriptions, as configured"),
                 self._counted("agents_md", encoding, lambda: agents_md_section(workspace)))
        # The draft is appended to the summary after a blank line: the head ends at the last line
        # break before the pending turn's first line, a boundary the tokenizer never merges across,
        # so its count plus the pending turn's count is the count of the whole summary.
        head = self._counted("summary", encoding, lambda: (
            as_instructions(render_summary_head(state.summary) + "\n\n") + "\n", None, None))
        head_text = head.text if head.basis == COUNTED else None
        kept = state.history[-(FRACTAL_MAX_HISTORY - 1):]  # the pending entry makes it 20 again
        kept_history = _attempt(lambda: _open_list_ends(kept) if kept else None)
        measured = last_measured_context(state)
        if stated_window:
            window, window_source = stated_window, "stated in the session file"
        else:
            window, window_source = spec.input_budget, f"model table, pattern {spec.pattern}"
        return PreparedMeter(self, name, source, spec, fixed, Measured(*measured) if measured else None,
                             window, window_source, len(state.summary.turns) + 1, head, head_text, kept_history)

    def _counted(self, name: str, encoding: str, build: Callable[[], tuple[str, int | None, str | None]]) -> Part:
        def count() -> Part:
            text, full, note = build()
            return Part(name, self.count(text, encoding) if text else 0, COUNTED, len(text), full, note, text=text)

        return _part_or_failure(name, count)

    def measure(self, state: SessionState, workspace: Path | None, message: str = "", *,
                model: str | None = None, stated_window: int | None = None) -> MeterResult:
        return self.prepare(state, workspace, model=model, stated_window=stated_window).with_message(message)


def split_at_token_boundaries(text: str) -> list[str]:
    """Instruction text (as `as_instructions` makes it) cut after each line break that the
    tokenizer's pre-split never merges with what follows: a break whose next line is not blank.
    (Both encodings' patterns end a whitespace run that holds line breaks at its last break.)
    The pieces' counts add up to the whole's; unchanged lines of a draft come from the cache,
    so a keystroke tokenizes only the line it changes."""
    starts = [0, *(match.end() for match in _UNMERGED_BREAK.finditer(text))]
    return [text[start:end] for start, end in zip(starts, [*starts[1:], len(text)], strict=True)]


def _attempt(build: Callable[[], Any]) -> Any:
    """build(), or the exception it raised: a part that cannot be counted reports why on itself,
    and the other parts still count."""
    try:
        return build()
    except Exception as exc:  # noqa: BLE001 - any failure becomes the part's error
        return exc


def _failure(name: str, exc: BaseException, full_chars: int | None = None) -> Part:
    return Part(name, None, FAILED, full_chars=full_chars, error=f"{type(exc).__name__}: {exc}")


def _part_or_failure(name: str, build: Callable[[], Part], full_chars: int | None = None) -> Part:
    result = _attempt(build)
    return _failure(name, result, full_chars) if isinstance(result, Exception) else result


def _open_list_ends(turns: list[HistoryTurn], size: int = PREVIEW_CHARS) -> tuple[int, str, str]:
    """`_ends(history_json(turns)[:-2] + ",")`, the kept entries' JSON left open for the pending
    one, without holding that JSON: it can be the size of the file. It is encoded as a stream from
    a view of the models; a value the view cannot encode as pydantic dumps it for JSON (a
    non-finite float, which pydantic writes as null) takes the plain way."""
    keep = size + 2
    try:
        chunks = json.JSONEncoder(indent=2, allow_nan=False).iterencode([json_view(turn) for turn in turns])
        length, head, tail = 0, "", ""
        for chunk in chunks:
            length += len(chunk)
            if len(head) < keep:
                head += chunk[: keep - len(head)]
            tail = (tail + chunk)[-keep:] if len(chunk) < keep else chunk[-keep:]
    except (ValueError, TypeError, RecursionError):
        return _ends(history_json(turns)[:-2] + ",", size)
    if length <= 2 * keep:  # head and tail overlap: the text is short, so rebuild it from them
        text = head + tail[len(tail) - (length - len(head)):] if length > len(head) else head
        return _ends(text[:-2] + ",", size)
    return length - 1, head[:size], (tail[:-2] + ",")[-size:]


def _ends(text: str, size: int = PREVIEW_CHARS) -> tuple[int, str, str]:
    """(length, first `size` characters, last `size` characters) of a text."""
    return len(text), text[:size], text[-size:]


def _joined_ends(first: tuple[int, str, str], second: str, size: int = PREVIEW_CHARS) -> tuple[int, str, str]:
    """`_ends(whole + second)` from `_ends(whole)`: the kept history can be megabytes, and this
    runs on every keystroke."""
    length, head, tail = first
    if length <= size:  # head is the whole text
        return _ends(head + second, size)
    joined_tail = second[-size:] if len(second) >= size else tail[len(tail) - (size - len(second)):] + second
    return length + len(second), head, joined_tail


@dataclass(slots=True)
class PreparedMeter:
    """A session's meter with the draft left open: `with_message` counts the draft's three
    appearances (the pending turn at the summary's end, the `session_history` tail, the
    `user_message` preview) and reuses everything else."""

    meter: Meter
    model: str
    model_source: str
    spec: ModelSpec
    fixed_parts: tuple[Part, ...]
    measured: Measured | None
    window: int
    window_source: str
    turn_number: int
    summary_head: Part
    summary_head_text: str | None
    kept_history: tuple[int, str, str] | Exception | None  # `_ends` of the kept entries' JSON, open
    _last: tuple[str, MeterResult] | None = field(default=None, repr=False)
    _empty: MeterResult | None = field(default=None, repr=False)

    @property
    def base_total(self) -> int:
        """The resume cost: everything the next turn sends with an empty composer."""
        return self.with_message("").total

    def texts(self, message: str) -> dict[str, str]:
        """Every counted text of the prompt with this draft, by part name (for checks against Fractal)."""
        texts = {part.name: part.text for part in self.with_message(message).parts if part.text}
        if self.summary_head_text is not None:
            texts["summary"] = self.summary_head_text + self._pending_text(message)
        return texts

    def _pending_text(self, message: str) -> str:
        return as_instructions(pending_block(self.turn_number, PENDING_TURN_ID, message))

    def _count(self, text: str) -> int:
        return self.meter.count(text, self.spec.encoding)

    def _summary_part(self, message: str) -> Part:
        if self.summary_head_text is None:
            return self.summary_head
        head_text, head_tokens = self.summary_head_text, self.summary_head.tokens or 0

        def count() -> Part:
            tail = self._pending_text(message)
            tokens = head_tokens + sum(self._count(line) for line in split_at_token_boundaries(tail))
            return Part("summary", tokens, COUNTED, len(head_text) + len(tail), None,
                        "ends with the draft in full, as the pending turn Fractal adds before it builds the prompt")

        return _part_or_failure("summary", count)

    def _history_part(self, message: str) -> Part:
        kept = self.kept_history
        if isinstance(kept, Exception):
            return _failure("history", kept)

        def count() -> Part:
            pending = pending_history_json(message)
            # json.dumps of the kept entries plus the pending one: the kept list's JSON without its
            # closing "\n]", a comma, then the pending entry's list JSON without its opening "["
            length, head, tail = _joined_ends(kept, pending[1:]) if kept else _ends(pending)
            block = _variable_block("session_history", "list", HISTORY_DESC, length, head, tail)
            return Part("history", self._count(block), COUNTED, len(block), length,
                        "only a preview enters the prompt, its tail the pending turn; the full history is "
                        "available to the agent, not in the prompt", text=block)

        return _part_or_failure("history", count)

    def _message_part(self, message: str) -> Part:
        note = None if len(message) <= PREVIEW_CHARS else "only a ~1,000-character preview enters the prompt"
        def count() -> Part:
            block = variable_block("user_message", "str", MESSAGE_DESC, message)
            return Part("message", self._count(block), COUNTED, len(block), len(message), note, text=block)

        return _part_or_failure("message", count, full_chars=len(message))

    def with_message(self, message: str) -> MeterResult:
        if not message:
            if self._empty is None:
                self._empty = self._result("", 0)
            return self._empty
        if self._last is None or self._last[0] != message:
            self._last = (message, self._result(message, self.base_total))
        return self._last[1]

    def _result(self, message: str, empty_total: int) -> MeterResult:
        parts = (*self.fixed_parts, self._summary_part(message), self._history_part(message),
                 self._message_part(message))
        exact = self.spec.exact and all(part.basis == COUNTED for part in parts if part.tokens)
        total = sum(part.tokens or 0 for part in parts)
        return MeterResult(self.model, self.model_source, self.spec.encoding, parts, self.window,
                           self.meter.settings.warn, self.measured, exact, self.window_source,
                           total - empty_total if message else 0)
