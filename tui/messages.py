"""The messages the main screen's workers post back to it: each a past-tense fact, as a dataclass.
Those that come in bursts (cost fills, meter results) may replace an older one still in the queue."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from reprise.core.meter import LiveMeter, MeterResult
    from reprise.core.progress import Progress
    from reprise.core.resume_costs import CostProgress
    from reprise.core.rows import SessionRow
    from reprise.core.sending import SendResult
    from reprise.core.service import SessionDetail


@dataclass
class RowsLoaded(Message):
    """A listing of the scope, its details read."""

    rows: list[SessionRow]
    where: str
    signature: tuple[object, ...]
    select: str | None = None
    kept: int = 0   # sessions this listing kept before their agent's sweep (`keep_before_sweep`)


@dataclass
class RowsRead(Message):
    """Rows of new or changed files, read while a listing of the scope is still going (a first start:
    newest first, their details loaded); the listing's RowsLoaded replaces them."""

    rows: list[SessionRow]
    scope: tuple[bool, str | None]   # (all workspaces, workspace key) the listing was of
    progress: Progress | None = None   # how far the read was when these rows were heard


@dataclass
class DetailLoaded(Message):
    """One session read for the preview, or why it could not be."""

    path: str
    detail: SessionDetail | None
    error: str | None = None
    comparisons: list[tuple[int, int, int]] = field(default_factory=list)
    stale: list[tuple[int, str, str | None]] = field(default_factory=list)
    window: int | None = None


@dataclass
class MeterPrepared(Message):
    """The meter's fixed parts of one session are counted; the draft is added per keystroke."""

    path: str
    prepared: LiveMeter | None
    error: str | None = None


@dataclass
class MeterUpdated(Message):
    """The meter with one version of the draft; only the newest counts."""

    path: str | None
    message: str
    result: MeterResult
    generation: int = 0

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, MeterUpdated)


@dataclass
class CostsFilled(Message):
    """How far the background fill of resume costs is (None: it ended, done or stopped): redraw the
    list once, however many arrived; a newer one replaces one not yet handled."""

    progress: CostProgress | None

    @property
    def label(self) -> str | None:
        progress = self.progress
        return None if progress is None or progress.finished else f"costs {progress.done:,}/{progress.total:,}"

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, CostsFilled)


@dataclass
class FilesRead(Message):
    """How far a long read of the catalog is (new or changed files listed, the first search's
    indexing); a newer one replaces one not yet handled."""

    progress: Progress

    @property
    def label(self) -> str | None:
        progress = self.progress
        return None if progress.finished else f"{progress.doing} {progress.done:,}/{progress.total:,} sessions…"

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FilesRead)


@dataclass
class TurnFinished(Message):
    """A turn sent from the composer ended, with its result or the error that stopped it."""

    path: str
    result: SendResult | None
    error: Exception | None

