"""What one Claude Code record is to a reader: its kind (a real prompt, a tool result, an assistant
message, an API error, a compaction boundary...) and the text a person typed.

Claude Code writes more than the user's prompts as `user` records: tool results, meta records,
the compaction summary, slash-command wrappers (`<command-name>`, `<local-command-stdout>`) and
system reminders. Only what is left of a prompt once those are set aside is a real prompt.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .records import Record

PROMPT = "p"        # a real user prompt: a turn
COMMAND = "c"       # a slash command (`<command-name>`): a turn when the model answers it (/review), not /compact
INTERRUPT = "i"     # "[Request interrupted by user]": the newest turn was interrupted
RESULT = "r"        # a tool result (a `user` record carrying `tool_result` blocks)
META = "m"          # any other `user` record: meta, compaction summary, command wrappers
ASSISTANT = "a"     # an assistant message (or one part of it)
ERROR = "e"         # an API error: `system` `api_error`, or Claude Code's synthetic error reply
BOUNDARY = "b"      # `system` `compact_boundary`
OTHER = "o"         # attachments, other system records, anything else with a uuid

# The record types Claude Code 2.1.332 writes (its transcript writer's table); others are kept and ignored.
KNOWN_TYPES = frozenset({
    "user", "assistant", "attachment", "system", "progress", "summary", "custom-title", "ended-by-model",
    "continued-in", "ai-title", "last-prompt", "tag", "relocated", "agent-name", "agent-color", "agent-setting",
    "pr-link", "frame-link", "artifact-comment-monitor", "artifact-autoreact-ledger", "bridge-session",
    "history-suppression", "file-history-snapshot", "file-history-delta", "attribution-snapshot", "mode",
    "permission-mode", "isolation-latch", "session-owner", "dev-mods", "memory-mode", "atis-latch", "tools-used",
    "data-flow-records", "data-flow-incomplete", "derived-from", "worktree-state", "cost-state", "queue-operation",
    "content-replacement", "api-request-shape", "api-request-blob", "api-request", "api-request-resumed",
    "fork-context-ref", "observer-ref", "resume-head-vouch",
})

SYNTHETIC_MODEL = "<synthetic>"
INTERRUPTED_PREFIX = "[Request interrupted"


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The command's name, its arguments, and the wrappers around a prompt's text: compiled on first
    use, not at every command's start (a warm listing reads no record)."""
    return (re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL),
            re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL),
            re.compile(r"<(system-reminder|command-name|command-message|command-args|local-command-stdout"
                       r"|local-command-stderr|local-command-caveat)>.*?</\1>", re.DOTALL))


def kind_of(record: Record) -> str:
    kind = record.get("type")
    if kind == "user":
        if record.get("isMeta") or record.get("isCompactSummary"):
            return META
        content = _content(record)
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return INTERRUPT if prompt_text(record).startswith(INTERRUPTED_PREFIX) else RESULT
        text = prompt_text(record)
        if not text:
            return COMMAND if command_text(record) else META
        return INTERRUPT if text.startswith(INTERRUPTED_PREFIX) else PROMPT
    if kind == "assistant":
        message = record.get("message")
        if record.get("isApiErrorMessage") or (isinstance(message, dict) and message.get("model") == SYNTHETIC_MODEL
                                                and record.get("error") is not None):
            return ERROR
        return ASSISTANT
    if kind == "system":
        subtype = record.get("subtype")
        if subtype == "compact_boundary":
            return BOUNDARY
        if subtype == "api_error":
            return ERROR
    return OTHER


def prompt_text(record: Record) -> str:
    """What the person typed in a `user` record: its text without command wrappers and system
    reminders, stripped ("" when nothing is left)."""
    content = _content(record)
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = _texts(content)
    else:
        return ""
    if "<" in text:
        text = _patterns()[2].sub("", text)
    text = text.strip()
    if not text and isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "image"
                                                      for b in content):
        return "[image]"   # a pasted screenshot alone is a prompt too
    return text


def command_text(record: Record) -> str:
    """The slash command a `user` record wraps ("/review the parser"), or ""."""
    content = _content(record)
    text = content if isinstance(content, str) else _texts(content) if isinstance(content, list) else ""
    command_name, command_args, _ = _patterns()
    name = command_name.search(text) if "<command-name>" in text else None
    if name is None:
        return ""
    args = command_args.search(text)
    return f"{name.group(1).strip()} {args.group(1).strip() if args else ''}".strip()


def turn_starts(kinds: list[str]) -> list[int]:
    """Where the turns of a chain (its records' kinds, in order) begin: at each real prompt, and at
    each slash command the model answered before the next prompt or command."""
    starts = []
    command: int | None = None
    for at, kind in enumerate(kinds):
        if kind == PROMPT:
            starts.append(at)
            command = None
        elif kind == COMMAND:
            command = at
        elif command is not None and kind in (ASSISTANT, ERROR):
            starts.append(command)
            command = None
    return starts


def blocks(record: Record) -> list[dict[str, Any]]:
    """The content blocks of a record's message (a plain string as one text block)."""
    content = _content(record)
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def error_text(record: Record) -> str:
    """The sentence of an API error record (system `api_error` or a synthetic error reply)."""
    if record.get("type") == "assistant":
        text = _texts(blocks(record))
        if text:
            return text
    error = record.get("error")
    for _ in range(3):   # {"error": {"error": {"message": ...}}}, as the API nests them
        if isinstance(error, dict):
            message = error.get("message")
            if isinstance(message, str) and message:
                return message
            error = error.get("error")
    if isinstance(error, str) and error:
        return error
    content = record.get("content")
    return content if isinstance(content, str) and content else "API error"


def usage_of(record: Record) -> tuple[str | None, dict[str, Any] | None]:
    """An assistant record's API message id and usage, when it has them."""
    message = record.get("message")
    if not isinstance(message, dict):
        return None, None
    usage = message.get("usage")
    message_id = message.get("id")
    return (message_id if isinstance(message_id, str) else None), (usage if isinstance(usage, dict) else None)


def count(usage: dict[str, Any], key: str) -> int:
    return tokens(usage.get(key))


def tokens(value: Any) -> int:
    """A usage figure as a count: a positive integer, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def context_of(usage: dict[str, Any]) -> int:
    """The context an API call used: its input, cache creation and cache read tokens."""
    return (count(usage, "input_tokens") + count(usage, "cache_creation_input_tokens")
            + count(usage, "cache_read_input_tokens"))


def line_context(usage: Any) -> int:
    """`context_of` of a usage as the listing decodes it (`listing_records.Usage`)."""
    return (tokens(usage.input_tokens) + tokens(usage.cache_creation_input_tokens)
            + tokens(usage.cache_read_input_tokens))


def _texts(content: list[Any]) -> str:
    return "\n".join(block["text"] for block in content
                     if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str))


def _content(record: Record) -> Any:
    message = record.get("message")
    return message.get("content") if isinstance(message, dict) else None
