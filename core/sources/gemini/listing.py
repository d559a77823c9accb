"""Gemini CLI's side of the listing: its session files under every root, their stat, and the listing
fields of one session, read on from where the last read of it ended.

A group is one project's `chats/` folder; its workspace is the folder the client's map gives the
project (`workspaces.py`). A row is a session, not a file: the files of one session (a resume's
stub files, a `.json` a resume moved to `.jsonl`) are joined by the id in their names
(`layout.join_id`), the row's file the one the client resumes (`layout.main_first`) and its stat that
file's size with the newest of their mtimes; the session's id is read from its lines. A
subagent's session (`chats/<parent id>/`) is its parent's, not a row of its own, unless its parent's
file is gone. Session files are append-only JSON lines: the listing keeps, per file, the `carry` of
`core/sources/grown.py` with the merge's state (`fields.ListingFold`), so a grown file is read from
where the last read ended, a `$rewindTo` or `$set` appended later included. A `.json` session
(`legacy.py`), rewritten whole by the client, is read whole.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...errors import RepriseError
from ...folder_scan import NOT_FILES, FolderNames, FolderStats, opened_folder, scan_folder
from ...paths import OwnPaths, workspace_key
from ...problems import Problem
from ...session_files import ReadProblem, read_regular_file
from ..agent_json import Exact
from ..base import ListedFile, SearchRecord, SessionFile
from ..grown import GrownRead, first_record
from ..jsonl_listing import RACY_NS, JsonlListing, row_digest, settled
from ..jsonl_listing import listing_fields as agent_fields
from ..uuid_ids import is_uuid
from .fields import GeminiFields, ListingFold, orjson_exact
from .layout import (
    CHATS,
    PREFIX,
    PROJECT_ROOT,
    SUFFIXES,
    GeminiRoot,
    Registry,
    folder_of_project,
    is_session_name,
    join_id,
    main_first,
    marker_folder,
    read_registry,
)
from .legacy import legacy_chat
from .lines import Chat, Parsed, chat_of_bytes, line_kind, parse_chat
from .retention import FileFacts, facts_text, file_facts, recorded_time, talks
from .windows import token_limit
from .workspaces import GeminiRule, key_of

NAME = "gemini"
STUB_HEAD_BYTES = 16 << 10


def _parse(data: bytes, start: int, first: int) -> Parsed:
    return parse_chat(data, start, first, exact=orjson_exact)


def _is_header(record: dict[str, object]) -> bool:
    return line_kind(record) == "header"


def _member(name: str) -> str | None:
    """The names of a `chats/` folder a session is in: its session files, its subagents' folders."""
    return name if is_session_name(name) or is_uuid(name) else None


@dataclass(frozen=True, slots=True)
class SessionFiles:
    """The files of one session: the one the client resumes, the others of it in its folder (a
    resume's stubs, a `.json` moved to `.jsonl`), and its subagents' files."""

    main: Path
    others: list[Path]
    subagents: list[Path]


@dataclass(frozen=True, slots=True)
class Members:
    """The other files of each session of one `chats/` folder (by its row's file id), as the folder was
    when its stamp was taken."""

    stamp: tuple[int, int, int]
    others: dict[str, list[str]]


def joined(names: list[str], stats: dict[str, tuple[int, int]]) -> tuple[dict[str, tuple[int, int]],
                                                                          dict[str, list[str]]]:
    """{row file id: stat} of a `chats/` folder's names and {row file id: its other session files}: the
    session files of one session joined (`join_id`) under the one the client resumes (`join_stats`);
    a subagents' folder is no row here (`orphan_subagents`). Run on every listing for every file:
    a session of one file (most) costs a dict lookup or two."""
    by_id: dict[str, str | list[str]] = {}
    for name in names:
        if not name.startswith(PREFIX):
            continue   # a subagents' folder
        key = join_id(name)
        known = by_id.get(key)
        if known is None:
            by_id[key] = name
        elif isinstance(known, list):
            known.append(name)
        else:
            by_id[key] = [known, name]
    rows: dict[str, tuple[int, int]] = {}
    others: dict[str, list[str]] = {}
    missing = (-1, -1)
    for group in by_id.values():
        if isinstance(group, str):
            rows[group] = stats.get(group, missing)
            continue
        # several files share an id only in the client's own names (one width): by name, unless a `.json`
        files = main_first(group) if any(name.endswith(".json") for name in group) else sorted(group)
        rows[files[0]] = join_stats([stats.get(name, missing) for name in files])
        others[files[0]] = files[1:]
    return rows, others


