"""The listing fields of one Codex rollout, folded from its records as the file grows.

A turn runs from `event_msg task_started` to `task_complete` (or to the next `task_started`,
which leaves it interrupted); an older rollout without `task_started` starts a turn at each user
message. Prompts are events only (`item_completed` `UserMessage` in 0.171.0, `user_message` in
older versions): the `response_item` user and developer messages also carry the environment,
permissions and instructions Codex injects. How the last turn ended: `task_complete` succeeded,
unless it carries an `error` (0.171.0) or an `error` event came first (older versions): failed;
`turn_aborted` (or `aborted`) interrupted. The context now is measured: the input side of the
newest `token_count`'s `last_token_usage` (right after a compaction, whose entry has input 0, its
`total_tokens`: Codex's estimate of the compacted history), against its `model_context_window`
(never `total_token_usage`, which is cumulative; that gives the session's usage). The fold is
stored per file (`to_bytes`), so a grown rollout is read on from where the last read ended.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ...transcript import Status, Usage
from ..jsonl_listing import FoldedFields
from .records import EVENT, SESSION_META, TURN_CONTEXT, Record, integer, payload_of, prompt_in

if TYPE_CHECKING:   # msgspec's structs: imported by a read, not by a warm listing
    from .listing_records import Line

INTERACTIVE_SOURCES = frozenset({"cli", "vscode"})   # what `codex resume`'s picker offers without flags
ABORTED = frozenset({"turn_aborted", "aborted"})
_READ = frozenset({SESSION_META, TURN_CONTEXT, EVENT})   # the kinds of record the fold looks into
_FORMAT = 1
_STATUS: dict[str, Status] = {"succeeded": "succeeded", "failed": "failed", "interrupted": "interrupted"}


def token_figures(usage: Any) -> tuple[int, int, int] | None:
    """(input, cached input, output) of a `token_usage` object (cached input is part of input)."""
    if not isinstance(usage, dict):
        return None
    found = [integer(usage.get(key)) for key in ("input_tokens", "cached_input_tokens", "output_tokens")]
    if found[0] is None:
        return None
    return found[0], found[1] or 0, found[2] or 0


def context_of(usage: Any) -> tuple[int, str] | None:
    """The context a `last_token_usage` measures, and its basis: the call's input tokens ("call"),
    or, right after a compaction (input 0), the `total_tokens` Codex estimates the new history at
    ("compaction")."""
    figures = token_figures(usage)
    if figures is None:
        return None
    if figures[0] == 0 and isinstance(usage, dict) and (estimate := integer(usage.get("total_tokens"))):
        return estimate, "compaction"
    return figures[0], "call"


def session_source(value: Any) -> str | None:
    """`session_meta.source` as a word: "cli", "exec", "vscode", "mcp", or the key of an object
    (`{"subagent": …}`); None when absent (older rollouts)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and value:
        return str(next(iter(value)))
    return None


def orjson_exact(record: Record) -> bool:
    """Whether orjson's value of a record is json's for every number the fold reads: no float where a
    token count, a window or a fork's ordinal is (orjson reads an integer beyond 64 bits as one)."""
    payload = record.get("payload")
    if not isinstance(payload, dict):
        return True
    kind = record.get("type")
    if kind == SESSION_META:
        return not isinstance(payload.get("forked_from_ordinal_exclusive"), float)
    if kind != EVENT:
        return True
    info = payload.get("info")
    numbers = [payload.get("model_context_window")]
    if isinstance(info, dict):
        numbers.append(info.get("model_context_window"))
        for name in ("last_token_usage", "total_token_usage"):
            usage = info.get(name)
            if isinstance(usage, dict):
                numbers.extend(usage.values())
    return not any(isinstance(number, float) for number in numbers)


@dataclass(slots=True)
class CodexFields(FoldedFields):
    """What a listing shows of one Codex session."""

    source: str | None
    forked_from: str | None
    started_at: str | None
    context_basis: str                # "call": the newest call's input; "compaction": Codex's estimate after one
    context_turn: int
    context_window: int | None
    forked_at: int | None


