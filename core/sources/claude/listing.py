"""Claude Code's side of the listing: its session files under every root, their stat, and the
listing fields of one file, read on from where the last read of it ended.

Claude Code's files are large and append-only. The listing keeps, per file, a `carry`
(`core/sources/grown.py`: the offset its last read reached, the file's identity, digests of its
edges, the warnings so far) with the listing fold's state (its compact chain table): a file that
grew and still matches is read from that offset only; anything else is read whole again.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from pathlib import Path

from ...errors import RepriseError
from ...folder_scan import FolderNames, FolderStats, scan_folder, with_suffix
from ...paths import OwnPaths, workspace_key
from ...problems import Problem
from ...session_files import ReadProblem, chunks_of, opened_regular_file
from ..agent_store import odd_folder_note, recorded_folder
from ..base import HeadKeys, ListedFile, ListingFields, SearchRecord, SessionFile
from ..grown import GrownRead, files_of_workspaces
from ..jsonl_listing import JsonlListing, row_digest, settled
from ..jsonl_listing import listing_fields as agent_fields
from ..kept_listing import KEPT, KeptOnly
from .fields import ClaudeFields, ListingFold, orjson_exact
from .keep import KEEP
from .layout import SUFFIX, ClaudeRoot, is_session_id
from .records import Parsed, parse_lines
from .search import orjson_exact as search_exact
from .search import search_records
from .windows import claude_window

NAME = "claude"
_SESSION_FILE = with_suffix(SUFFIX, is_session_id)


def _parse(data: bytes, start: int, first: int) -> Parsed:
    return parse_lines(data, start, first_line=first, skim_results=True, exact=orjson_exact)


def _cwd(record: object) -> object:
    """A record's folder, as `_parse` gives the record (a dict, or the listing's `Line`)."""
    return record.get("cwd") if isinstance(record, dict) else getattr(record, "cwd", None)


def _names_folder(record: object) -> bool:
    return isinstance(_cwd(record), str)   # the fold keeps the first such record's (`ListingFold.feed`)


def listing_fields(found: ClaudeFields, file_id: str, key: str, folder: str | None,
                   warnings: Sequence[str]) -> ListingFields:
    """What a listing shows of one Claude Code session."""
    window = claude_window(found.model)
    return agent_fields(found, file_id, key, folder=folder, window=window[0] if window is not None else None,
                        hidden=found.hidden_by_agent, warning="; ".join(warnings) or None,
                        agent_title=found.title if found.title_source in ("custom-title", "ai-title") else None)


def folder_guess(group: str) -> str:
    """The folder a slug may stand for, for a file that records none (slugs are lossy)."""
    return "/" + Path(group).name.lstrip("-").replace("-", "/")


class ClaudeListing(JsonlListing[ListingFold], parse=_parse, fold=ListingFold):
    """Claude Code's stores under their roots, as the catalog lists them: a group is one project
    folder (`projects/<slug>`), and each file's workspace is the folder its records name."""

    name = NAME

    def __init__(self, roots: Sequence[Path], own_paths: OwnPaths):
        super().__init__(roots, own_paths)
        self.roots: list[ClaudeRoot] = [ClaudeRoot(Path(root)) for root in roots]
        self._projects = [(f"{root.projects}/", root.path) for root in self.roots]   # root_of runs per row
        self._own_prefix = f"{own_paths.root}/"
        self.kept = KeptOnly(own_paths, KEEP)   # the sessions only kept copies hold

    def root_of(self, path: str | Path) -> Path:
        """The root a session file is under (the listing never names a file outside its roots)."""
        text = str(path)
        for projects, root in self._projects:
            if text.startswith(projects):
                return root
        if text.startswith(self._own_prefix):
            return self._own_paths.root   # a kept copy
        raise self._outside(text, "Claude Code")

    def root_path(self, path: str | Path) -> Path:
        return self.root_of(path)

    def groups(self) -> list[str]:
        found = []
        for root in self.roots:
            try:
                entries = os.scandir(root.projects)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            found.append(entry.path)
                    except OSError:
                        continue
        return sorted(found) + self.kept.groups()

    @property
    def kept_problems(self) -> list[Problem]:
        """What the last listing of the kept copies could not read."""
        return self.kept.problems

    def file_stats(self, group: str, known: FolderNames | None = None) -> FolderStats:
        if group == KEPT:
            return self.kept.stats()
        return scan_folder(group, "project folder", _SESSION_FILE, known)

    def file_path(self, group: str, file_id: str) -> str:
        if group == KEPT:
            return self.kept.path(file_id)
        return f"{group}/{file_id}{SUFFIX}"

    def files_of_workspaces(self, files: list[SessionFile], keys: Collection[str], known: HeadKeys
                            ) -> list[SessionFile]:
        """The files whose first record naming a folder (`cwd`, in their head) names one of these
        workspaces, or whose head names none: the project folder's slug is lossy, and a file may
        record another folder than the one its project folder is named after."""
        return files_of_workspaces(files, keys, known, self._head_key)

    def _head_key(self, file: SessionFile) -> str | None:
        """The workspace key `read_listing` will give the file, from its head; None when the head does not tell."""
        head = self.head_record(file, _names_folder)
        if head is None:
            return None   # read whole: the read gives its problem
        record, whole = head
        if record is None and not whole:
            return None
        cwd = _cwd(record) if record is not None else None
        folder = recorded_folder(cwd) if isinstance(cwd, str) else None
        return workspace_key(folder if folder is not None else self._guessed(file))

    def _guessed(self, file: SessionFile) -> str:
        return folder_guess(file.group if file.group and file.group != KEPT else str(Path(file.path).parent))

    def _unread_key(self, file: SessionFile) -> str:
        return workspace_key(self._guessed(file))

    def _listed(self, file: SessionFile, read: GrownRead[ListingFold], now_ns: int) -> ListedFile:
        found = read.fold.result()
        warnings = list(read.warnings)
        folder = recorded_folder(found.cwd)
        if folder is None:
            guessed = folder = self._guessed(file)
            said = odd_folder_note(found.cwd) if found.cwd is not None else "the file records no folder (cwd)"
            warnings.append(f"{said}; guessed {guessed} from its project folder's name")
        if file.group == KEPT:
            warnings.insert(0, self.kept.note)
        key = workspace_key(folder)
        return ListedFile(key, file.file_id, file.path, read.size, read.mtime_ns,
                          listing_fields(found, file.file_id, key, folder, warnings), settled(now_ns, read.mtime_ns),
                          row_digest(read, str(read.size)), read.carry.to_bytes())

    def read_search_records(self, file: SessionFile) -> list[SearchRecord] | None:
        path = Path(file.path)
        try:
            with opened_regular_file(path, self.root_of(path)) as (fd, _):
                data = b"".join(chunks_of(fd))
        except (FileNotFoundError, ReadProblem, OSError, RepriseError):
            return None
        return search_records(parse_lines(data, 0, exact=search_exact).records)
