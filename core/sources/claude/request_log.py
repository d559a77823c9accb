"""Claude Code's request log in a session file: the exact requests it sent, rebuilt.

Claude Code 2.1.332 logs each model call in three kinds of lines (checked with the real client):
- `api-request-shape` (`shapeHash`, `shape {system, tools}`): the system prompt's blocks and the
  tool definitions, written once per distinct shape;
- `api-request-blob` (`hash`, `message`): a request message that no transcript record holds as sent
  (the first prompt merged with its reminders, the `system`-role environment and tool listings),
  written once per hash;
- `api-request` (`id`, `querySource` "sdk" for `-p`, "repl_main_thread" for the interactive UI,
  `shapeHash`, `keep`, `tail`): the call's messages are the first `keep` messages of the previous
  `api-request` line, then one message per `tail` hash.

A message hash is SHA-256 of the message `{"role", "content"}` as JSON with sorted keys and no
spaces, a string content taken as one text block and `cache_control` left out. A hash with no blob is
a message the transcript holds: a `user` record's message, or an assistant message (its records
share `message.id`, one content block each). The assistant record a call produced names it
(`requestRef` = the `api-request` id), so the request a usage was measured for can be rebuilt.

`read_log` runs on the file's bytes when a session is opened (the reader skims these lines) and keeps
only what the meter needs: the requests it names, the newest request, and the newest interactive one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import agent_json
from .records import Record

SDK, INTERACTIVE = "sdk", "repl_main_thread"

_LINE = b'\n{"type":"api-request'
_KIND = re.compile(rb'\{"type":"(api-request(?:-shape|-blob)?)"')
_ID = re.compile(rb'"id":"([0-9A-Za-z-]{1,64})"')
_HASH = re.compile(rb'"(?:shapeHash|hash)":"([0-9a-f]{64})"')
_SOURCE = re.compile(rb'"querySource":"([A-Za-z0-9_.-]{1,64})"')


@dataclass(frozen=True, slots=True)
class Shape:
    """A request's fixed part: the system prompt's texts and each tool definition as JSON."""

    hash: str
    system: tuple[str, ...]
    tools: tuple[str, ...]

    @property
    def texts(self) -> tuple[str, ...]:
        return self.system + self.tools


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One logged model call: its shape and its messages' hashes, with the blobs it names."""

    id: str
    query_source: str | None
    version: str | None
    shape: Shape | None
    hashes: tuple[str, ...]
    blobs: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def interactive(self) -> bool:
        return self.query_source == INTERACTIVE


@dataclass(frozen=True, slots=True)
class RequestLog:
    """What the meter needs of a file's request log."""

    requests: dict[str, LoggedRequest] = field(default_factory=dict)   # the ones asked for, by id
    sources: dict[str, str | None] = field(default_factory=dict)       # every request's query source, by id
    newest: LoggedRequest | None = None
    newest_interactive: LoggedRequest | None = None


@dataclass(slots=True)
class _Index:
    requests: list[tuple[str, str | None, int, int]] = field(default_factory=list)   # (id, source, start, end)
    shapes: dict[str, tuple[int, int]] = field(default_factory=dict)
    blobs: dict[str, tuple[int, int]] = field(default_factory=dict)


def _lines(data: bytes) -> Iterator[tuple[bytes, int, int]]:
    """(kind, start, end) of each request-log line (found by its start: no other line is parsed)."""
    start = 0 if data.startswith(_LINE[1:]) else data.find(_LINE) + 1
    while start != 0 or data.startswith(_LINE[1:]):
        end = data.find(b"\n", start)
        if end == -1:
            return
        kind = _KIND.match(data, start, end)
        if kind is not None:
            yield kind.group(1), start, end
        found = data.find(_LINE, end)
        if found == -1:
            return
        start = found + 1


def _index(data: bytes) -> _Index:
    index = _Index()
    for kind, start, end in _lines(data):
        head_end = min(end, start + 400)
        if kind == b"api-request":
            found = _ID.search(data, start, head_end)
            source = _SOURCE.search(data, start, end)
            if found is not None:
                index.requests.append((found.group(1).decode(), source.group(1).decode() if source else None,
                                       start, end))
        else:
            found = _HASH.search(data, start, head_end)
            if found is not None:
                (index.shapes if kind == b"api-request-shape" else index.blobs)[found.group(1).decode()] = (start, end)
    return index


def _load(data: bytes, span: tuple[int, int]) -> dict[str, Any] | None:
    try:
        record = agent_json.loads(data[span[0]:span[1]])
    except (ValueError, RecursionError):   # not JSON, not UTF-8 (UnicodeDecodeError is a ValueError), too deep
        return None
    return record if isinstance(record, dict) else None


