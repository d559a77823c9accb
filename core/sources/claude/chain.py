"""The conversation Claude Code resumes from one file: the `parentUuid` chain back from the newest leaf.

Every record with a `uuid` names its parent; a rewind or a fork leaves siblings in the same file, and
only the chain back from the newest leaf is the conversation. The leaf is the newest main-line
record (`isSidechain` false) when it was written after the newest `last-prompt`, else that
`last-prompt`'s `leafUuid` when the file has it (a record appended after the last prompt, a
turn being written, extends the conversation), else the newest main-line record (in a subagent's
own file, `<session>/subagents/agent-*.jsonl`, where every record is a sidechain, the newest record). A
`compact_boundary` has no parent but keeps `logicalParentUuid`: the chain goes on through it,
the boundary marked, so the transcript keeps what came before the compaction.

`ChainTable` keeps one compact row per record (uuid, parent, kind, sidechain, and the little the
listing needs: a prompt's preview, an assistant message's model and context, a boundary's
tokens after), is extended by the records of lines appended later, and is stored per file as
bytes (`to_bytes`/`from_bytes`), so a grown file never has to be read again from its start.
"""

from __future__ import annotations

import marshal
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .messages import (
    ASSISTANT,
    BOUNDARY,
    COMMAND,
    ERROR,
    INTERRUPT,
    META,
    OTHER,
    PROMPT,
    RESULT,
    SYNTHETIC_MODEL,
    command_text,
    context_of,
    kind_of,
    line_context,
    prompt_text,
    usage_of,
)
from .records import Record

if TYPE_CHECKING:   # msgspec's structs: imported by a read, not by a warm listing
    from .listing_records import Line

PREVIEW_CHARS = 400
_FORMAT = 2   # 2: marshalled

# One row per record with a uuid: [uuid, parent uuid or None, kind, sidechain 0/1, extra]; extra is a
# prompt's preview, [model, context] for an assistant message, a boundary's postTokens, else None.
Row = list[Any]
UUID, PARENT, KIND, SIDE, EXTRA = range(5)


@dataclass(slots=True)
class Chain:
    """The main chain, root first, as row indices into its table."""

    rows: list[int] = field(default_factory=list)
    leaf: str | None = None
    cut_at: str | None = None    # the parent uuid the chain stops at because the file lacks it
    branches: int = 0            # conversations off the main chain (rewound turns, forks in the file)


