"""Gemini CLI's meter: the next request a turn of a session will send, part by part.

After a model call (next_request.py reads the messages):
- `fixed`: the system instruction and tool declarations, as the newest call measured them: its
  `tokens.input` (the `promptTokenCount` Gemini CLI recorded) less the contents that call sent,
  counted. The way the turn is sent sets which tools go with it (`FIXED_TOKENS`: a headless `-p`
  run, `--yolo`, the interactive TUI); the file does not say which way the measured call went, so a
  call whose turn used a tool only `--yolo` and the TUI offer counts as a `--yolo` run's, any other as
  a headless run's, and a difference between that and the way of the next turn is added, estimated;
- `history`: the turns before that call's reply, as the resumed client sends them (its
  `<session_context>` first; tool results of earlier runs twice, as the client sends them);
- `since`: that call's reply, its tool calls and results, and whatever was recorded after it;
- `message`: the draft, a user turn of its own (or one more part of an unanswered user turn).
Before any call (a new session, a fork Reprise wrote that no call has measured since), `fixed` is
Gemini CLI's fixed prompt for the way the turn is sent, estimated.

Every counted part is o200k_base, a turn `CONTENT_FRAME` tokens and a tool declaration
`DECLARATION_FRAME` tokens beyond its text (a function call as its name and arguments, a tool
result as its name and response, each as JSON). The window is Gemini CLI's `tokenLimit` for the model
the newest reply recorded (a user's `[[meter.models]]` entry wins) and `compacts_at` where it
compresses the chat on its own (windows.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...meter import COUNTED, ESTIMATED, MEASURED, RESUME, SEND, Measured, MeterResult, Part, TokenCounter
from ..agent_meter import ENCODING, AgentMeter
from .next_request import Content, NextRequest, sent
from .windows import DEFAULT_THRESHOLD, compacts_at, compression_threshold, window_of

if TYPE_CHECKING:
    from ...config import MeterSettings

CONTENT_FRAME = 4         # tokens of framing each turn of `contents` takes beyond its parts
DECLARATION_FRAME = 4     # tokens of framing each function declaration takes beyond its JSON
DEFAULT_MODEL = "auto"    # Gemini CLI 0.61.0's default model setting (its router picks each turn's model)
# Gemini CLI 0.61.0's system instruction and tool declarations (o200k_base, with their framing) in
# each way a turn is sent, measured from its requests (tests/compat/gemini/test_meter_compat.py):
# a headless `-p` run offers 8 tools, `--yolo` 15 (the shell, file writes, web fetch...), the
# interactive TUI 16 (those and ask_user), each with its own line of the system instruction.
HEADLESS, YOLO, INTERACTIVE = "headless", "yolo", "interactive"
FIXED_TOKENS = {HEADLESS: 7_684, YOLO: 9_263, INTERACTIVE: 9_739}
# What Gemini CLI sends first in a session that has not recorded its own yet (the folder tree left out).
CONTEXT_TEMPLATE = ("<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
                    "Today's date is Sunday, January 1, 2026 (formatted according to the user's locale).\n"
                    "My operating system is: linux\nThe project's temporary directory is: {temp}\n"
                    "- **Workspace Directories:**\n  - {folder}\n- **Directory Structure:**\n\n"
                    "Showing up to 200 items (files + folders).\n\n{folder}/\n\n\n\n</session_context>")
WIDE_FLAGS = frozenset({"--yolo", "-y", "--approval-mode=yolo"})


def mode_of(argv: Sequence[str], via: str) -> str:
    """How a turn sent with `argv` offers tools: the interactive TUI (`via` resume), `--yolo`, or headless."""
    if via == RESUME:
        return INTERACTIVE
    wide = any(arg in WIDE_FLAGS for arg in argv) or any(
        flag == "--approval-mode" and value == "yolo" for flag, value in zip(argv, argv[1:], strict=False))
    return YOLO if wide else HEADLESS


def part_text(part: dict[str, Any]) -> str:
    """The text of one part as the meter counts it."""
    text = part.get("text")
    if isinstance(text, str):
        return text
    call, response = part.get("functionCall"), part.get("functionResponse")
    if isinstance(call, dict):
        return f"{call.get('name', '')}\n{dumps(call.get('args') or {})}"
    if isinstance(response, dict):
        return f"{response.get('name', '')}\n{dumps(response.get('response') or {})}"
    return dumps({key: value for key, value in part.items() if key != "thoughtSignature"})


def dumps(value: Any) -> str:
    """A structured value as the meter counts it (JSON, keys sorted, no spaces); a value nested too
    deeply to write counts as its placeholder."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (RecursionError, TypeError, ValueError):
        return "[a value nested too deeply to count]"


@dataclass(frozen=True, slots=True)
class GeminiLimits:
    """What the window and compression point depend on beyond the session: the compression threshold
    (settings.json) and the command line the turn goes through."""

    threshold: float = DEFAULT_THRESHOLD
    threshold_source: str = "Gemini CLI's default compression threshold (0.5)"
    argv: tuple[str, ...] = ()
    folder: Path | None = None
    temp: Path | None = None

    @classmethod
    def of(cls, store: Path, workspace: Path | None, argv: Sequence[str], temp: Path | None = None) -> GeminiLimits:
        """The limits of a session of the store `store` (a `.gemini` folder) run in `workspace` with `argv`."""
        threshold, source = compression_threshold(store, workspace)
        return cls(threshold, source, tuple(argv), workspace, temp)


