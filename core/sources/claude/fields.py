"""The listing fields of one Claude Code session, folded from its records as the file grows.

`ListingFold.feed` takes the records of each newly read chunk (`records.parse_lines`), in file
order, as many times as the file grows; `result()` gives the fields of everything fed so far.
The fold and its chain table are stored per file (`to_bytes`/`from_bytes`), so a large file that
grows by one turn is read again only from the offset it reached.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from ...transcript import Status, Usage
from ..jsonl_listing import FoldedFields
from .chain import EXTRA, KIND, ChainTable, pack, unpack
from .messages import ASSISTANT, BOUNDARY, ERROR, INTERRUPT, PROMPT, count, tokens, turn_starts, usage_of
from .records import Record

if TYPE_CHECKING:   # msgspec's structs: imported by a read, not by a warm listing
    from .listing_records import Line

HIDDEN_ENTRYPOINTS = frozenset({"sdk-cli", "sdk-ts", "sdk-py"})   # `claude -p` and the SDKs: its picker hides them
_FORMAT = 2   # 2: packed by marshal
_ENDINGS: dict[str, Status] = {ASSISTANT: "succeeded", ERROR: "failed", INTERRUPT: "interrupted"}   # how a turn ended
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_SCALARS = ("session_id", "cwd", "custom_title", "ai_title", "summary", "last_activity", "branch", "version",
            "entrypoint", "cost", "unnamed_usage", "bad_lines", "line_warnings")
_KEPT_WARNINGS = 3
TitleSource = Literal["custom-title", "ai-title", "summary", "prompt"]


@dataclass(slots=True)
class ClaudeFields(FoldedFields):
    """What a listing shows of one Claude Code session (`context_tokens`: the newest main-chain API
    call's, or a newer compaction's tokens after; `usage`: every API message of the file once, split
    lines share `message.id`)."""

    title: str | None
    title_source: TitleSource | None
    context_basis: Literal["assistant", "compact_boundary"] | None
    entrypoint: str | None
    version: str | None
    branches: int                     # conversations off the main chain (rewound turns, forks in the file)
    chain_cut_at: str | None          # the parent uuid the main chain stops at because the file lacks it
    warning: str | None               # the lines that could not be read, for the listing's warning


def orjson_exact(record: Record) -> bool:
    """Whether orjson's value of a record is json's for every number the fold reads: no float where a
    usage count, a compaction's tokens or a cost is (orjson reads an integer beyond 64 bits as one)."""
    kind = record.get("type")
    if kind == "assistant":
        _, usage = usage_of(record)
        return usage is None or not any(isinstance(usage.get(key), float) for key in _USAGE_KEYS)
    if kind == "system":
        metadata = record.get("compactMetadata")
        return not isinstance(metadata, dict) or not isinstance(metadata.get("postTokens"), float)
    if kind == "cost-state":
        cost = record.get("totalCostUSD")
        return not isinstance(cost, float) or abs(cost) < 2**63
    return True


