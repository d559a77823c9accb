"""A Gemini CLI session file read as the client's own loader reads it (`loadConversationRecord` of
`packages/core/src/services/chatRecordingService.ts`, 0.61.0).

A session file is JSON lines of four kinds, told apart in the client's order:
- `{"$rewindTo": id}` drops the message with that id and every message after it (all of them when
  no message has that id);
- a line with a string `id` is a message: it is added, or replaces the message with that id where
  that message stands (a tool call is written twice: first pending, then with its result);
- `{"$set": {...}}` merges its keys into the session's metadata, and `$set.messages` replaces the
  whole message list;
- a header `{sessionId, projectHash, startTime, lastUpdated, kind, ...}` (both ids strings) merges
  into the metadata (a later header overrides an earlier one); its `messages`, if any, are added.
Every other line the client ignores; Reprise skips it too, with a warning naming the line. A file
whose lines never name both `sessionId` and `projectHash` is a whole JSON document for the client
(`legacy.py`).

`Merge` applies lines one chunk at a time, so a listing that stored its state reads only what was
appended since (a `$rewindTo` or `$set` appended later included). What it keeps of each message is
its `summarize`'s: the message itself for a whole read (`read_chat`), a few figures for a listing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from ...session_files import read_regular_file
from ..agent_json import Exact
from ..jsonl_lines import Parsed, Record, parse_lines

REWIND = "$rewindTo"
SET = "$set"
HEADER_IDS = ("sessionId", "projectHash")   # a header names both, as strings
IGNORED_PROMPT_STARTS = ("/", "?", "<session_context>", "<hook_context>")   # the client's `isIgnoredUserContent`
MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})

V = TypeVar("V")

__all__ = ["Chat", "Merge", "Parsed", "Record", "content_text", "is_resumable", "line_kind", "parse_chat",
           "first_prompt_of", "prompt_text", "read_chat", "chat_of_bytes"]


def line_kind(record: Record) -> str | None:
    """What the client takes a JSON object of a session file for: "rewind", "message", "set",
    "header", or None (a line it ignores). The order is the client's: a line that is two of them is
    the first."""
    if isinstance(record.get(REWIND), str):
        return "rewind"
    if isinstance(record.get("id"), str):
        return "message"
    if isinstance(record.get(SET), (dict, list)):   # any JavaScript object, an array too
        return "set"
    if all(isinstance(record.get(name), str) for name in HEADER_IDS):
        return "header"
    return None


def _accept(record: Record) -> str | None:
    return None if line_kind(record) is not None else \
        "a line Gemini CLI ignores (no message id, $set, $rewindTo or session header)"


def parse_chat(chunk: bytes, base_offset: int = 0, first_line: int = 1, *, exact: Exact | None = None) -> Parsed:
    """The records of the complete lines of `chunk` (which starts at `base_offset` in the file, its
    first line numbered `first_line`): JSON objects the client reads; every other line skipped with
    a warning naming it (`jsonl_lines.parse_lines`)."""
    return parse_lines(chunk, base_offset, first_line=first_line, exact=exact, accept=_accept)


def content_text(content: Any) -> str:
    """A message's content as the client flattens it for its checks (`partListUnionToString`,
    verbose): strings and `text` parts as they are, other parts as a bracketed word; lists within
    lists flattened (walked without recursion: a hostile file may nest them thousands deep)."""
    texts: list[str] = []
    stack = [content]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif item:
            texts.append(_part_text(item))
    return "".join(texts)


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    for key, word in (("videoMetadata", "[Video Metadata]"), ("codeExecutionResult", "[Code Execution Result]"),
                      ("executableCode", "[Executable Code]"), ("fileData", "[File Data]")):
        if key in part:
            return word
    if "thought" in part:
        return f"[Thought: {_js(part['thought'])}]"
    if "functionCall" in part:
        return f"[Function Call: {_name(part['functionCall'])}]"
    if "functionResponse" in part:
        return f"[Function Response: {_name(part['functionResponse'])}]"
    if "inlineData" in part:
        return "[Media]"
    text = part.get("text")
    return text if isinstance(text, str) else ""


def _name(value: Any) -> str:
    return _js(value.get("name")) if isinstance(value, dict) else "undefined"


def _js(value: Any) -> str:
    """How a template string shows a plain value (near enough for the checks it feeds)."""
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def is_resumable(message: dict[str, Any]) -> bool:
    """Whether the client counts the message as conversation (`isResumableMessageRecord`): a user
    message that is not empty, a command (`/`, `?`) or injected context; a gemini message with text,
    tool calls or thoughts. A session with none is left out of the client's own list."""
    kind = message.get("type")
    text = content_text(message.get("content")).strip()
    if kind == "user":
        return bool(text) and not text.startswith(IGNORED_PROMPT_STARTS)
    if kind == "gemini":
        return bool(text) or bool(_length(message.get("toolCalls"))) or bool(_length(message.get("thoughts")))
    return False


