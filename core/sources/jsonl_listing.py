"""What the listings of agents whose sessions are append-only JSON-lines files (Claude Code, Codex)
share: the fields every such fold gives (`FoldedFields`) and how they become a listing's fields; a
listing (`JsonlListing`) that reads one new or changed file on from where its last read ended
(`core/sources/grown.py`), makes a problem row of a file that vanished or cannot be read, says when
a row is settled, digests it by its edges, keeps Reprise's own title and pin, and pickles by its roots.

A source's listing gives its roots (`root_path`), its line reader and fold (`parse`, `fold`), the
key of a file it could not read (`_unread_key`) and the row of one it read (`_listed`). Nothing here
runs per line.
"""

from __future__ import annotations

import hashlib
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, Self, TypeVar, cast

from ..archive import Archive
from ..errors import RepriseError
from ..own_files import OwnFiles
from ..paths import OwnPaths, SessionRef
from ..problems import Problem
from ..rooted import Root
from ..session_files import ReadProblem
from ..transcript import Status, Usage
from .base import ListedFile, ListingFields, ListingSource, SessionFile
from .grown import Fold, GrownRead, Parsed, first_record, read_grown

PREVIEW_CHARS = 400
RACY_NS = 3_000_000_000   # a row whose file changed this recently may change again within its mtime's tick
# A file idle this long keeps no fold in its carry, and is read whole if it ever grows again: most
# never do, and the folds were most of a cold listing's cache and a tenth of its CPU.
FOLD_KEPT_NS = 2 * 86_400 * 1_000_000_000



class StoredFold(Fold, Protocol):
    """A listing fold a new one of which is made by its class, and a stored one by `from_bytes`."""

    @classmethod
    def from_bytes(cls, data: bytes) -> Self: ...


F = TypeVar("F", bound=StoredFold)


class HasPath(Protocol):
    """An agent's root folder."""

    @property
    def path(self) -> Path: ...


def preview(text: str) -> str:
    """A message as a listing shows it: at most PREVIEW_CHARS characters."""
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


@dataclass(slots=True)
class FoldedFields:
    """What a listing fold of an agent's session file gives, whatever the agent."""

    session_id: str | None
    cwd: str | None
    first_message: str
    last_message: str
    turns: int
    last_status: Status | None
    last_activity: str | None
    branch: str | None
    model: str | None
    context_tokens: int | None        # measured by the agent
    usage: Usage
    hidden_by_agent: bool             # the agent's own picker does not show it


def listing_fields(found: FoldedFields, file_id: str, key: str, *, folder: str | None, window: int | None,
                   hidden: bool, warning: str | None, agent_title: str | None) -> ListingFields:
    """What a listing shows of one session an agent's file holds."""
    return ListingFields(
        session_id=file_id,
        workspace_key=key,
        turns=found.turns,
        first_message=preview(found.first_message),
        last_message=preview(found.last_message),
        last_status=found.last_status,
        pending=False,
        last_activity=found.last_activity,
        activity_source="history" if found.last_activity else "mtime",
        context_tokens=found.context_tokens or 0,
        usage=found.usage,
        branch=found.branch,
        model=found.model,
        context_window=window,
        hidden_by_agent=hidden,
        workspace_path=folder,
        warning=warning,
        agent_title=agent_title,
    )


def settled(now_ns: int, mtime_ns: int) -> bool:
    """Whether a row read now of a file changed at `mtime_ns` is final (not within RACY_NS of now)."""
    return abs(now_ns - mtime_ns) >= RACY_NS


def row_digest(read: GrownRead[F], extra: str) -> str:
    """A row's digest: the file's edges as read, and what else its row depends on (`extra`)."""
    return hashlib.blake2b(read.carry.head + read.carry.edge + extra.encode(), digest_size=16).hexdigest()


