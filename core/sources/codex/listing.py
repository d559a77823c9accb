"""Codex's side of the listing: its rollouts under every root, their stat, and the listing fields
of one rollout, read on from where the last read of it ended.

Groups are the date folders `sessions/YYYY/MM/DD` and `archived_sessions/` of each root; a file's
id is the session id in its name, and its workspace the folder its `session_meta` names. The title
Codex gave a session lives in another file (`session_index.jsonl`), so a named session's stat is
its rollout's size with the later of its rollout's and the index's mtime: a rename is listed next time.
A fork Codex made counts the turns it inherits from its parent (read when the fork is), or warns that
the parent's rollout is missing. Rollouts
are append-only JSON lines: the listing keeps, per file, the `carry` of `core/sources/grown.py` (the
offset its last read reached, the file's identity, digests of its edges) with the fold's state, so a
grown rollout is read from that offset only, complete lines only; anything else is read whole again.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from pathlib import Path

from ...errors import RepriseError
from ...folder_scan import FolderNames, FolderStats, scan_folder
from ...paths import UNKNOWN_FOLDER_KEY, OwnPaths, workspace_key
from ...problems import Problem
from ...session_files import ReadProblem, read_regular_file
from ..agent_json import Exact
from ..agent_store import odd_folder_note, recorded_folder
from ..base import HeadKeys, ListedFile, ListingFields, SearchRecord, SessionFile
from ..byte_scan import ByteScanRule
from ..grown import GrownRead, files_of_workspaces
from ..jsonl_listing import JsonlListing, row_digest, settled
from ..jsonl_listing import listing_fields as agent_fields
from ..transcript_search import search_records
from .fields import CodexFields, ListingFold, orjson_exact
from .layout import ARCHIVED, CodexRoot, session_id_of
from .lineage import Lineage, inherited, inherited_by
from .records import SESSION_META, Parsed, Record, kind_of, parse_rollout
from .retention import ARCHIVED_NOTE
from .search import orjson_exact as search_exact
from .search_scan import byte_scan_rule
from .titles import SessionIndex
from .transcript import read_transcript

NAME = "codex"
MAX_WARNINGS = 5


def _parse(data: bytes, start: int, first: int) -> Parsed:
    return parse_rollout(data, start, first_line=first, exact=orjson_exact, skim=True, listed=True)


def _is_meta(record: object) -> bool:
    """Whether a record, as `_parse` gives it (a dict, or the listing's `Line`), is a `session_meta`."""
    kind = kind_of(record)[0] if isinstance(record, dict) else getattr(record, "type", None)
    return kind == SESSION_META


def _id_and_cwd(record: object) -> tuple[object, object]:
    """A `session_meta`'s session id and folder, as `_parse` gives the record (None where it has none)."""
    if isinstance(record, dict):
        payload = record.get("payload")
        return (payload.get("id"), payload.get("cwd")) if isinstance(payload, dict) else (None, None)
    payload = getattr(record, "payload", None)
    return getattr(payload, "id", None), getattr(payload, "cwd", None)


def listing_fields(found: CodexFields, file_id: str, key: str, title: str | None, warnings: Sequence[str], *,
                   archived: bool) -> ListingFields:
    """What a listing shows of one Codex session. An archived one is marked `hidden_by_agent` (Codex's
    own picker does not show it either) with a warning saying it is archived."""
    return agent_fields(found, file_id, key, folder=found.cwd, window=found.context_window,
                        hidden=found.hidden_by_agent or archived,
                        warning="; ".join(([ARCHIVED_NOTE] if archived else []) + list(warnings)) or None,
                        agent_title=title)


class CodexListing(JsonlListing[ListingFold], parse=_parse, fold=ListingFold):
    """Codex's stores under their roots, as the catalog lists them: a group is one date folder (or
    `archived_sessions/`), and each file's workspace is the folder its `session_meta` names."""

    name = NAME

    def __init__(self, roots: Sequence[Path], own_paths: OwnPaths):
        super().__init__(roots, own_paths)
        self.roots: list[CodexRoot] = [CodexRoot(Path(root)) for root in roots]
        self._prefixes = [(f"{root.path}/", root) for root in self.roots]
        self.indexes = {root.path: SessionIndex(root.index) for root in self.roots}
        self._names: dict[str, dict[str, str]] = {}   # {group: {session id: file name}}
        self._named: dict[Path, tuple[dict[str, str], int]] = {}   # each root's names as the last listing began

    def root_of(self, path: str | Path) -> CodexRoot:
        """The root a rollout is under (the listing never names a file outside its roots)."""
        text = str(path)
        for prefix, root in self._prefixes:
            if text.startswith(prefix):
                return root
        raise self._outside(text, "Codex")

    def root_path(self, path: str | Path) -> Path:
        return self.root_of(path).path

    def groups(self) -> list[str]:
        # A listing asks for the groups first: the names Codex gave are read (or their stat checked)
        # once for it, not once for each of its folders.
        self._named = {root.path: self.indexes[root.path].named() for root in self.roots}
        found: list[str] = []
        for root in self.roots:
            found.extend(root.date_folders())
            if root.archived.is_dir():
                found.append(str(root.archived))
        return found

    def file_stats(self, group: str, known: FolderNames | None = None) -> FolderStats:
        scanned = scan_folder(group, "Codex sessions folder", session_id_of, known)
        if scanned.problem is None:
            self._names[group] = scanned.names.names if scanned.names is not None else {}
            self._with_names(group, scanned.stats)
        return scanned

    def _with_names(self, group: str, found: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
        """A session Codex named is as new as its rollout or the index naming it, whichever changed last:
        a rename (an index line) changes no rollout, and must still reach the listing."""
        try:
            root = self.root_of(group).path
            named, changed_ns = self._named[root] if root in self._named else self.indexes[root].named()
        except (RepriseError, KeyError):
            return found
        for session_id in named.keys() & found.keys():
            size, mtime_ns = found[session_id]
            if mtime_ns >= 0:
                found[session_id] = (size, max(mtime_ns, changed_ns))
        return found

    def byte_scan_rule(self, first_chunk: bytes) -> ByteScanRule:
        return byte_scan_rule(first_chunk)

    def titles_apart(self) -> dict[str, str]:
        return {session_id: name for root in self.roots
                for session_id, name in self.indexes[root.path].named()[0].items()}

    def file_path(self, group: str, file_id: str) -> str:
        """The rollout's path: its name as the group's last scan saw it, else as its folder names it now
        (names only: the catalog asks this of every cached row before it stats the group's files)."""
        names = self._names.get(group)
        if names is None or file_id not in names:
            names = self._names[group] = _rollout_names(group)
        return f"{group}/{names.get(file_id, file_id)}"

    def locate(self, session_id: str) -> Path | None:
        """The rollout of a session id under any root (the groups' names as last seen, else looked at again)."""
        for fresh in (False, True):
            for group in self.groups():
                names = self._names.get(group) if not fresh else None
                if names is None:
                    self.file_stats(group)
                    names = self._names.get(group, {})
                if session_id in names:
                    return Path(group) / names[session_id]
        return None

    def read_records(self, path: Path, exact: Exact | None = None) -> tuple[bytes, list[Record], list[str], int]:
        """(the bytes, the records of its complete lines, the warnings, the offset past the last one);
        `exact`: decoded by orjson where it says orjson's value is json's (`parse_lines`)."""
        data, _ = read_regular_file(path, self.root_of(path).path)
        parsed = parse_rollout(data, 0, exact=exact)
        return data, parsed.records, parsed.warnings, parsed.end

    def records_of(self, session_id: str) -> list[Record] | None:
        """The records of a session's rollout found by id; None when the store has none (or it cannot be read)."""
        path = self.locate(session_id)
        if path is None:
            return None
        try:
            return self.read_records(path)[1]
        except (FileNotFoundError, ReadProblem, OSError, RepriseError):
            return None

    def title_of(self, path: Path, session_id: str) -> str | None:
        """The name Codex gave the session (its root's `session_index.jsonl`), or None."""
        try:
            return self.indexes[self.root_of(path).path].name_of(session_id)
        except (RepriseError, KeyError):
            return None

    def files_of_workspaces(self, files: list[SessionFile], keys: Collection[str], known: HeadKeys
                            ) -> list[SessionFile]:
        """The rollouts whose first `session_meta` (its first line, as Codex writes it) names one of
        these workspaces, or whose head does not tell."""
        return files_of_workspaces(files, keys, known, self._head_key)

    def _head_key(self, file: SessionFile) -> str | None:
        """The workspace key `read_listing` will give the rollout, from its head; None when the head
        does not tell (no session_meta there, or one without an id: the fold takes a later one's folder)."""
        head = self.head_record(file, _is_meta)
        if head is None:
            return None
        path = Path(file.path)
        record, whole = head
        if record is None:
            return self._fallback_key(path) if whole else None   # the rollout has no session_meta: a problem row
        session_id, cwd = _id_and_cwd(record)
        if not isinstance(session_id, str):
            return None
        if not isinstance(cwd, str):
            return self._fallback_key(path)
        folder = recorded_folder(cwd)
        return workspace_key(folder) if folder is not None else UNKNOWN_FOLDER_KEY

    def _unread_key(self, file: SessionFile) -> str:
        return self._fallback_key(Path(file.path))

    def _listed(self, file: SessionFile, read: GrownRead[ListingFold], now_ns: int) -> ListedFile:
        path = Path(file.path)
        found = read.fold.result()
        named, changed_ns = self.indexes[self.root_of(path).path].named()
        title = named.get(file.file_id)
        mtime_ns = max(read.mtime_ns, changed_ns) if title is not None else read.mtime_ns   # as file_stats says
        is_settled = settled(now_ns, mtime_ns)
        digest = row_digest(read, f"{read.size}|{title}")
        if found.cwd is None:
            problem = Problem(file.path, "no_session_meta", "the rollout has no session_meta record naming its "
                              "folder (cwd) yet" if read.size else "the rollout is empty")
            return ListedFile(self._fallback_key(path), file.file_id, file.path, read.size, mtime_ns, problem,
                              is_settled, digest, read.carry.to_bytes())
        warnings = list(read.warnings)
        if found.session_id is not None and found.session_id != file.file_id:
            warnings.append(f"its session_meta names session {found.session_id}, its file name {file.file_id}: "
                            "Codex refuses to resume it")
        if found.forked_from is not None:   # a Codex fork: its conversation starts with its parent's
            lineage = inherited_by(read.fold, self.records_of)
            found.turns += lineage.turns
            if lineage.gap is not None:
                warnings.append(lineage.gap)
        folder = recorded_folder(found.cwd)
        if folder is None:
            warnings.append(odd_folder_note(found.cwd))
        key = workspace_key(folder) if folder is not None else UNKNOWN_FOLDER_KEY
        found.cwd = folder
        fields = listing_fields(found, file.file_id, key, title, warnings, archived=path.parent.name == ARCHIVED)
        return ListedFile(key, file.file_id, file.path, read.size, mtime_ns, fields, is_settled, digest,
                          read.carry.to_bytes())

    def _fallback_key(self, path: Path) -> str:
        """The workspace key of a file whose folder is unknown: its Codex root's."""
        try:
            return workspace_key(self.root_of(path).path)
        except RepriseError:
            return workspace_key(path.parent)

    def transcript_records(self, records: list[Record]) -> tuple[list[Record], Lineage]:
        """A session's records with what a Codex fork inherits first, and that lineage."""
        lineage = inherited(records, self.records_of)
        return lineage.records + records, lineage

    def read_search_records(self, file: SessionFile) -> list[SearchRecord] | None:
        try:
            _, records, _, _ = self.read_records(Path(file.path), search_exact)
        except (FileNotFoundError, ReadProblem, OSError, RepriseError):
            return None
        joined, _ = self.transcript_records(records)
        transcript, _ = read_transcript(joined, file.file_id)
        return search_records(transcript)


def _rollout_names(group: str) -> dict[str, str]:
    """{session id: file name} of the rollouts in a folder, without a stat of each ({} when unreadable)."""
    try:
        entries = os.listdir(group)
    except OSError:
        return {}
    return {session_id: name for name in entries if (session_id := session_id_of(name)) is not None}