def _length(value: Any) -> int:
    return len(value) if isinstance(value, (list, str)) else 0


def prompt_text(message: dict[str, Any]) -> str | None:
    """The prompt a user message holds (its strings and `text` parts), or None: not a user message,
    one the client does not resume (a command, injected context), or one holding only tool results."""
    if message.get("type") != "user" or not is_resumable(message):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return None
    texts = [part if isinstance(part, str) else part.get("text") for part in content
             if isinstance(part, str) or isinstance(part, dict) and isinstance(part.get("text"), str)]
    return "".join(text for text in texts if isinstance(text, str)) if texts else None


def first_prompt_of(message: dict[str, Any]) -> str | None:
    """The client's `firstUserMessage` candidate: a resumable user message's text parts joined."""
    if message.get("type") != "user" or not is_resumable(message):
        return None
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part["text"] if isinstance(part, dict) and isinstance(part.get("text"), str) else ""
                       for part in content)
    return content if isinstance(content, str) else None


class Merge(Generic[V]):
    """The client's merge of a session's lines, applied chunk by chunk: its messages by id, in the
    order the client keeps them (a replaced message stays where it was), each as `summarize` makes it;
    the metadata (the keys `keep` names, every key when None); whether a rewind or a replacing
    `$set.messages` took messages away; the client's first prompt."""

    def __init__(self, summarize: Callable[[dict[str, Any]], V], keep: Collection[str] | None = None):
        self.summarize = summarize
        self.keep = keep
        self.messages: dict[str, V] = {}
        self.metadata: dict[str, Any] = {}
        self.rewinds = 0          # `$rewindTo` lines that took messages away
        self.replaced_lists = 0   # `$set.messages` lines that took messages away (the client's history rewrites)
        self.first_prompt: str | None = None
        self.headers = 0

    @property
    def is_session(self) -> bool:
        """Whether the client reads these lines as a session: its metadata names both ids (else the
        client reads the file as one JSON document)."""
        return all(self.metadata.get(name) for name in HEADER_IDS)

    def feed(self, records: Iterable[Record]) -> None:
        for record in records:
            kind = line_kind(record)
            if kind == "rewind":
                self._rewind(record[REWIND])
            elif kind == "message":
                self._put(record)
            elif kind == "set":
                self._set(record[SET])
            elif kind == "header":
                self.headers += 1
                self._merge(record)
                listed = record.get("messages")
                if isinstance(listed, list):
                    self.add(listed)

    def _put(self, message: dict[str, Any]) -> None:
        if self.first_prompt is None:
            self.first_prompt = first_prompt_of(message) or None
        self.messages[message["id"]] = self.summarize(message)

    def add(self, listed: list[Any]) -> None:
        """Add (or replace by id) each message of a list, as a header's or `$set`'s list is added."""
        for message in listed:
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                self._put(message)

    def _rewind(self, target: str) -> None:
        if target in self.messages:
            ids = list(self.messages)
            dropped = ids[ids.index(target):]
        else:
            dropped = list(self.messages)   # an id it does not have: the client drops everything
        for message_id in dropped:
            del self.messages[message_id]
        if dropped:
            self.rewinds += 1

    def _set(self, update: dict[str, Any] | list[Any]) -> None:
        if isinstance(update, list):   # JavaScript spreads an array as its indices
            self._merge({str(index): value for index, value in enumerate(update)})
            return
        listed = update.get("messages")
        if isinstance(listed, list):
            before = set(self.messages)
            self.messages.clear()
            self.add(listed)
            if before - set(self.messages):
                self.replaced_lists += 1
        self._merge(update)

    def _merge(self, update: dict[str, Any]) -> None:
        if self.keep is None:
            self.metadata.update(update)
        else:
            self.metadata.update((key, value) for key, value in update.items() if key in self.keep)