def join_stats(stats: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """One stat of a session's files, the one the client resumes first: (-1, -1) when that one cannot
    be stat'ed; else its size (what is read and shown) and the newest mtime of them all (a stub
    written later is a change of the session)."""
    if not stats or stats[0][0] < 0:
        return -1, -1
    return stats[0][0], max(mtime for size, mtime in stats if size >= 0)


def orphan_subagents(group: str, names: list[str], rows: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """{`<folder>/<name>`: stat} of the files of each subagents' folder whose session has no file in
    the group (the client deleted or Reprise trashed it): listed, never dropped."""
    found: dict[str, tuple[int, int]] = {}
    folders = [name for name in names if not name.startswith(PREFIX) and is_uuid(name)]
    if not folders:
        return found
    parents = {join_id(name) for name in rows}
    for name in folders:
        if name[:8] in parents:
            continue
        try:
            with os.scandir(os.path.join(group, name)) as entries:
                for entry in entries:
                    if entry.name.endswith(SUFFIXES) and entry.is_file(follow_symlinks=False):
                        info = entry.stat(follow_symlinks=False)
                        found[f"{name}/{entry.name}"] = (info.st_size, info.st_mtime_ns)
        except OSError:
            continue
    return found


# The names of a `chats/` folder the catalog stores for its next scan: {name: name} of each row's file (the
# catalog builds its path from it), {name: _FOLDER} of each subagents' folder whose session has a row and
# {name: _ORPHANS} of the others (their files are rows: `orphan_subagents`); and {_STUBS: "<name>\0<mtime_ns>
# \0..."}: the row files whose stubs are newer than they are, with the stubs' newest mtime, which joins their
# stat (`join_stats`; a stub is written once, and appends only make the row's own file newer).
_FOLDER, _ORPHANS = "/", "//"
# And what the next listing need not read again of the group's project while the folder holds:
# {_MARKER: the folder its `.project_root` names (_NO_MARKER when none), _KEY: "<folder>\0<key>"}.
# The client writes a marker once, exclusively (`wx`), when it claims the project's slug, and never
# again: the marker stored is taken as it is (no stat) while the `chats/` folder holds.
_FORM, _FORM_VERSION = "\0form", "4"
_STUBS, _MARKER, _KEY, _NO_MARKER = "\0\0stubs", "\0\0marker", "\0\0key", "-"


def stored_names(names: list[str], others: dict[str, list[str]], stats: dict[str, tuple[int, int]],
                 orphans: dict[str, tuple[int, int]]) -> dict[str, str]:
    """The names a scan read, as the catalog stores them for the next: each row's file, each subagents'
    folder with whether its files are rows (`orphans`), the stubs newer than their row's file."""
    stubs = {name for more in others.values() for name in more}
    orphaned = {name.partition("/")[0] for name in orphans}
    stored = {_FORM: _FORM_VERSION}
    for name in names:
        if name not in stubs:
            stored[name] = name if name.startswith(PREFIX) else _ORPHANS if name in orphaned else _FOLDER
    newer = []
    for main, more in others.items():
        mtimes = [mtime for size, mtime in (stats.get(name, (-1, -1)) for name in more) if size >= 0]
        if mtimes and max(mtimes) > stats.get(main, (-1, -1))[1]:
            newer.append(f"{main}\0{max(mtimes)}")
    if newer:
        stored[_STUBS] = "\0".join(newer)
    return stored


def _held_stats(group: str, known: FolderNames) -> FolderStats | None:
    """The rows' stats of a folder whose stamp is the one `known` was read at: its rows' files stat'ed,
    each joined with its stubs' stored stats; None when the folder is to be read again (changed, a
    file gone, a name the catalog should not hold)."""
    try:
        fd = opened_folder(group)
    except OSError:
        return None
    stats: dict[str, tuple[int, int]] = {}
    folders: list[str] = []
    try:
        info = os.fstat(fd)
        if (info.st_ino, info.st_mtime_ns, info.st_ctime_ns) != known.stamp:
            return None
        stat_at = os.stat
        for key, value in known.names.items():
            if value == key:   # a row's file
                if "/" in key or key in NOT_FILES:
                    return None   # not a name as this version stores it
                try:
                    found = stat_at(key, dir_fd=fd)
                except FileNotFoundError:
                    return None
                except OSError:
                    stats[key] = (-1, -1)
                    continue
                stats[key] = (found.st_size, found.st_mtime_ns)
            elif value == _ORPHANS:
                folders.append(key)
            elif value != _FOLDER and not key.startswith("\0"):
                return None   # not as this version stores it
        joins = known.names.get(_STUBS)
        if joins:
            parts = joins.split("\0")
            for name, newest in zip(parts[::2], parts[1::2], strict=True):
                stat = stats.get(name)
                if stat is not None and stat[0] >= 0:
                    stats[name] = (stat[0], max(stat[1], int(newest)))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if folders:
        stats.update(orphan_subagents(group, folders, stats))
    return FolderStats(stats, group, None, known)


class GeminiListing(JsonlListing[ListingFold], parse=_parse, fold=ListingFold):
    """Gemini CLI's stores under their roots, as the catalog lists them: a group is one project's
    `chats/` folder, mapped to the project's folder by the client's own map."""

    name = NAME
    groups_are_workspaces = False
    file_is_session = False

    def __init__(self, roots: Sequence[Path], own_paths: OwnPaths):
        super().__init__(roots, own_paths)
        self.roots: list[GeminiRoot] = [GeminiRoot(Path(root)) for root in roots]
        self._prefixes = [(f"{root.path}/", root) for root in self.roots]
        self._registries: dict[Path, Registry] = {}
        self._markers: dict[str, tuple[tuple[int, int, int] | None, str | None]] = {}
        self._recalled: dict[str, str | None] = {}   # {project: its marker's folder} as stored (`_recall`)
        self._members: dict[str, Members] = {}
        self._groups: list[str] | None = None        # as the last listing began
        self._folders: dict[str, str] | None = None   # {group: folder} of those groups, once per listing
        self._folder_keys: dict[str, str] = {}
        self._rule = GeminiRule(self.groups, self.folders, self.key_of_folder)

    @property
    def workspaces(self) -> GeminiRule:
        return self._rule

    def root_of(self, path: str | Path) -> GeminiRoot:
        """The root a session file is under (the listing never names a file outside its roots)."""
        text = str(path)
        for prefix, root in self._prefixes:
            if text.startswith(prefix):
                return root
        raise self._outside(text, "Gemini CLI")

    def root_path(self, path: str | Path) -> Path:
        return self.root_of(path).path

    # --- projects and their folders --------------------------------------------------------------

    def groups(self) -> list[str]:
        # A listing asks for the groups first: the client's map (projects.json, the markers) is read, or
        # its stats checked, once for it, not once for each workspace the catalog asks the folder of.
        self._groups = [f"{tmp}/{slug}/{CHATS}" for root in self.roots if (tmp := str(root.tmp))
                        for slug in root.project_folders()]
        self._folders = None
        self._recalled = {}
        return self._groups

    def registry(self, root: GeminiRoot) -> Registry:
        """The root's `projects.json`, read again only when its stat changed."""
        found = self._registries[root.path] = read_registry(root.projects, self._registries.get(root.path))
        return found

    def folder_of_group(self, group: str, registries: dict[Path, Registry] | None = None) -> str | None:
        """The folder a project's `chats/` folder stands for (`layout.folder_of_project`), or None.
        `registries`: each root's `projects.json` as read for this listing (filled when asked)."""
        project = group.rpartition("/")[0]
        marker = self._marker(project)
        if marker is not None:
            return marker   # the registry is not asked (`folder_of_project`)
        try:
            root = self.root_of(group)
        except RepriseError:
            return None
        known = registries.get(root.path) if registries is not None else None
        registry = known if known is not None else self.registry(root)
        if registries is not None:
            registries[root.path] = registry
        return folder_of_project(project.rpartition("/")[2], None, registry.folders)

    def _marker(self, project: str) -> str | None:
        """The project's `.project_root` (`project`: its `tmp/<slug>` folder): as stored, while its
        `chats/` folder holds (`_recall`); else read again when its stat changed."""
        key = project
        if key in self._recalled:
            return self._recalled[key]
        try:
            info = os.stat(f"{project}/{PROJECT_ROOT}")
            stamp: tuple[int, int, int] | None = (info.st_size, info.st_mtime_ns, info.st_ino)
        except OSError:
            stamp = None
        known = self._markers.get(key)
        if known is not None and known[0] == stamp:
            return known[1]
        folder = marker_folder(Path(project)) if stamp is not None else None
        self._markers[key] = (stamp, folder)
        return folder

    def folders(self) -> dict[str, str]:
        """{group: folder} of every group whose folder the client's map gives, as the last listing
        began (read now when no listing has)."""
        if self._folders is None:
            groups = self._groups if self._groups is not None else self.groups()
            registries: dict[Path, Registry] = {}   # each root's, read once when a project has no marker
            self._folders = {group: folder for group in groups
                             if (folder := self.folder_of_group(group, registries)) is not None}
        return self._folders

    def key_of_group(self, group: str) -> str:
        return key_of(group, self.folder_of_group(group))

    def workspace_path(self, key: str) -> str | None:
        return self._rule.folder_of(key)

    # --- files ---------------------------------------------------------------------------------------

    def file_stats(self, group: str, known: FolderNames | None = None) -> FolderStats:
        """The rows' stats of a `chats/` folder. While the folder's stamp holds (no file added,
        removed or renamed), only the files the rows are read from are stat'ed: a resume's stub is
        written once, and its stat is the one the names stored (`stored_names`)."""
        if known is not None and known.stamp is not None and known.names.get(_FORM) == _FORM_VERSION:
            held = _held_stats(group, known)
            if held is not None:
                self._recall(group, known.names)
                return held
        scanned = scan_folder(group, "Gemini CLI chats folder", _member)
        if scanned.problem is not None:
            return scanned
        names = list(scanned.stats)
        rows, others = joined(names, scanned.stats)
        orphans = orphan_subagents(group, names, rows)
        rows.update(orphans)
        read = scanned.names
        if read is not None and read.stamp is not None:
            self._members[group] = Members(read.stamp, others)
            read = FolderNames(read.stamp, {**stored_names(names, others, scanned.stats, orphans),
                                            **self._remembered(group)})
        return FolderStats(rows, scanned.directory, None, read)

    def _remembered(self, group: str) -> dict[str, str]:
        """What the next listing need not read again of the group's project while its `chats/` folder
        holds: the folder its marker names, and its folder's workspace key."""
        project = group.rpartition("/")[0]
        folder = self.folder_of_group(group)   # the marker read into `_markers`
        entries = {_MARKER: self._markers.get(project, (None, None))[1] or _NO_MARKER}
        if folder is not None:
            entries[_KEY] = f"{folder}\0{self.key_of_folder(folder)}"
        return entries

    def _recall(self, group: str, names: dict[str, str]) -> None:
        """What `_remembered` stored of the group's project, taken as this listing's: its `chats/` folder
        holds, and the client never rewrites a marker."""
        marker, key = names.get(_MARKER), names.get(_KEY)
        if marker is not None:
            self._recalled[group.rpartition("/")[0]] = None if marker == _NO_MARKER else marker
        if key:
            folder, _, known = key.partition("\0")
            self._folder_keys.setdefault(folder, known)

    def key_of_folder(self, folder: str) -> str:
        """The workspace key of a project's folder (`paths.workspace_key`), worked out once a folder."""
        key = self._folder_keys.get(folder)
        if key is None:
            key = self._folder_keys[folder] = workspace_key(folder)
        return key

    def file_path(self, group: str, file_id: str) -> str:
        return f"{group}/{file_id}"

    def others_of(self, file: SessionFile) -> list[str]:
        """The other session files of the row's session in its folder (stubs, a moved `.json`)."""
        group = str(Path(file.path).parent)
        if "/" in file.file_id:
            return []   # a subagent's file, listed alone
        try:
            info = os.stat(group)
        except OSError:
            return []
        stamp = (info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
        members = self._members.get(group)
        if members is None or members.stamp != stamp:
            try:
                names = [name for name in os.listdir(group) if is_session_name(name)]
            except OSError:
                return []
            members = Members(stamp, joined(names, {})[1])
            if time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) >= RACY_NS:   # else a change may keep it
                self._members[group] = members
        return members.others.get(file.file_id, [])

    # --- a row ---------------------------------------------------------------------------------------

    def read_listing(self, file: SessionFile, now_ns: int) -> ListedFile:
        if file.path.endswith(".json"):
            return self._whole_listed(file, now_ns)
        return super().read_listing(file, now_ns)

    def _unread_key(self, file: SessionFile) -> str:
        return self.key_of_group(self._group_of(file))

    def _group_of(self, file: SessionFile) -> str:
        path = Path(file.path)
        return str(path.parent.parent if "/" in file.file_id else path.parent)

    def _listed(self, file: SessionFile, read: GrownRead[ListingFold], now_ns: int) -> ListedFile:
        found = read.fold.result()
        if not found.is_session:   # the client reads such a file as one JSON document
            return self._whole_listed(file, now_ns)
        size, mtime_ns, notes, others = self._joined_stat(file, read.size, read.mtime_ns, found.session_id)
        digest = row_digest(read, f"{size}|{mtime_ns}")
        main = _main_facts(file, read.size, read.mtime_ns, found.last_updated,
                           talks(read.size, found.session_id, found.kind, not found.hidden_by_agent))
        return self._row(file, found, size, mtime_ns, [*read.warnings, *notes], now_ns, digest, read.carry.to_bytes(),
                         [main, *others])

    def _whole_listed(self, file: SessionFile, now_ns: int) -> ListedFile:
        """The row of a file read whole: a `.json` session, or a file whose lines never name one."""
        path = Path(file.path)
        key = self._unread_key(file)
        try:
            data, info = read_regular_file(path, self.root_path(path))
        except FileNotFoundError:
            return ListedFile(key, file.file_id, file.path, -1, -1,
                              Problem(file.path, "vanished", "the file disappeared while it was read"), settled=False)
        except (ReadProblem, OSError, RepriseError) as exc:
            code = exc.code if isinstance(exc, ReadProblem) else "unreadable"
            message = exc.message if isinstance(exc, ReadProblem) else str(exc)
            return ListedFile(key, file.file_id, file.path, file.size, file.mtime_ns, Problem(file.path, code, message))
        self.bytes_read += len(data)
        chat = legacy_chat(data) if file.path.endswith(".json") else chat_of_bytes(data)
        size, mtime_ns, notes, others = self._joined_stat(file, len(data), info.st_mtime_ns,
                                                          chat.session_id if chat is not None else None)
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        if chat is None or not chat.legacy:
            problem = Problem(file.path, "no_session", "neither its lines nor the whole file name a session "
                              "(sessionId and projectHash): Gemini CLI does not list it" if data.strip()
                              else "the session file is empty")
            return ListedFile(key, file.file_id, file.path, size, mtime_ns, problem, settled(now_ns, mtime_ns), digest)
        loaded = chat_of_bytes(data) if file.path.endswith(".json") else chat   # what the client's sweep loads
        main = _main_facts(file, len(data), info.st_mtime_ns, _text(chat.metadata, "lastUpdated"),
                           talks(len(data), loaded.session_id, loaded.kind, loaded.has_resumable_content))
        return self._row(file, fold_of(chat).result(), size, mtime_ns, [*chat.warnings, *notes], now_ns, digest, None,
                         [main, *others])

    def _joined_stat(self, file: SessionFile, size: int, mtime_ns: int, session_id: str | None
                     ) -> tuple[int, int, list[str], list[FileFacts]]:
        """The row's stat (the file read, with the session's other files, as `file_stats` joins them),
        what to say of another file that names another session, and the other files' facts for the
        client's sweep (`retention.file_facts`: a resume's stubs are a few KB, read with their row)."""
        others = self.others_of(file)
        if not others:
            return size, mtime_ns, [], []
        group = Path(file.path).parent
        facts = [file_facts(group / name) for name in others]
        joined_size, joined_mtime = join_stats([(size, mtime_ns), *((fact[1], fact[2]) for fact in facts)])
        notes = []
        for name in others:
            named = self._session_named(group / name)
            if named is not None and session_id is not None and named != session_id:
                notes.append(f"{name} holds session {named[:40]!r}, not this one; it is listed with it (their "
                             "names share the id's first 8 characters)")
        return joined_size, joined_mtime, notes, facts

    def _session_named(self, path: Path) -> str | None:
        """The session id the first header of a small file names; None when it cannot be told."""
        try:
            record, _ = first_record(path, self.root_path(path), self.parse, _is_header)
        except (FileNotFoundError, ReadProblem, OSError, RepriseError):
            return None
        named = record.get("sessionId") if record is not None else None
        return named if isinstance(named, str) else None

    def _row(self, file: SessionFile, found: GeminiFields, size: int, mtime_ns: int, warnings: list[str],
             now_ns: int, digest: str, carry: bytes | None, files: list[FileFacts]) -> ListedFile:
        group = self._group_of(file)
        folder = self.folder_of_group(group)
        key = key_of(group, folder)
        notes = list(warnings)
        session_id = found.session_id if found.session_id is not None and is_uuid(found.session_id) else None
        if session_id is None:
            shown = (found.session_id or "")[:40].encode("unicode_escape").decode("ascii")
            notes.append(f"its session id {shown!r} is not a UUID: Reprise cannot name it" if found.session_id
                         else "it names no session id")
        if folder is None:
            notes.append(f"Gemini CLI's map names no folder for its project {Path(group).parent.name!r} "
                         "(no .project_root, not in projects.json): its folder is unknown")
        found.cwd = folder
        window = token_limit(found.model) if found.model else None   # the client's own; no file records one
        fields = agent_fields(found, file.file_id, key, folder=folder, window=window, hidden=found.hidden_by_agent,
                              warning="; ".join(notes) or None, agent_title=found.summary)
        fields.session_id = session_id or ""
        fields.sweep_facts = facts_text(files)
        return ListedFile(key, file.file_id, file.path, size, mtime_ns, fields, settled(now_ns, mtime_ns), digest,
                          carry)

    # --- finding a session by its id ------------------------------------------------------------------

    def locate(self, session_id: str, key: str | None = None) -> SessionFiles | None:
        """The files of a session: in the projects the workspace `key` maps to first, then in every
        project; a subagent's session in its parent's subagents' folder when no project holds it."""
        groups = self.groups()
        first = self._rule.groups_for([key]) if key is not None else None
        ordered = list(dict.fromkeys([*(first or []), *groups]))
        for group in ordered:
            found = self._files_in(Path(group), session_id)
            if found is not None:
                return found
        for group in ordered:
            alone = self._subagent_file(Path(group), session_id)
            if alone is not None:
                return SessionFiles(alone, [], [])
        return None

    def _files_in(self, group: Path, session_id: str) -> SessionFiles | None:
        try:
            names = [name for name in os.listdir(group) if is_session_name(name) and join_id(name) == session_id[:8]]
        except OSError:
            return None
        mine = [name for name in main_first(names) if self._names_session(group / name, session_id)]
        if not mine:
            return None
        return SessionFiles(group / mine[0], [group / name for name in mine[1:]], self._subagents(group / session_id))

    def _names_session(self, path: Path, session_id: str) -> bool:
        """Whether the file is of the session: its first header names it, else its lines merged do."""
        if self._session_named(path) == session_id:
            return True
        try:
            return self.read_chat(path)[1].session_id == session_id
        except (FileNotFoundError, ReadProblem, OSError, RepriseError):
            return False

    @staticmethod
    def _subagents(folder: Path) -> list[Path]:
        try:
            return sorted(folder / name for name in os.listdir(folder) if name.endswith(SUFFIXES))
        except OSError:
            return []

    @staticmethod
    def _subagent_file(group: Path, session_id: str) -> Path | None:
        try:
            parents = [name for name in os.listdir(group) if is_uuid(name)]
        except OSError:
            return None
        for parent in sorted(parents):
            for suffix in SUFFIXES:
                candidate = group / parent / f"{session_id}{suffix}"
                if candidate.is_file():
                    return candidate
        return None

    # --- search --------------------------------------------------------------------------------------

    def read_chat(self, path: Path, exact: Exact = orjson_exact) -> tuple[bytes, Chat]:
        """A session file's bytes and the session they hold, as the client loads it (decoded by orjson
        where `exact` says orjson's value is json's for what the reader uses)."""
        data, _ = read_regular_file(path, self.root_path(path))
        chat = legacy_chat(data) if path.name.endswith(".json") else chat_of_bytes(data, exact=exact)
        if chat is None:
            raise ReadProblem("no_session", "the file is not a session Gemini CLI reads")
        return data, chat

    def read_search_records(self, file: SessionFile) -> list[SearchRecord] | None:
        from .search import chat_search_records
        from .search import orjson_exact as search_exact

        try:
            _, chat = self.read_chat(Path(file.path), search_exact)
        except (FileNotFoundError, ReadProblem, OSError, RepriseError):
            return None
        return chat_search_records(chat, chat.session_id or file.file_id)


def _main_facts(file: SessionFile, size: int, mtime_ns: int, updated: str | None, talking: bool) -> FileFacts:
    """The facts of the file the row was read from, for the client's sweep (`retention.FileFacts`)."""
    return file.path.rpartition("/")[2], size, mtime_ns, recorded_time(updated), talking


def _text(metadata: dict[str, object], key: str) -> str | None:
    value = metadata.get(key)
    return value if isinstance(value, str) else None


def fold_of(chat: Chat) -> ListingFold:
    """The listing fold of a session read whole."""
    fold = ListingFold()
    keep = fold.merge.keep
    fold.merge.metadata = {key: value for key, value in chat.metadata.items() if keep is None or key in keep}
    fold.merge.add(chat.messages)
    fold.merge.rewinds = int(chat.rewound)
    return fold