class JsonlListing(ListingSource, Generic[F]):
    """An agent's store of JSON-lines session files under its roots, as the catalog lists it: each
    file records its own folder, so the groups are not workspaces."""

    groups_are_workspaces = False
    roots: Sequence[HasPath]
    parse: Callable[[bytes, int, int], Parsed]   # the source's line reader
    fold: type[F]                                # the class of its listing fold

    def __init_subclass__(cls, *, parse: Callable[[bytes, int, int], Parsed] | None = None,
                          fold: type[StoredFold] | None = None, **rest: object) -> None:
        """A source's listing names its line reader and its fold's class where it is declared (a
        subclass of it keeps them unless it names others)."""
        super().__init_subclass__(**rest)
        if parse is not None:
            cls.parse = staticmethod(parse)
        if fold is not None:
            cls.fold = cast("type[F]", fold)   # the class's own fold: `JsonlListing[ListingFold], fold=ListingFold`

    def __init__(self, roots: Sequence[Path], own_paths: OwnPaths):
        self._own_paths = own_paths
        self.own_files = OwnFiles(own_paths, Root(own_paths.root, "Reprise's data folder"))
        self.archive = Archive(own_paths)
        self.bytes_read = 0   # what read_listing took from the disk, past the edges it checks (for the benchmarks)

    @abstractmethod
    def root_path(self, path: str | Path) -> Path:
        """The root a session file is under (RepriseError for a path under none)."""

    @abstractmethod
    def _unread_key(self, file: SessionFile) -> str:
        """The workspace key of a file that could not be read."""

    @abstractmethod
    def _listed(self, file: SessionFile, read: GrownRead[F], now_ns: int) -> ListedFile:
        """The row of a file read (`read`)."""

    def __reduce__(self) -> tuple[Callable[[type[JsonlListing[F]], list[str], str], JsonlListing[F]],
                                  tuple[type[JsonlListing[F]], list[str], str]]:
        return _listing_at, (type(self), [str(root.path) for root in self.roots], str(self._own_paths.root))

    @property
    def own_paths(self) -> OwnPaths:
        return self._own_paths

    def file_root(self, path: str) -> Path:
        return self.root_path(path)

    def _outside(self, path: str, agent: str) -> RepriseError:
        """The error of a path under none of the roots."""
        return RepriseError(f"{path} is not inside a {agent} root ({', '.join(str(r.path) for r in self.roots)}).")

    def read_file(self, path: Path, root: Path, previous: bytes | None, *, keep_fold: bool = True) -> GrownRead[F]:
        """Fold the file's records, from the previous read's offset when the file only grew since
        (`grown.read_grown`). Raises ReadProblem or FileNotFoundError for a file that cannot be read."""
        return read_grown(path, root, previous, new_fold=self.fold, stored_fold=self.fold.from_bytes, parse=self.parse,
                          keep_fold=keep_fold)

    def read_listing(self, file: SessionFile, now_ns: int) -> ListedFile:
        path = Path(file.path)
        try:
            read = self.read_file(path, self.root_path(path), file.carry,
                                  keep_fold=now_ns - file.mtime_ns < FOLD_KEPT_NS)
        except FileNotFoundError:
            return ListedFile(self._unread_key(file), file.file_id, file.path, -1, -1,
                              Problem(file.path, "vanished", "the file disappeared while it was read"), settled=False)
        except (ReadProblem, OSError, RepriseError) as exc:
            code = exc.code if isinstance(exc, ReadProblem) else "unreadable"
            message = exc.message if isinstance(exc, ReadProblem) else str(exc)
            return ListedFile(self._unread_key(file), file.file_id, file.path, file.size, file.mtime_ns,
                              Problem(file.path, code, message))
        self.bytes_read += read.read_bytes
        return self._listed(file, read, now_ns)

    def head_record(self, file: SessionFile, wanted: Callable[[dict[str, object]], bool]
                    ) -> tuple[dict[str, object] | None, bool] | None:
        """`grown.first_record` of the file within its root; None when it cannot be read (a whole read
        gives its problem)."""
        path = Path(file.path)
        try:
            return first_record(path, self.root_path(path), self.parse, wanted)
        except (FileNotFoundError, ReadProblem, OSError, RepriseError):
            return None

    def workspace_path(self, key: str) -> str | None:
        return None   # each file records its own folder: the catalog keeps it per row

    def title_and_pin(self, ref: SessionRef) -> tuple[str | None, bool]:
        try:
            meta = self.own_files.read_meta(ref)
        except (OSError, ValueError, RepriseError):
            return None, False
        return meta.title, meta.pinned


def _listing_at(kind: type[JsonlListing[F]], roots: list[str], data: str) -> JsonlListing[F]:
    return kind([Path(root) for root in roots], OwnPaths(Path(data), kind.name))