def _whole(message: dict[str, Any]) -> dict[str, Any]:
    return message


@dataclass(slots=True)
class Chat:
    """One session file as the client loads it: its metadata after every header and `$set`, its
    messages after every replacement and rewind (the client's message dicts, in its order), whether
    a rewind took messages away, and what was skipped."""

    session_id: str | None
    project_hash: str | None
    start_time: str | None
    last_updated: str | None
    kind: str | None          # "main", "subagent", or None (a main session of an older client)
    summary: str | None       # the title the client's model wrote
    messages: list[dict[str, Any]]
    metadata: dict[str, Any]  # every key the headers and `$set` lines gave (unknown ones too), but `messages`
    rewound: bool             # a `$rewindTo` took messages away: what the client sends lacks them
    first_prompt: str | None  # the client's first user message (of every line read, a rewound one too)
    warnings: list[str] = field(default_factory=list)
    legacy: bool = False      # read as one JSON document (`legacy.py`)
    end: int = 0              # the offset past the last complete line read

    @property
    def has_resumable_content(self) -> bool:
        """Whether the client's own list shows it (besides not being a subagent's)."""
        return any(is_resumable(message) for message in self.messages)


def _text(metadata: dict[str, Any], key: str) -> str | None:
    value = metadata.get(key)
    return value if isinstance(value, str) else None


def chat_of(merge: Merge[dict[str, Any]], warnings: list[str], end: int, *, legacy: bool = False) -> Chat:
    """The Chat a whole merge gives."""
    metadata = {key: value for key, value in merge.metadata.items() if key != "messages"}
    return Chat(session_id=_text(metadata, "sessionId"), project_hash=_text(metadata, "projectHash"),
                start_time=_text(metadata, "startTime"), last_updated=_text(metadata, "lastUpdated"),
                kind=_text(metadata, "kind"), summary=_text(metadata, "summary") or None,
                messages=list(merge.messages.values()), metadata=metadata,
                rewound=merge.rewinds > 0, first_prompt=merge.first_prompt,
                warnings=warnings, legacy=legacy, end=end)


def chat_of_bytes(data: bytes, *, exact: Exact | None = None) -> Chat:
    """A session file's bytes as the client loads them: its lines merged, or, when they never name
    the session (a whole JSON document), the document (`legacy.py`)."""
    parsed = parse_chat(data, 0, exact=exact)
    merge: Merge[dict[str, Any]] = Merge(_whole)
    merge.feed(parsed.records)
    if not merge.is_session:
        from .legacy import legacy_chat

        legacy = legacy_chat(data)
        if legacy is not None:
            return legacy
    return chat_of(merge, parsed.warnings, parsed.end)


def read_chat(path: Path, root: Path) -> Chat:
    """The session file at `path` (a regular file inside `root`), as the client loads it. Raises
    ReadProblem or FileNotFoundError for a file that cannot be read."""
    data, _ = read_regular_file(path, root)
    return chat_of_bytes(data)
