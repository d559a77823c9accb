"""What every agent's store offers Reprise: the session source protocol.

A source is one folder of code under `core/sources/<name>/`. It lists its session files,
reads the listing fields of one file, opens one session as the neutral `Transcript`, gives
its search text, its resume argv, the data the meter needs and its liveness rule, and says
through `capabilities` which actions it supports: the CLI and the TUI ask before offering one.
Nothing above the sources knows a store's file format.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ..paths import OwnPaths, SessionRef
from ..problems import Problem
from ..transcript import Status, Transcript, Usage


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The actions a source supports; each is asked before it is offered."""

    list: bool = True
    search: bool = True
    meter: bool = False
    resume: bool = False
    new: bool = False
    send: bool = False
    trim_in_place: bool = False
    trim_fork: bool = False
    trash: bool = False

    def names(self) -> list[str]:
        return [name for name in self.__slots__ if getattr(self, name)]


@dataclass(frozen=True, slots=True)
class SessionFile:
    """One file a source lists, with the stat the catalog checks it by."""

    workspace_key: str | None   # None when the folder is recorded inside the file (read with the fields)
    file_id: str
    path: str
    size: int
    mtime_ns: int


@dataclass(slots=True)
class ListingFields:
    """What a listing shows of one session, read from its file."""

    session_id: str
    workspace_key: str
    turns: int = 0
    first_message: str = ""
    last_message: str = ""
    last_status: Status | None = None
    pending: bool = False
    last_activity: str | None = None
    activity_source: str = "mtime"
    context_tokens: int = 0
    usage: Usage = field(default_factory=Usage)
    history_count: int = 0
    branch: str | None = None
    model: str | None = None
    hidden_by_agent: bool = False
    workspace_path: str | None = None
    warning: str | None = None


@dataclass(slots=True)
class ListedFile:
    """One file read for a listing: the stat of the bytes that were read (-1 when the file vanished),
    its listing fields or why it has none, and whether its stat is enough to notice its next change."""

    workspace_key: str
    file_id: str
    path: str
    size: int
    mtime_ns: int
    fields: ListingFields | Problem
    settled: bool = True   # False: a rewrite in the same clock tick could keep (size, mtime); read it again
    content_digest: str | None = None   # tells a re-read of an unsettled file from a change


@dataclass(slots=True)
class SearchRecord:
    """One searchable text of a session: a turn's field (`message`, `reply`, `tool`, ...)."""

    turn: int   # from 1
    field: str
    text: str


@dataclass(slots=True)
class OpenedSession:
    """One session read whole: the neutral transcript, plus the source's own model for the
    source's own operations (opaque to everything above the sources)."""

    ref: SessionRef
    path: Path
    size: int
    sha256: str
    transcript: Transcript
    warnings: list[Problem] = field(default_factory=list)
    native: object = None


class ListingSource(ABC):
    """What the catalog needs of a store: its files, their stat on every listing, the listing fields
    of a new or changed file, its search texts, and Reprise's own title and pin of a session.

    The catalog may hand a source to worker processes, so a source pickles (by its root)."""

    name: ClassVar[str]

    @abstractmethod
    def workspace_keys(self) -> list[str]:
        """The workspaces this store holds sessions of."""

    @abstractmethod
    def file_stats(self, key: str) -> tuple[dict[str, tuple[int, int]], Problem | None]:
        """{file id: (size, mtime_ns)} of one workspace's session files ((-1, -1) for a file that
        cannot be stat'ed), and the problem when the folder cannot be read. Run on every listing
        for every file: nothing a plain stat does not need."""

    @abstractmethod
    def file_path(self, key: str, file_id: str) -> str:
        """Where a file that `file_stats` named is."""

    @abstractmethod
    def read_listing(self, file: SessionFile, now_ns: int) -> ListedFile:
        """Read one file's listing fields (or the problem that stops it), never raising for the file."""

    @abstractmethod
    def read_search_records(self, file: SessionFile) -> list[SearchRecord] | None:
        """The texts a full-text search looks in; None when the file cannot be read now."""

    @abstractmethod
    def workspace_path(self, key: str) -> str | None:
        """The folder a workspace key stands for, when the store knows it."""

    @property
    @abstractmethod
    def own_paths(self) -> OwnPaths:
        """Where Reprise keeps its own files (titles and pins in `meta_dir`) for this source."""

    @abstractmethod
    def title_and_pin(self, ref: SessionRef) -> tuple[str | None, bool]:
        """Reprise's title and pin of a session, (None, False) when it has none or they cannot be read."""


class SessionSource(ListingSource):
    """One agent's session store."""

    label: ClassVar[str]
    capabilities: ClassVar[Capabilities]

    @abstractmethod
    def session_files(self, key: str | None = None) -> Iterator[SessionFile]:
        """Every session file (of one workspace, when the layout allows narrowing)."""

    @abstractmethod
    def open(self, ref: SessionRef) -> OpenedSession:
        """The session as a transcript; NotFoundError or ProblemFileError when it cannot be read."""

    @abstractmethod
    def search_records(self, opened: OpenedSession) -> Iterator[SearchRecord]:
        """The texts a full-text search looks in."""

    @abstractmethod
    def resume_argv(self, ref: SessionRef, workspace: str | None) -> list[str]:
        """The command that continues this session in its agent."""