def _shape(data: bytes, index: _Index, shape_hash: Any) -> Shape | None:
    span = index.shapes.get(shape_hash) if isinstance(shape_hash, str) else None
    record = _load(data, span) if span is not None else None
    shape = record.get("shape") if record is not None else None
    if not isinstance(shape, dict):
        return None
    system = shape.get("system")
    texts = tuple(text for block in system if isinstance(block, dict) for text in _block_texts(block)) \
        if isinstance(system, list) else (system,) if isinstance(system, str) else ()
    tools = tuple(json.dumps(tool, sort_keys=True) for tool in shape.get("tools") or [] if isinstance(tool, dict))
    return Shape(str(shape_hash), texts, tools)


def _request(data: bytes, index: _Index, position: int) -> LoggedRequest | None:
    """The request at `position` in the index, its hashes resolved through `keep` (each `keep`
    names the previous request line's messages, back to one that keeps none)."""
    chain: list[dict[str, Any]] = []
    at = position
    while at >= 0:
        record = _load(data, index.requests[at][2:])
        if record is None:
            return None
        chain.append(record)
        keep = record.get("keep")
        if not isinstance(keep, int) or keep <= 0:
            break
        at -= 1
    else:
        return None   # a `keep` with no earlier request to keep from
    hashes: list[str] = []
    for record in reversed(chain):
        keep = record.get("keep")
        tail = record.get("tail")
        hashes = hashes[:keep if isinstance(keep, int) and keep > 0 else 0]
        if isinstance(tail, list):
            hashes.extend(h for h in tail if isinstance(h, str))
    newest = chain[0]
    blobs = {}
    for name in set(hashes):
        span = index.blobs.get(name)
        blob = _load(data, span) if span is not None else None
        if blob is not None and isinstance(blob.get("message"), dict):
            blobs[name] = blob["message"]
    source = newest.get("querySource")
    version = newest.get("version")
    return LoggedRequest(str(newest.get("id")), source if isinstance(source, str) else None,
                         version if isinstance(version, str) else None,
                         _shape(data, index, newest.get("shapeHash")), tuple(hashes), blobs)


def read_log(data: bytes, wanted: Iterable[str]) -> RequestLog:
    """The requests named in `wanted` (the `requestRef`s the meter measures), the newest request and
    the newest interactive one, read from a session file's bytes."""
    index = _index(data)
    if not index.requests:
        return RequestLog()
    position = {request_id: at for at, (request_id, *_rest) in enumerate(index.requests)}
    requests = {}
    for request_id in wanted:
        if request_id in position and (request := _request(data, index, position[request_id])) is not None:
            requests[request_id] = request

    def newest_of(source: str | None) -> LoggedRequest | None:
        for at in range(len(index.requests) - 1, -1, -1):
            if source is None or index.requests[at][1] == source:
                known = requests.get(index.requests[at][0])
                return known if known is not None else _request(data, index, at)
        return None

    return RequestLog(requests, {request_id: source for request_id, source, *_ in index.requests},
                      newest_of(None), newest_of(INTERACTIVE))


def message_hash(role: str, content: Any) -> str:
    """The hash Claude Code's request log names a message by."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        content = [{k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block
                   for block in content]
    text = json.dumps({"role": role, "content": content}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def transcript_messages(records: Iterable[Record]) -> dict[str, Any]:
    """The request messages the transcript holds, by hash: each `user` record's message, and each
    assistant message (its records' blocks, in order, joined by `message.id`)."""
    found: dict[str, Any] = {}
    assistant: dict[str, list[Any]] = {}
    for record in records:
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        if record.get("type") == "user" and "content" in message:
            found[message_hash("user", message["content"])] = message["content"]
        elif record.get("type") == "assistant" and isinstance(message.get("content"), list):
            message_id = message.get("id")
            key = message_id if isinstance(message_id, str) else str(id(record))
            assistant.setdefault(key, []).extend(message["content"])
    for content in assistant.values():
        found[message_hash("assistant", content)] = content
    return found


def _block_texts(block: dict[str, Any]) -> list[str]:
    kind = block.get("type")
    if kind == "text":
        return [str(block.get("text", ""))]
    if kind == "thinking":
        return [str(block.get("thinking", ""))]
    if kind == "redacted_thinking":
        return [str(block.get("data", ""))]
    if kind in ("tool_use", "server_tool_use"):
        return [str(block.get("name", "")), json.dumps(block.get("input", {}), sort_keys=True)]
    if kind == "tool_result":
        return content_texts(block.get("content"))
    return [json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True)]


def content_texts(content: Any) -> list[str]:
    """What the model reads of a message's content: each block's text, thinking, tool call (name and
    input as JSON) or tool result, another block as its JSON."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [text for block in content if isinstance(block, dict) for text in _block_texts(block)] + \
        [block for block in content if isinstance(block, str)]