class GeminiMeter(AgentMeter):
    """The meter of one Gemini CLI session, with everything but the draft known."""

    def __init__(self, settings: MeterSettings, counter: TokenCounter, request: NextRequest, *,
                 model: str | None = None, via: str = SEND, limits: GeminiLimits | None = None,
                 unmeasured: bool = False):
        super().__init__(settings, counter, model=model, recorded=(request.model, "the session's newest reply"),
                         default=(DEFAULT_MODEL, "Gemini CLI's default (no reply recorded yet)"), via=via)
        self.request = request
        self.limits = limits or GeminiLimits()
        self.unmeasured = unmeasured or request.measured is None   # a fork Reprise wrote, not measured since
        self.mode = mode_of(self.limits.argv, via)
        self._parts: tuple[Part, ...] | None = None
        self._ends_with_user = False

    # --- counting ----------------------------------------------------------------------------

    def _count(self, text: str) -> int:
        return self.counter.count(text, ENCODING) if text else 0

    def _contents(self, contents: Iterable[Content]) -> tuple[int, int]:
        """(tokens, characters) of turns as the request sends them."""
        tokens = chars = 0
        for content in contents:
            texts = [part_text(part) for part in content.parts]
            tokens += CONTENT_FRAME + sum(self._count(text) for text in texts)
            chars += sum(len(text) for text in texts)
        return tokens, chars

    def _context(self) -> tuple[str, bool]:
        """The session context the next request starts with, and whether it is the one recorded."""
        if self.request.context is not None:
            return self.request.context, True
        folder = self.limits.folder or Path("/")
        return CONTEXT_TEMPLATE.format(folder=folder, temp=self.limits.temp or folder), False

    def _sent(self, contents: Sequence[Content]) -> list[Content]:
        context, _ = self._context()
        return sent([Content("user", ({"text": context},)), *contents])

    # --- the parts ---------------------------------------------------------------------------

    def _fixed_part(self) -> Part:
        request = self.request
        if self.unmeasured or request.measured is None:
            tokens = FIXED_TOKENS[self.mode]
            return Part("fixed", tokens, ESTIMATED,
                        note=f"no call measured yet: Gemini CLI 0.61.0's system instruction and tool declarations "
                             f"({self.mode}), about {tokens:,} tokens, estimated")
        measured_sent, _ = self._contents(self._sent(request.measured_sent))
        tokens = max(request.measured - measured_sent, 0)
        had, now = YOLO if request.wide_tools else HEADLESS, self.mode
        if had == now:
            return Part("fixed", tokens, MEASURED,
                        note=f"the system instruction and tool declarations: the newest call's input tokens "
                             f"(turn {request.measured_turn}, {request.measured:,} as Gemini CLI recorded them) less "
                             f"the {measured_sent:,} of the contents it sent, counted with {ENCODING}")
        change = FIXED_TOKENS[now] - FIXED_TOKENS[had]
        return Part("fixed", max(tokens + change, 0), ESTIMATED,
                    note=f"the newest call's system instruction and tools (measured: {tokens:,} tokens), "
                         f"{'plus' if change > 0 else 'less'} the {abs(change):,} tokens by which a {now} turn's "
                         f"differ from a {had} one's (Gemini CLI 0.61.0), estimated")

    def _context_parts(self) -> tuple[Part, ...]:
        request = self.request
        _, recorded = self._context()
        history: tuple[Content, ...] = request.history
        since: tuple[Content, ...] = request.since
        if self.unmeasured or request.measured is None:
            history, since = (*history, *since), ()
        everything = self._sent((*history, *since))
        self._ends_with_user = everything[-1].role == "user"
        before_tokens, before_chars = self._contents(self._sent(history))
        all_tokens, all_chars = self._contents(everything)
        where = "its recorded <session_context>" if recorded else "a <session_context> like the one it will add"
        parts = [Part("history", before_tokens, COUNTED, before_chars,
                      note=f"the turns as the resumed client sends them ({where} first, each earlier tool result "
                           f"twice), counted with {ENCODING}")]
        if not self.unmeasured and request.measured is not None:
            parts.append(Part("since", all_tokens - before_tokens, COUNTED, all_chars - before_chars,
                              note=f"the newest call's reply, its tool calls and results, and what was recorded "
                                   f"after it, counted with {ENCODING}"))
        return tuple(parts)

    def _fixed_parts(self) -> tuple[Part, ...]:
        if self._parts is None:
            self._parts = (self._fixed_part(), *self._context_parts())
        return self._parts

    def _result(self, message: str) -> MeterResult:
        fixed = self._fixed_parts()
        frame = 0 if self._ends_with_user else CONTENT_FRAME
        draft = self._count(message) + frame if message else 0
        parts = (*fixed, Part("message", draft, COUNTED, len(message), len(message),
                              note=f"the draft as a user turn, counted with {ENCODING}"
                                   + (f" with {CONTENT_FRAME} tokens of framing" if frame else
                                      " (one more part of the unanswered user turn before it)")))
        request = self.request
        measured = Measured(request.measured_turn, request.measured) \
            if request.measured is not None and not self.unmeasured else None
        window, window_source = window_of(self.model, self.settings.models)
        return self._agent_result(parts, draft=draft, measured=measured, window=window, window_source=window_source,
                                  compacts_at=compacts_at(self.model, self.limits.threshold))
