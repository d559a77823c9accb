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

from ..paths import SessionRef
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


class SessionSource(ABC):
    """One agent's session store."""

    name: ClassVar[str]
    label: ClassVar[str]
    capabilities: ClassVar[Capabilities]

    @abstractmethod
    def workspace_keys(self) -> list[str]:
        """The workspaces this store holds sessions of."""

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
