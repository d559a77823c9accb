"""What every agent's store offers Reprise: the session source protocol.

A source is one folder of code under `core/sources/<name>/`. It lists its session files,
reads the listing fields of one file, opens one session as the neutral `Transcript`, gives
its search text, its resume argv, the data the meter needs and its liveness rule, and says
through `capabilities` which actions it supports: the CLI and the TUI ask before offering one.
Nothing above the sources knows a store's file format.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, NamedTuple

from ..archive import Archive, ArchiveEntry
from ..audit import AuditLog
from ..folder_scan import FolderNames, FolderStats
from ..meter import MeterResult
from ..paths import OwnPaths, SessionRef
from ..problems import Problem
from ..transcript import Status, Transcript, Usage
from .byte_scan import ByteScanRule
from .roles import Capabilities as Capabilities
from .roles import Reader, Resumer, capabilities_of, roles_of
from .spec import SourceSpec
from .workspaces import GroupRule, RecordedRule, WorkspaceRule

if TYPE_CHECKING:
    from ..session_meta import SessionMeta

if TYPE_CHECKING:  # only the import links name them
    from ..session_links import SessionLink


@dataclass(frozen=True, slots=True)
class SessionFile:
    """One file a source lists, with the stat the catalog checks it by, and what the source kept of
    its last read of the file (`carry`), so a grown file can be read on from where that read ended."""

    workspace_key: str | None   # None when the folder is recorded inside the file (read with the fields)
    file_id: str
    path: str
    size: int
    mtime_ns: int
    carry: bytes | None = None
    group: str = ""   # the group `file_stats` named it in


# {path: (size, mtime_ns, the workspace key its head names, or None when it does not tell)}
HeadKeys = dict[str, tuple[int, int, str | None]]


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
    activity_source: Literal["history", "mtime"] = "mtime"   # what `last_activity` was read from
    context_tokens: int = 0
    usage: Usage = field(default_factory=Usage)
    history_count: int = 0
    branch: str | None = None
    model: str | None = None
    hidden_by_agent: bool = False
    workspace_path: str | None = None
    warning: str | None = None
    agent_title: str | None = None   # the title the agent itself keeps (Claude Code's custom or AI title)
    context_window: int | None = None   # the window the agent recorded for the session (Codex), its meter's too
    sweep_facts: str | None = None   # what the agent's own sweep needs of the session, as the read found it


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
    carry: bytes | None = None   # the source's state after this read, handed back with the file's next change


@dataclass(slots=True)
class Handoff:
    """What a source has to say before its agent resumes a session."""

    notes: list[str]
    snapshot: ArchiveEntry | None = None   # the archive entry written first
    meter: MeterResult | None = None       # the next turn's meter
    writer: str | None = None              # why the session counts as being written now


class AgentDeletion(NamedTuple):
    """When an agent will delete a session file by age, and how to say it (a tuple: a listing makes
    one for each of thousands of rows, and a frozen dataclass takes three times as long to make)."""

    at: float | None   # seconds since the epoch; None: not by a date (a count rule not reached yet)
    phrase: str        # "deleted by Claude Code in 4 days"
    at_risk: bool      # within the week, or due


@dataclass(slots=True)
class KeepReport:
    """What one keep copied: the session's newest kept copy, the files added and left as they were."""

    ref: SessionRef
    digest: str
    size: int
    added: list[str]
    unchanged: list[str]
    problems: list[Problem]


@dataclass(slots=True)
class SearchRecord:
    """One searchable text of a session: a turn's field (`message`, `reply`, `tool`, ...)."""

    turn: int   # from 1
    field: str
    text: str
    cut: bool = False   # part of the text was left out (a long tool output): words only there are not found


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
    agent_title: str | None = None   # the title the agent itself keeps (Claude Code's custom or AI title)
    branch: str | None = None        # the git branch the agent recorded (its newest)
    summary_text: str | None = None  # the agent's own rendered summary, when its format has one (Fractal)
    history: list[dict[str, object]] | None = None   # the agent's own per-turn history records (Fractal)