@dataclass(slots=True)
class ListingFold:
    """The listing fields of a rollout, fed its records chunk by chunk."""

    session_id: str | None = None
    cwd: str | None = None
    source: str | None = None
    forked_from: str | None = None
    started_at: str | None = None
    branch: str | None = None
    model: str | None = None
    turns: int = 0
    open_turn: bool = False        # a task_started with no ending yet
    turn_prompted: bool = False    # the open turn has its prompt
    tasks_seen: bool = False       # the rollout marks turns with task_started (older ones do not)
    first_message: str = ""
    last_message: str = ""
    last_status: str | None = None
    last_activity: str | None = None
    context_tokens: int | None = None
    context_basis: str = "call"
    context_turn: int = 0
    context_window: int | None = None
    forked_at: int | None = None   # the parent's line count at the fork (`forked_from_ordinal_exclusive`)
    totals: list[int] = field(default_factory=lambda: [0, 0, 0])

    def feed(self, records: Iterable[Record | Line]) -> None:
        """Fold in the records of the next chunk (the lines it skipped are the reader's warnings): dicts,
        and the listing's `Line`s as `records.parse_rollout` gives them with `listed`."""
        for record in records:
            if type(record) is dict:
                self._take(record)
            else:
                self._take_line(cast("Line", record))

    def _take(self, record: Record) -> None:
        stamp = record.get("timestamp")
        if isinstance(stamp, str) and (self.last_activity is None or stamp > self.last_activity):
            self.last_activity = stamp
        kind = record.get("type")
        if not isinstance(kind, str) or kind not in _READ:
            return   # a model's item, a stub (`records.skimmed`): its timestamp is all the fold reads
        payload = payload_of(record)
        if kind == SESSION_META:
            if self.session_id is None:
                self._meta(payload.get("id"), payload.get("cwd"), payload.get("source"), payload.get("forked_from_id"),
                           payload.get("forked_from_ordinal_exclusive"), payload.get("timestamp", stamp),
                           payload.get("git"))
        elif kind == TURN_CONTEXT and isinstance(payload.get("model"), str):
            self.model = payload["model"]
        elif kind == EVENT and isinstance(inner := payload.get("type"), str):
            self._event(inner, payload.get("model_context_window"), payload.get("message"), payload.get("item"),
                        payload.get("error"), payload.get("info"))

    def _take_line(self, line: Line) -> None:
        """`_take` of a line as the listing decoded it (`listing_records`)."""
        stamp = line.timestamp
        if isinstance(stamp, str) and (self.last_activity is None or stamp > self.last_activity):
            self.last_activity = stamp
        kind, payload = line.type, line.payload
        assert payload is not None   # `listing_record` gives every line one
        if kind == SESSION_META:
            if self.session_id is None:
                self._meta(payload.id, payload.cwd, payload.source, payload.forked_from_id,
                           payload.forked_from_ordinal_exclusive, payload.timestamp, payload.git)
        elif kind == TURN_CONTEXT and isinstance(payload.model, str):
            self.model = payload.model
        elif kind == EVENT and isinstance(payload.type, str):
            self._event(payload.type, payload.model_context_window, payload.message, payload.item, payload.error,
                        payload.info)

    def _meta(self, session_id: Any, cwd: Any, source: Any, forked_from: Any, forked_at: Any, started: Any,
              git: Any) -> None:
        """The first `session_meta` (a resumed or forked rollout may repeat it: the first one names this
        file's session); `started`: its own timestamp, else its record's."""
        self.session_id = session_id if isinstance(session_id, str) else None
        self.cwd = cwd if isinstance(cwd, str) else None
        self.source = session_source(source)
        self.forked_from = forked_from if isinstance(forked_from, str) else None
        self.forked_at = integer(forked_at)
        self.started_at = started if isinstance(started, str) else None
        if isinstance(git, dict) and isinstance(git.get("branch"), str):
            self.branch = git["branch"]

    def _event(self, inner: str, window: Any, message: Any, item: Any, error: Any, info: Any) -> None:
        """An event of type `inner`, by the payload fields the fold reads (each as decoded, or None)."""
        if inner == "task_started":
            self.tasks_seen = True
            self._start()
            self.context_window = integer(window) or self.context_window
        elif (prompt := prompt_in(inner, message, item)) is not None:
            if not self.open_turn or (self.turn_prompted and not self.tasks_seen):
                self._start()   # an older rollout: no task_started, each user message is a turn
            if self.turn_prompted:
                return   # a message typed while the turn ran steers it; it is not a new prompt
            self.turn_prompted = True
            self.first_message = self.first_message or prompt
            self.last_message = prompt
        elif inner == "task_complete":
            failed = isinstance(error, dict) or (self.last_status == "failed" and self.open_turn)
            self._end("failed" if failed else "succeeded")
        elif inner in ABORTED:
            self._end("interrupted")
        elif inner == "error":
            if self.open_turn:
                self.last_status = "failed"
            else:
                self._end("failed")
        elif inner == "token_count":
            if not isinstance(info, dict):
                return   # rate limits only
            last = context_of(info.get("last_token_usage"))
            if last is not None:
                (self.context_tokens, self.context_basis), self.context_turn = last, self.turns
            total = token_figures(info.get("total_token_usage"))
            if total is not None:
                self.totals = list(total)
            window = integer(info.get("model_context_window"))
            self.context_window = window or self.context_window

    def _start(self) -> None:
        self.turns += 1   # the status is the last turn's: an earlier one left open is not asked about
        self.open_turn, self.turn_prompted, self.last_status = True, False, None

    def _end(self, status: str) -> None:
        self.last_status = status
        self.open_turn = False

    def result(self) -> CodexFields:
        status: Status | None = None
        if self.turns:
            # An unfinished last turn: running now, or cut off; liveness tells them apart.
            unfinished = self.open_turn and self.tasks_seen and self.last_status is None
            status = "interrupted" if unfinished else _STATUS.get(self.last_status or "", "succeeded")
        input_tokens, cached, output = self.totals
        return CodexFields(
            session_id=self.session_id, cwd=self.cwd, source=self.source, forked_from=self.forked_from,
            started_at=self.started_at, first_message=self.first_message, last_message=self.last_message,
            turns=self.turns, last_status=status, last_activity=self.last_activity, branch=self.branch,
            model=self.model, context_tokens=self.context_tokens, context_basis=self.context_basis,
            context_turn=self.context_turn, context_window=self.context_window, forked_at=self.forked_at,
            usage=Usage(input_tokens=input_tokens - cached, output_tokens=output, cache_read_tokens=cached,
                        context_tokens=self.context_tokens),
            hidden_by_agent=self.source is not None and self.source not in INTERACTIVE_SOURCES)

    def to_bytes(self) -> bytes:
        state = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return json.dumps([_FORMAT, state], separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> ListingFold:
        """A fold stored by `to_bytes`; ValueError when the bytes are not one (read the file again)."""
        try:
            document = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError("not a stored listing fold") from exc
        if not (isinstance(document, list) and len(document) == 2 and document[0] == _FORMAT
                and isinstance(document[1], dict) and set(document[1]) == set(cls.__dataclass_fields__)):
            raise ValueError("not a stored listing fold of this version")
        return cls(**document[1])
