"""The listing fields of one Gemini CLI session file, folded from its lines as the file grows.

The fold is the client's merge (`lines.Merge`) keeping a few figures of each message instead of the
message: its type, its prompt (a user message's text, never the injected `<session_context>`, a
command or tool results), whether the client counts it as conversation, the tokens and model of a
gemini reply, its time. So a `$rewindTo` or a `$set.messages` appended later applies to what was
kept, and a grown file is read on from where the last read ended (`grown.py`).

A turn is a prompt and what followed it. Its status: failed when an `error` message came after
the prompt, interrupted when no gemini reply did (or one still waits on a tool), else succeeded.
The context now is measured: the input tokens of the newest gemini reply (cached ones included;
Gemini CLI does not write the window). The title is the client's `summary`, else the first prompt.
The client's own list leaves out subagent sessions and sessions with nothing it would resume
(`hidden_by_agent`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from ...transcript import Status, Usage
from ..jsonl_listing import PREVIEW_CHARS, FoldedFields
from .lines import Merge, Record, is_resumable, prompt_text

_FORMAT = 1
_BY_JSON = b"J"   # a stored state json wrote
_PLAIN = (str, int, float, bool)   # the metadata a fold stores (the fields read strings only)
KEPT = frozenset({"sessionId", "projectHash", "startTime", "lastUpdated", "kind", "summary"})
TOKEN_KEYS = ("input", "output", "cached", "thoughts", "tool")
# One message as the fold keeps it (a list: stored as JSON between reads).
TYPE, PROMPT, RESUMABLE, TOKENS, MODEL, STAMP, PENDING = range(7)


def integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def kept(message: dict[str, Any]) -> list[Any]:
    """What the fold keeps of one message: [type, prompt (cut to a preview), resumable, [input,
    output, cached, thoughts, tool] of a gemini reply (None without), model, timestamp, whether a tool
    call of it still waits on its result]."""
    kind = message.get("type")
    prompt = prompt_text(message)
    tokens = message.get("tokens")
    figures = [integer(tokens.get(key)) or 0 for key in TOKEN_KEYS] \
        if kind == "gemini" and isinstance(tokens, dict) and integer(tokens.get("input")) is not None else None
    model = message.get("model")
    stamp = message.get("timestamp")
    calls = message.get("toolCalls")
    pending = isinstance(calls, list) and any(isinstance(call, dict) and "result" not in call
                                              and call.get("status") not in ("error", "cancelled", "success")
                                              for call in calls)
    return [kind if isinstance(kind, str) else None, None if prompt is None else prompt[:PREVIEW_CHARS + 1],
            is_resumable(message), figures, model if isinstance(model, str) else None,
            stamp if isinstance(stamp, str) else None, pending]


def orjson_exact(record: Record) -> bool:
    """Whether orjson's value of a line gives json's figures: no float where a token count is (orjson
    reads an integer beyond 64 bits as one). A `$set.messages` snapshot is looked into too."""
    if isinstance(record.get("id"), str):
        return _exact_message(record)
    update = record.get("$set")
    listed = update.get("messages") if isinstance(update, dict) else record.get("messages")
    return not isinstance(listed, list) or all(_exact_message(message) for message in listed
                                               if isinstance(message, dict))


def _exact_message(message: dict[str, Any]) -> bool:
    tokens = message.get("tokens")
    return not isinstance(tokens, dict) or not any(isinstance(value, float) for value in tokens.values())


@dataclass(slots=True)
class GeminiFields(FoldedFields):
    """What a listing shows of one Gemini CLI session."""

    project_hash: str | None
    kind: str | None
    summary: str | None
    started_at: str | None
    rewound: bool            # a `$rewindTo` took messages back: the client sends only the rest
    errors: int              # the error and warning messages Gemini CLI recorded
    context_turn: int        # the turn (from 1) the measured context was read after
    is_session: bool         # its lines name the session (else the client reads it as one JSON document)
    last_updated: str | None = None   # the session's recorded `lastUpdated` (what the client's sweep ages it by)


class ListingFold:
    """The listing fields of a session file, fed its lines chunk by chunk."""

    def __init__(self) -> None:
        self.merge: Merge[list[Any]] = Merge(kept, KEPT)

    def feed(self, records: Iterable[Record]) -> None:
        self.merge.feed(records)

    def result(self) -> GeminiFields:
        metadata = self.merge.metadata
        turns = errors = 0
        first = last = ""
        status: Status | None = None
        replied = False
        context: int | None = None
        context_turn = 0
        model: str | None = None
        newest: str | None = _text(metadata, "lastUpdated")
        totals = [0, 0, 0, 0, 0]
        resumable = False
        for message in self.merge.messages.values():
            kind, prompt = message[TYPE], message[PROMPT]
            resumable = resumable or message[RESUMABLE]
            stamp = message[STAMP]
            if stamp is not None and (newest is None or stamp > newest):
                newest = stamp
            if prompt is not None:
                turns += 1
                first, last = first or prompt, prompt
                status, replied = "interrupted", False
            elif kind == "gemini":
                if message[TOKENS] is not None:
                    totals = [total + figure for total, figure in zip(totals, message[TOKENS], strict=True)]
                    context, context_turn = message[TOKENS][0], turns
                model = message[MODEL] or model
                replied = not message[PENDING]
                if turns and status != "failed":
                    status = "succeeded" if replied else "interrupted"
            elif kind in ("error", "warning"):
                errors += 1
                if kind == "error" and turns:
                    status = "failed"
        input_tokens, output, cached, thoughts, tool = totals
        kind = _text(metadata, "kind")
        return GeminiFields(
            session_id=_text(metadata, "sessionId"), cwd=None, first_message=first, last_message=last, turns=turns,
            last_status=status, last_activity=newest, branch=None, model=model, context_tokens=context,
            usage=Usage(input_tokens=max(0, input_tokens + tool - cached), output_tokens=output + thoughts,
                        cache_read_tokens=cached, context_tokens=context),
            hidden_by_agent=kind == "subagent" or not resumable, project_hash=_text(metadata, "projectHash"),
            kind=kind, summary=_text(metadata, "summary") or None, started_at=_text(metadata, "startTime"),
            rewound=self.merge.rewinds > 0, errors=errors, context_turn=context_turn,
            is_session=self.merge.is_session, last_updated=_text(metadata, "lastUpdated"))

    def to_bytes(self) -> bytes:
        merge = self.merge
        plain = {key: value for key, value in merge.metadata.items() if value is None or isinstance(value, _PLAIN)}
        state = [_FORMAT, plain, list(merge.messages.items()), merge.rewinds, merge.replaced_lists,
                 merge.first_prompt, merge.headers]
        try:
            return orjson.dumps(state)
        except TypeError:   # an integer beyond 64 bits in a kept value: json writes it, marked
            return _BY_JSON + json.dumps(state, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> ListingFold:
        """A fold stored by `to_bytes`; ValueError when the bytes are not one (read the file again)."""
        try:
            document = _stored(data)
            form, metadata, messages, rewinds, replaced, first, headers = document
            if form != _FORMAT or not isinstance(metadata, dict):
                raise ValueError("another version's fold")
            fold = cls()
            fold.merge.metadata = metadata
            fold.merge.messages = {str(key): value for key, value in messages}
            fold.merge.rewinds, fold.merge.replaced_lists = int(rewinds), int(replaced)
            fold.merge.first_prompt, fold.merge.headers = first, int(headers)
        except (TypeError, ValueError) as exc:   # orjson's and json's decode errors are ValueErrors
            raise ValueError("not a stored listing fold of this version") from exc
        return fold


def _stored(data: bytes) -> Any:
    """A stored fold's state (orjson would read json's integer beyond 64 bits as a float)."""
    return json.loads(data[len(_BY_JSON):]) if data.startswith(_BY_JSON) else orjson.loads(data)


def _text(metadata: dict[str, Any], key: str) -> str | None:
    value = metadata.get(key)
    return value if isinstance(value, str) else None