class ListingSource(ABC):
    """What the catalog needs of a store: its files in groups (folders), their stat on every listing,
    the listing fields of a new or changed file, its search texts, and Reprise's own title and pin
    of a session.

    A store either keeps each workspace's sessions in a group of their own, named by the workspace
    key (`groups_are_workspaces`: Fractal), or records the folder inside each file (Claude Code's
    slugs are lossy): then every group is listed and the key comes with each file's fields.
    The catalog may hand a source to worker processes, so a source pickles (by its root)."""

    name: ClassVar[str]
    groups_are_workspaces: ClassVar[bool] = True
    file_is_session: ClassVar[bool] = True   # False: a row's session id is its fields', not its file id

    @property
    def workspaces(self) -> WorkspaceRule:
        """How the store names workspaces (`workspaces.py`), which the catalog asks: by default a
        `group` rule when `groups_are_workspaces`, else a `recorded` one narrowed by
        `files_of_workspaces`. A store that keeps its own map of folders gives a `mapped` rule."""
        if self.groups_are_workspaces:
            return GroupRule(self.workspace_path)
        return RecordedRule(self.files_of_workspaces)

    @abstractmethod
    def groups(self) -> list[str]:
        """The groups (folders) of session files this store has."""

    @abstractmethod
    def file_stats(self, group: str, known: FolderNames | None = None) -> FolderStats:
        """{file id: (size, mtime_ns)} of one group's session files ((-1, -1) for a file that
        cannot be stat'ed), the problem when the folder cannot be read, and the names it read
        (`folder_scan`; `known`: the names an earlier scan read). Run on every listing for every
        file: nothing a plain stat does not need."""

    @abstractmethod
    def file_path(self, group: str, file_id: str) -> str:
        """Where a file that `file_stats` named is."""

    @abstractmethod
    def read_listing(self, file: SessionFile, now_ns: int) -> ListedFile:
        """Read one file's listing fields (or the problem that stops it), never raising for the file."""

    @abstractmethod
    def read_search_records(self, file: SessionFile) -> list[SearchRecord] | None:
        """The texts a full-text search looks in; None when the file cannot be read now."""

    @abstractmethod
    def workspace_path(self, key: str) -> str | None:
        """The folder a workspace key stands for, when the store knows it apart from its files."""

    def file_root(self, path: str) -> Path | None:
        """The root this file is read within (a raw read of its bytes, the search's byte scan, is
        bounded by the same), or None when the source names none: the file is then read by its
        reader only. Raises RepriseError for a path outside the source's roots."""
        return None

    def byte_scan_rule(self, first_chunk: bytes) -> ByteScanRule | None:
        """How the search's byte scan reads the file whose first chunk this is (`byte_scan.ByteScanRule`);
        None: every byte of it, as it is."""
        return None

    def titles_apart(self) -> dict[str, str]:
        """The titles the agent keeps apart from its session files, by file id (Codex's thread names):
        a search that scans the files' bytes before any listing reads the rows of those whose title
        matches too. {} when a session's title is only ever inside its file."""
        return {}

    def files_of_workspaces(self, files: list[SessionFile], keys: Collection[str], known: HeadKeys
                            ) -> list[SessionFile]:
        """Of these new or changed files of a store that records the folder in each file, those that can
        hold a session of these workspaces (the rest are not read for a listing of these); all of them
        unless the source can tell from less than a read of each. `known`: what it told of each file
        before, by path, which it keeps up to date (the catalog stores it)."""
        return files

    @property
    @abstractmethod
    def own_paths(self) -> OwnPaths:
        """Where Reprise keeps its own files (titles and pins in `meta_dir`) for this source."""

    @abstractmethod
    def title_and_pin(self, ref: SessionRef) -> tuple[str | None, bool]:
        """Reprise's title and pin of a session, (None, False) when it has none or they cannot be read."""


class SessionSource(Reader, Resumer):
    """One agent's session store: what Reprise reads and does with its sessions. Its `listing` is
    the part the catalog uses (it may run in worker processes, so it is a small object of its own).
    Every source reads and resumes; what else it does are the roles its class inherits
    (`core/sources/roles.py`), asked through `roles`."""

    spec: ClassVar[SourceSpec]   # what the registry knows of it (name, label, mark, id shape, store, client)
    name: ClassVar[str]
    label: ClassVar[str]
    cost_label: ClassVar[str] = "cost"                # what the USD figure the agent records is
    rename_note: ClassVar[str | None] = None          # what a rename in Reprise means to the agent
    window_per_folder: ClassVar[bool] = True          # `context_window` reads the folder's own settings
    resume_setting: ClassVar[str] = "[agent] resume"  # the config key of its resume argv
    trash_note: ClassVar[str | None] = None           # what the agent does with a session in Reprise's trash
    listing: ListingSource   # what the catalog lists of this store
    own_paths: OwnPaths      # where Reprise keeps its own files of this source's sessions
    archive: Archive         # Reprise's archive of them (trimmed and replaced bytes, long outputs)
    audit: AuditLog          # the log of what Reprise changed in them
    # Where the catalog's rows of a session id say its files are (set by the service): a store that
    # finds a file by probing every folder for its id asks this first.
    cataloged: Callable[[str], list[str]] | None = None

    @property
    def roles(self) -> frozenset[type]:
        """The roles this source's class inherits (read once per class)."""
        return roles_of(type(self))

    @property
    def capabilities(self) -> Capabilities:
        """What the source can do, as flags derived from its roles."""
        return capabilities_of(roles_of(type(self)))

    @abstractmethod
    def has_sessions(self, key: str) -> bool:
        """Whether this store holds any session of the workspace."""

    @abstractmethod
    def workspace_path(self, key: str) -> str | None:
        """The folder recorded for a workspace key, or None."""

    @abstractmethod
    def record_workspace(self, key: str, folder: Path) -> None: ...

    def imported_files(self) -> dict[str, str]:
        """{session id: the other agent's session file it was imported from} for the sessions this
        store's agent imported itself (the listing counts such a pair once); none by default."""
        return {}

    def import_links(self, ref: SessionRef, path: Path) -> list[SessionLink]:
        """The sessions of other agents this store's agent imported `ref` into, or `ref` from (its own
        record of them, such as Codex's ledger); none by default."""
        return []

    @abstractmethod
    def read_meta(self, ref: SessionRef) -> SessionMeta:
        """Reprise's own facts about the session (title, pin), kept outside the agent's files."""

    @abstractmethod
    def update_meta(self, ref: SessionRef, change: Callable[[SessionMeta], object]) -> SessionMeta: ...