class ChainTable:
    """The parent links of one file's records, extended in file order by `add`."""

    __slots__ = ("rows", "index", "leaf_hint", "rows_at_hint")

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.index: dict[str, int] = {}
        self.leaf_hint: str | None = None   # the newest last-prompt's leafUuid
        self.rows_at_hint = 0               # how many rows the table had when that last-prompt came

    def add(self, records: Iterable[Record]) -> None:
        for record in records:
            self.take(record)

    def take(self, record: Record) -> None:
        """Extend the table by the next record."""
        uuid = record.get("uuid")
        if not isinstance(uuid, str):
            if record.get("type") == "last-prompt" and isinstance(record.get("leafUuid"), str):
                self.leaf_hint = record["leafUuid"]
                self.rows_at_hint = len(self.rows)
            return
        self._append(uuid, record)

    def take_line(self, line: Line) -> None:
        """Extend the table by the next record, as the listing decoded it (`listing_records.Line`): the
        row `take` makes of the same line decoded whole."""
        uuid = line.uuid
        if not isinstance(uuid, str):
            if line.type == "last-prompt" and isinstance(line.leafUuid, str):
                self.leaf_hint = line.leafUuid
                self.rows_at_hint = len(self.rows)
            return
        kind, parent = OTHER, line.parentUuid
        extra: Any = None
        if line.type == "user":
            content = line.message.content if line.message is not None else None
            if line.isMeta or line.isCompactSummary:
                kind = META
            elif (isinstance(content, list) and any(block.type == "tool_result" for block in content)
                  and not any(block.type == "text" for block in content)):
                kind = RESULT   # a tool's output and no text: no prompt, no interruption
            else:   # its kind needs its text: read as the record a whole decode gives
                from .listing_records import as_record

                self._append(uuid, as_record(line))
                return
        elif line.type == "assistant":
            message = line.message
            model = message.model if message is not None else None
            if line.isApiErrorMessage or (model == SYNTHETIC_MODEL and line.error is not None):
                kind = ERROR
            else:
                kind = ASSISTANT
                usage = message.usage if message is not None else None
                synthetic = model == SYNTHETIC_MODEL
                extra = [model if isinstance(model, str) and model and not synthetic else None,
                         line_context(usage) if usage is not None and not synthetic else None]
        elif line.type == "system":
            if line.subtype == "compact_boundary":
                kind, parent = BOUNDARY, line.logicalParentUuid
                tokens = line.compactMetadata.postTokens if line.compactMetadata is not None else None
                extra = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
            elif line.subtype == "api_error":
                kind = ERROR
        self._put(uuid, parent, kind, line.isSidechain is True, extra)

    def _append(self, uuid: str, record: Record) -> None:
        kind = kind_of(record)
        parent = record.get("parentUuid")
        extra: Any = None
        if kind == BOUNDARY:
            parent = record.get("logicalParentUuid")
            metadata = record.get("compactMetadata")
            tokens = metadata.get("postTokens") if isinstance(metadata, dict) else None
            extra = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
        elif kind in (PROMPT, INTERRUPT, COMMAND):
            text = prompt_text(record) if kind != COMMAND else command_text(record)
            extra = text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"
        elif kind == ASSISTANT:
            message = record.get("message")
            model = message.get("model") if isinstance(message, dict) else None
            _, usage = usage_of(record)
            synthetic = model == SYNTHETIC_MODEL   # Claude Code's own placeholder reply: no model, no usage
            extra = [model if isinstance(model, str) and model and not synthetic else None,
                     context_of(usage) if usage is not None and not synthetic else None]
        self._put(uuid, parent, kind, record.get("isSidechain") is True, extra)

    def _put(self, uuid: str, parent: Any, kind: str, sidechain: bool, extra: Any) -> None:
        if isinstance(parent, str):
            known_parent = self.index.get(parent)
            if known_parent is not None:   # its row's own string: `pack` stores it once (marshal's references)
                parent = self.rows[known_parent][UUID]
        else:
            parent = None
        row = [uuid, parent, kind, 1 if sidechain else 0, extra]
        known = self.index.get(uuid)
        if known is not None:   # a uuid written twice (a re-sent record): the newer line wins, in its old place
            self.rows[known] = row
            return
        self.index[uuid] = len(self.rows)
        self.rows.append(row)

    def main_chain(self) -> Chain:
        leaf = self._leaf()
        chain = Chain(leaf=leaf)
        if leaf is None:
            return chain
        seen: set[int] = set()
        at: int | None = self.index[leaf]
        while at is not None and at not in seen:
            seen.add(at)
            chain.rows.append(at)
            parent = self.rows[at][PARENT]
            at = self.index.get(parent) if parent is not None else None
            if parent is not None and at is None:
                chain.cut_at = parent
        chain.rows.reverse()
        chain.branches = self._branches(seen)
        return chain

    def _leaf(self) -> str | None:
        newest = None
        for at in range(len(self.rows) - 1, -1, -1):
            if not self.rows[at][SIDE]:
                newest = at
                break
        if newest is None and self.rows:   # a subagent's own file: every record is on its sidechain
            newest = len(self.rows) - 1
        hint = self.index.get(self.leaf_hint) if self.leaf_hint is not None else None
        if hint is not None and (newest is None or newest < self.rows_at_hint):
            return str(self.rows[hint][UUID])
        return str(self.rows[newest][UUID]) if newest is not None else None

    def _branches(self, on_chain: set[int]) -> int:
        """Conversations off the main chain: the off-chain subtrees (not sidechains) holding a prompt,
        each counted once by the record where it leaves the chain (a stray sibling such as a retried
        API error or a progress record is no branch)."""
        top: dict[int, int] = {}   # row -> the first off-chain row on its way back to the chain
        roots: set[int] = set()
        rows, index = self.rows, self.index
        for start, row in enumerate(rows):
            if start in on_chain or row[SIDE] or row[KIND] not in (PROMPT, COMMAND):
                continue
            path = []
            at: int | None = start
            root = start
            while at is not None and at not in on_chain:
                if at in top:
                    root = top[at]
                    break
                path.append(at)
                root = at
                parent = rows[at][PARENT]
                at = index.get(parent) if parent is not None else None
                if len(path) > len(rows):   # a parent cycle
                    break
            for step in path:
                top[step] = root
            roots.add(root)
        return len(roots)

    def to_bytes(self) -> bytes:
        return pack(self.document())

    @classmethod
    def from_bytes(cls, data: bytes) -> ChainTable:
        """A table stored by `to_bytes`; ValueError when the bytes are not one (read the file again)."""
        return cls.from_document(unpack(data))

    def document(self) -> list[Any]:
        return [_FORMAT, self.leaf_hint, self.rows_at_hint, self.rows]

    @classmethod
    def from_document(cls, document: Any) -> ChainTable:
        if not (isinstance(document, list) and len(document) == 4 and document[0] == _FORMAT
                and isinstance(document[3], list)
                and all(isinstance(row, list) and len(row) == 5 for row in document[3])):
            raise ValueError("not a stored chain table of this version")
        table = cls()
        table.leaf_hint, table.rows_at_hint, table.rows = document[1], document[2], document[3]
        table.index = {row[UUID]: at for at, row in enumerate(table.rows)}
        return table

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ChainTable) and self.rows == other.rows and self.leaf_hint == other.leaf_hint
                and self.rows_at_hint == other.rows_at_hint)

    __hash__ = None  # type: ignore[assignment]  # mutable


def pack(document: Any) -> bytes:
    """A stored document: marshalled (its lists, strings and numbers only: json's encoder, in pure Python
    for non-ASCII text, took a tenth of a cold listing), compressed (uuids are most of it). Reprise's
    own cache keeps it, as it keeps its row snapshots (`row_snapshot`)."""
    return zlib.compress(marshal.dumps(document), 1)


def unpack(data: bytes) -> Any:
    try:
        return marshal.loads(zlib.decompress(data))
    except (zlib.error, ValueError, EOFError, TypeError) as exc:
        raise ValueError(f"not a stored document ({exc})") from exc


def main_chain_records(records: list[Record], table: ChainTable | None = None) -> tuple[list[Record], Chain,
                                                                                      ChainTable]:
    """The records of the main chain, root first (for a reader that has the whole file; `table`: their
    chain table, when it is built already)."""
    if table is None:
        table = ChainTable()
        table.add(records)
    chain = table.main_chain()
    by_uuid = {record["uuid"]: record for record in records if isinstance(record.get("uuid"), str)}
    return [by_uuid[table.rows[at][UUID]] for at in chain.rows], chain, table