class ListingFold:
    """The listing fields of a session, fed its records chunk by chunk."""

    def __init__(self) -> None:
        self.chain = ChainTable()
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.custom_title: str | None = None
        self.ai_title: str | None = None
        self.summary: str | None = None         # older versions' `summary` record: their picker's title
        self.last_activity: str | None = None
        self.branch: str | None = None
        self.version: str | None = None
        self.entrypoint: str | None = None
        self.cost: float | None = None
        self.usage: dict[str, list[int]] = {}   # message.id -> the usage its newest line repeats
        self.unnamed_usage = [0, 0, 0, 0]       # assistant lines without a message id
        self.bad_lines = 0                      # lines `parse_lines` skipped
        self.line_warnings: list[str] = []      # the first few of its warnings

    def feed(self, records: Iterable[Record | Line], warnings: Iterable[str] = ()) -> None:
        """Fold in the records of the next chunk (dicts, and the listing's `Line`s as
        `records.parse_lines` gives them with `skim_results`), and the warnings it gave for it."""
        for warning in warnings:
            self.bad_lines += 1
            if len(self.line_warnings) < _KEPT_WARNINGS:
                self.line_warnings.append(warning)
        for record in records:
            if type(record) is dict:
                self._take(record)
            else:
                self._take_line(cast("Line", record))

    def _take(self, record: Record) -> None:
        self.chain.take(record)
        kind = record.get("type")
        if self.session_id is None and isinstance(record.get("sessionId"), str):
            self.session_id = record["sessionId"]
        if self.cwd is None and isinstance(record.get("cwd"), str):
            self.cwd = record["cwd"]
        if self.entrypoint is None and isinstance(record.get("entrypoint"), str):
            self.entrypoint = record["entrypoint"]
        stamp = record.get("timestamp")
        if isinstance(stamp, str) and (self.last_activity is None or stamp > self.last_activity):
            self.last_activity = stamp
        if isinstance(record.get("gitBranch"), str):
            self.branch = record["gitBranch"]
        if isinstance(record.get("version"), str):
            self.version = record["version"]
        if kind == "assistant":
            self._add_usage(*usage_of(record))
        elif kind == "custom-title" and isinstance(record.get("customTitle"), str):
            self.custom_title = record["customTitle"]   # "" clears it, as in Claude Code
        elif kind == "ai-title" and isinstance(record.get("aiTitle"), str):
            self.ai_title = record["aiTitle"]
        elif kind == "summary" and isinstance(record.get("summary"), str):
            self.summary = record["summary"]
        elif kind == "cost-state":
            self._add_cost(record.get("totalCostUSD"))

    def _take_line(self, line: Line) -> None:
        """`_take` of a line as the listing decoded it."""
        self.chain.take_line(line)
        kind = line.type
        if self.session_id is None and isinstance(line.sessionId, str):
            self.session_id = line.sessionId
        if self.cwd is None and isinstance(line.cwd, str):
            self.cwd = line.cwd
        if self.entrypoint is None and isinstance(line.entrypoint, str):
            self.entrypoint = line.entrypoint
        stamp = line.timestamp
        if isinstance(stamp, str) and (self.last_activity is None or stamp > self.last_activity):
            self.last_activity = stamp
        if isinstance(line.gitBranch, str):
            self.branch = line.gitBranch
        if isinstance(line.version, str):
            self.version = line.version
        if kind == "assistant":
            message = line.message
            if message is not None and message.usage is not None:
                usage = message.usage
                self._add_usage(message.id if isinstance(message.id, str) else None,
                                [tokens(usage.input_tokens), tokens(usage.output_tokens),
                                 tokens(usage.cache_read_input_tokens), tokens(usage.cache_creation_input_tokens)])
        elif kind == "custom-title" and isinstance(line.customTitle, str):
            self.custom_title = line.customTitle
        elif kind == "ai-title" and isinstance(line.aiTitle, str):
            self.ai_title = line.aiTitle
        elif kind == "summary" and isinstance(line.summary, str):
            self.summary = line.summary
        elif kind == "cost-state":
            self._add_cost(line.totalCostUSD)

    def _add_cost(self, cost: Any) -> None:
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self.cost = float(cost)

    def _add_usage(self, message_id: str | None, usage: dict[str, Any] | list[int] | None) -> None:
        """Count an API message's usage (a usage object, or its figures in `_USAGE_KEYS` order) once:
        split lines repeat it under one message id."""
        if usage is None:
            return
        figures = [count(usage, key) for key in _USAGE_KEYS] if isinstance(usage, dict) else usage
        if message_id is None:
            self.unnamed_usage = [a + b for a, b in zip(self.unnamed_usage, figures, strict=True)]
        else:
            self.usage[message_id] = figures

    def result(self) -> ClaudeFields:
        chain = self.chain.main_chain()
        rows = [self.chain.rows[at] for at in chain.rows]
        prompts = [row[EXTRA] for row in rows if row[KIND] == PROMPT]
        starts = turn_starts([row[KIND] for row in rows])
        messages = [rows[at][EXTRA] for at in starts]
        status: Status | None = None
        if starts:
            status = "succeeded"
            for row in reversed(rows[starts[-1] + 1:]):
                if row[KIND] in _ENDINGS:
                    status = _ENDINGS[row[KIND]]
                    break
        model = next((row[EXTRA][0] for row in reversed(rows) if row[KIND] == ASSISTANT and row[EXTRA][0]), None)
        context: int | None = None
        basis: Literal["assistant", "compact_boundary"] | None = None
        for row in reversed(rows):
            if row[KIND] == ASSISTANT and row[EXTRA][1] is not None:
                context, basis = row[EXTRA][1], "assistant"
                break
            if row[KIND] == BOUNDARY:   # a compaction newer than any reply: its tokens after, when recorded
                context, basis = row[EXTRA], "compact_boundary" if row[EXTRA] is not None else None
                break
        totals = list(self.unnamed_usage)
        for figures in self.usage.values():
            totals = [a + b for a, b in zip(totals, figures, strict=True)]
        title: str | None
        source: TitleSource | None
        if self.custom_title:
            title, source = self.custom_title, "custom-title"
        elif self.ai_title:
            title, source = self.ai_title, "ai-title"
        elif self.summary:
            title, source = self.summary, "summary"
        elif prompts:
            title, source = prompts[0], "prompt"
        else:
            title, source = None, None
        return ClaudeFields(
            session_id=self.session_id,
            cwd=self.cwd,
            title=title,
            title_source=source,
            first_message=messages[0] if messages else "",
            last_message=messages[-1] if messages else "",
            turns=len(starts),
            last_status=status,
            last_activity=self.last_activity,
            branch=self.branch,
            model=model,
            context_tokens=context,
            context_basis=basis,
            usage=Usage(input_tokens=totals[0], output_tokens=totals[1], cache_read_tokens=totals[2],
                        cache_creation_tokens=totals[3], cost=self.cost, context_tokens=context),
            hidden_by_agent=self.entrypoint in HIDDEN_ENTRYPOINTS,
            entrypoint=self.entrypoint,
            version=self.version,
            branches=chain.branches,
            chain_cut_at=chain.cut_at,
            warning=self._warning(),
        )

    def _warning(self) -> str | None:
        if not self.bad_lines:
            return None
        more = "; …" if self.bad_lines > len(self.line_warnings) else ""
        lines = "line" if self.bad_lines == 1 else "lines"
        return f"{self.bad_lines} {lines} skipped ({'; '.join(self.line_warnings)}{more})"

    def to_bytes(self) -> bytes:
        scalars = [getattr(self, name) for name in _SCALARS]
        return pack([_FORMAT, scalars, self.usage, self.chain.document()])

    @classmethod
    def from_bytes(cls, data: bytes) -> ListingFold:
        """A fold stored by `to_bytes`; ValueError when the bytes are not one (read the file again)."""
        document: Any = unpack(data)
        if not (isinstance(document, list) and len(document) == 4 and document[0] == _FORMAT
                and isinstance(document[1], list) and len(document[1]) == len(_SCALARS)
                and isinstance(document[2], dict)):
            raise ValueError("not a stored listing fold of this version")
        fold = cls()
        for name, value in zip(_SCALARS, document[1], strict=True):
            setattr(fold, name, value)
        fold.usage = document[2]
        fold.chain = ChainTable.from_document(document[3])
        return fold

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ListingFold) and self.chain == other.chain and self.usage == other.usage
                and all(getattr(self, name) == getattr(other, name) for name in _SCALARS))

    __hash__ = None  # type: ignore[assignment]  # mutable
