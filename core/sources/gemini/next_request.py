"""What Gemini CLI's next request holds beyond its newest measured call, read from a session's
messages (after the client's line merge, lines.py).

Gemini CLI 0.61.0 resumes a session (`gemini --resume ID`) by converting its stored messages back to
the API's `contents` (`convertSessionToClientHistory`): `info`, `error` and `warning` messages are
dropped, and user messages that are empty or start with `/`, `?`, `<session_context>` or
`<hook_context>`; a `gemini` message becomes a model turn of its text, then a `functionCall` part
per tool call, and a user turn of its tool calls' results (`functionResponse` parts). The user
message the client recorded with those same results is kept too, so every tool result of an earlier
run is sent twice. A fresh `<session_context>` turn (date, folder tree) goes first; thoughts are
stripped (gemini-2, gemini-3 and custom models: every model 0.61.0 offers) and consecutive turns of
one role are merged into one (`coalesceConsecutiveRoles`).

A `gemini` message's `tokens.input` is the `promptTokenCount` of the model call that produced it:
that call sent everything recorded before the message, the way the client held it then. The turn
it was made in went out as it happened (each tool result once, each turn's first function call with
a `thoughtSignature`); the turns before it as resumed. The next request sends them all as resumed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

Part = dict[str, Any]
SESSION_CONTEXT = "<session_context>"
IGNORED_PREFIXES = ("/", "?", SESSION_CONTEXT, "<hook_context>")
SKIPPED_TYPES = frozenset({"info", "error", "warning"})
# The signature Gemini CLI puts on the first function call of each model turn of the turn being
# answered when the model gave none (ensureActiveLoopHasThoughtSignatures).
SYNTHETIC_SIGNATURE = "skip_thought_signature_validator"
# The tools `--yolo` offers beyond a headless `-p` run's (0.61.0): a tool call among them shows the
# measured call offered them all.
WIDE_TOOLS = frozenset({"replace", "write_file", "web_fetch", "run_shell_command", "list_background_processes",
                        "read_background_output", "activate_skill"})


@dataclass(frozen=True, slots=True)
class Content:
    """One turn of `contents` as the API reads it."""

    role: str                   # "user" or "model"
    parts: tuple[Part, ...]


def _parts(content: Any) -> list[Part]:
    """A stored `content` (a string, one part or a list of parts) as a list of parts."""
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        return [{"text": item} if isinstance(item, str) else item for item in content if isinstance(item, (str, dict))]
    return []


def part_text(part: Part) -> str:
    """A part as the client's `partListUnionToString` (verbose) writes it."""
    if "thought" in part and "text" not in part:
        return f"[Thought: {part['thought']}]"
    call, response = part.get("functionCall"), part.get("functionResponse")
    if isinstance(call, dict):
        return f"[Function Call: {call.get('name')}]"
    if isinstance(response, dict):
        return f"[Function Response: {response.get('name')}]"
    text = part.get("text")
    return text if isinstance(text, str) else ""


def is_prompt(message: dict[str, Any]) -> bool:
    """A user message the client sends again on resume: not empty, not a command, not its own context."""
    if message.get("type") != "user":
        return False
    text = "".join(part_text(part) for part in _parts(message.get("content"))).strip()
    return bool(text) and not text.startswith(IGNORED_PREFIXES)


def is_typed(message: dict[str, Any]) -> bool:
    """A prompt a person typed (not the tool results the client records as a user message)."""
    return is_prompt(message) and not any("functionResponse" in part for part in _parts(message.get("content")))


def _thought_parts(message: dict[str, Any]) -> list[Part]:
    thoughts = message.get("thoughts")
    found = []
    for thought in thoughts if isinstance(thoughts, list) else []:
        if isinstance(thought, dict):
            subject, description = thought.get("subject"), thought.get("description", "")
            found.append({"text": f"**{subject}** {description}" if subject else str(description), "thought": True})
    return found


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("toolCalls")
    return [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []


def _call_part(call: dict[str, Any]) -> Part:
    return {"functionCall": {"id": call.get("id"), "name": call.get("name"), "args": call.get("args")}}


def _results(message: dict[str, Any]) -> list[Part]:
    """The user turn the client rebuilds from a gemini message's tool calls (their `result`)."""
    found: list[Part] = []
    for call in _calls(message):
        result = call.get("result")
        if not result:
            continue
        if isinstance(result, str):
            found.append({"functionResponse": {"id": call.get("id"), "name": call.get("name"),
                                               "response": {"output": result}}})
        elif isinstance(result, list):
            found.extend(_parts(result))
        elif isinstance(result, dict):
            found.append(result)
    return found


def _model_parts(message: dict[str, Any]) -> list[Part]:
    content = message.get("content")
    parts = _parts(content) if content else []
    if any("functionCall" in part or part.get("thought") for part in parts):
        return parts
    return [*_thought_parts(message), *parts, *(_call_part(call) for call in _calls(message))]


def resumed(message: dict[str, Any]) -> list[Content]:
    """The turns the client rebuilds from one stored message when it resumes the session."""
    kind = message.get("type")
    if kind == "user":
        return [Content("user", tuple(_parts(message.get("content"))))] if is_prompt(message) else []
    if kind != "gemini":
        return []
    parts = _model_parts(message)
    if not parts:
        return []
    results = _results(message)
    return [Content("model", tuple(parts)), *([Content("user", tuple(results))] if results else [])]


def live(message: dict[str, Any]) -> list[Content]:
    """The turns one stored message stood for in the run that recorded it (its tool results are the
    user message recorded after it, sent once)."""
    kind = message.get("type")
    if kind == "user":
        return [Content("user", tuple(_parts(message.get("content"))))] if is_prompt(message) else []
    if kind != "gemini":
        return []
    parts = _model_parts(message)
    return [Content("model", tuple(parts))] if parts else []


def _signed(contents: list[Content]) -> list[Content]:
    """The client's synthetic signature on the first function call of each model turn (the turn being answered)."""
    signed = []
    for content in contents:
        if content.role == "model":
            parts = list(content.parts)
            for index, part in enumerate(parts):
                if "functionCall" in part:
                    if "thoughtSignature" not in part:
                        parts[index] = {**part, "thoughtSignature": SYNTHETIC_SIGNATURE}
                    break
            content = Content("model", tuple(parts))
        signed.append(content)
    return signed


def sent(contents: Iterable[Content]) -> list[Content]:
    """Contents as the request sends them: thoughts stripped, empty text parts and turns dropped,
    consecutive turns of one role merged."""
    merged: list[Content] = []
    for content in contents:
        parts = tuple(part for part in content.parts if not part.get("thought") and not _empty_text(part))
        if not parts:
            continue
        if merged and merged[-1].role == content.role:
            merged[-1] = Content(content.role, merged[-1].parts + parts)
        else:
            merged.append(Content(content.role, parts))
    return merged


def _empty_text(part: Part) -> bool:
    return part.get("text") == "" and not any(key not in ("text", "thought") for key in part)


def session_context(messages: Sequence[dict[str, Any]]) -> str | None:
    """The newest `<session_context>` the client recorded (each run writes the one it sends)."""
    for message in reversed(messages):
        if message.get("type") != "user":
            continue
        text = "".join(part_text(part) for part in _parts(message.get("content")))
        if text.strip().startswith(SESSION_CONTEXT):
            return text
    return None


def input_tokens(message: dict[str, Any]) -> int | None:
    """A gemini message's measured input (`tokens.input`), when it has one."""
    tokens = message.get("tokens")
    value = tokens.get("input") if isinstance(tokens, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@dataclass(frozen=True, slots=True)
class NextRequest:
    """A session's messages as the next request sends them, split at the newest measured call."""

    context: str | None                  # the session context the client sends first (as last recorded)
    history: tuple[Content, ...]         # the turns before the measured call's reply, as resumed
    since: tuple[Content, ...]           # the turns from its reply on, as resumed (everything, when unmeasured)
    measured: int | None                 # the newest call's input tokens
    measured_turn: int                   # the prompt (from 1) that call answered
    measured_sent: tuple[Content, ...]   # what that call sent after the session context, as it sent it
    wide_tools: bool                     # that call's turn used a tool only `--yolo` (or the TUI) offers
    model: str | None                    # the model the newest gemini message recorded
    prompts: int                         # the prompts typed so far


def next_request(messages: Sequence[dict[str, Any]]) -> NextRequest:
    """The next request of a session whose merged messages are `messages`."""
    context = session_context(messages)
    model = next((m.get("model") for m in reversed(messages) if m.get("type") == "gemini"
                  and isinstance(m.get("model"), str) and m.get("model")), None)
    prompts = sum(1 for message in messages if is_typed(message))
    newest = next((index for index in range(len(messages) - 1, -1, -1)
                   if messages[index].get("type") == "gemini" and input_tokens(messages[index]) is not None), None)
    if newest is None:
        since = [content for message in messages for content in resumed(message)]
        return NextRequest(context, (), tuple(since), None, 0, (), False, model, prompts)
    before, after = messages[:newest], messages[newest:]
    start = next((index for index in range(newest - 1, -1, -1) if is_typed(messages[index])), 0)
    earlier = [content for message in messages[:start] for content in resumed(message)]
    current = [content for message in messages[start:newest] for content in live(message)]
    measured_sent = sent([*earlier, *_signed(sent(current))])
    wide = any(isinstance(name := call.get("name"), str) and name in WIDE_TOOLS
               for message in messages[start:newest + 1] for call in _calls(message))
    return NextRequest(context, tuple(content for message in before for content in resumed(message)),
                       tuple(content for message in after for content in resumed(message)),
                       input_tokens(messages[newest]), sum(1 for message in before if is_typed(message)),
                       tuple(measured_sent), wide, model, prompts)

