"""Keeping an agent's session where the agent's own clean-up cannot reach it: the session file and
its sidecar files copied into the session's archive in Reprise's data folder (op "keep"), each
digest-verified, and the kept copies listed and read back, for a session whose original the agent
has since deleted. Each agent says in a `FileKeep` what its session file is called, which
folders of sidecar files go with it (Claude Code: `claude/keep.py`) and, for an agent that keeps one
session in several files (`file_is_session` False), its other files beside it (`companions`).

A file is copied as it was when it was opened: its first N bytes (N its size then), hashed, then
streamed into the archive, which refuses them unless they hash the same (a file rewritten in
between is an error, never a mixed copy; lines appended meanwhile wait for the next keep).
Keeping again adds each file whose bytes are new; no older copy is ever dropped.

Which sessions have kept copies is in a small index (`OwnPaths.kept_index`): each keep adds its
session's line before it copies anything, so a listing reads the archive indexes of those sessions
only, not of every archived session. A data folder without that index (kept by an older Reprise) is
walked once, and what the walk found is added to it with a last line saying so.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..archive import Archive, ArchiveEntry
from ..errors import ArchiveError, InvalidIdError, NotFoundError, RepriseError
from ..paths import OwnPaths, SessionRef
from ..problems import Problem
from ..rooted import Line, Root
from ..session_files import MAX_SESSION_BYTES

OP = "keep"
SESSION = "session"
COMPANIONS = "companions"   # the part of a session's other file: "companions/<its name>"
_CHUNK = 1 << 20
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WALKED: dict[str, object] = {"walked": True}   # the kept index names every session kept before it
_INDEX_LINE_BYTES = 4096


@dataclass(frozen=True, slots=True)
class KeptFile:
    """One kept version of one file: `part` is "session", or a sidecar's path under the session's
    folder ("subagents/agent-a1b2.jsonl")."""

    part: str
    digest: str
    size: int
    original: Path
    kept_at: str
    mtime_ns: int | None = None  # the original's modification time when it was kept

    def covers(self, size: int, mtime_ns: int) -> bool:
        """Whether this copy is of the file as it is now (same size and modification time: an
        append-only file that has not grown), so the agent's clean-up would lose nothing of it."""
        return self.size == size and self.mtime_ns == mtime_ns


@dataclass(frozen=True, slots=True)
class KeptSession:
    """A session with at least one kept version: the newest of its session file and of each sidecar."""

    ref: SessionRef
    store_root: Path
    session: KeptFile
    versions: int  # distinct versions of the session file kept
    sidecars: tuple[KeptFile, ...] = ()

    @property
    def digest(self) -> str:
        return self.session.digest

    @property
    def size(self) -> int:
        return self.session.size

    @property
    def original(self) -> Path:
        return self.session.original

    @property
    def kept_at(self) -> str:
        return self.session.kept_at

    def covers(self, size: int, mtime_ns: int) -> bool:
        """Whether the newest kept copy is of the session file as it is now (see KeptFile.covers)."""
        return self.session.covers(size, mtime_ns)


@dataclass(slots=True)
class KeepResult:
    """What one keep did: the version of the session file now kept, the files whose bytes were new
    (`added`) or already kept (`unchanged`), and each sidecar that could not be kept."""

    ref: SessionRef
    session: KeptFile
    added: list[KeptFile] = field(default_factory=list)
    unchanged: list[KeptFile] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


@dataclass(slots=True)
class KeptListing:
    sessions: list[KeptSession] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


# None when a path is named as the file of the session (its id); else the name it should have, for the error.
Misnamed = Callable[[Path, str], "str | None"]
# (part prefix, folder) of each folder whose files go with a session file: its parts are "<prefix>/<name>".
SidecarFolders = Callable[[Path, str], Sequence[tuple[str, Path]]]
# The session's other files beside its file (a stub a resume left): their parts are "companions/<name>".
Companions = Callable[[Path, str], Sequence[Path]]


def no_companions(session_file: Path, session_id: str) -> Sequence[Path]:
    """An agent that keeps each session in one file."""
    return ()


@dataclass(frozen=True, slots=True)
class FileKeep:
    """How one agent's sessions are kept: its name for people (`agent`), what its session files
    are called (`misnamed`), the folders of sidecar files that go with one (`sidecar_folders`;
    only the files directly in each are kept), and the session's other files beside it (`companions`)."""

    agent: str
    misnamed: Misnamed
    sidecar_folders: SidecarFolders
    companions: Companions = no_companions

    def keep(self, archive: Archive, ref: SessionRef, session_file: Path, store_root: Path) -> KeepResult:
        """Copy the session `ref` (its file `session_file` under the agent's root `store_root`) and
        its sidecars into its archive.

        The session file must be kept, else ArchiveError (or ChangedOnDiskError when it changed while
        it was copied) naming it; a sidecar that cannot be kept is a Problem in the result."""
        session_file = Path(session_file)
        wanted = self.misnamed(session_file, ref.session_id)
        if wanted is not None:
            raise ArchiveError(f"{session_file} is not the file of {self.agent} session {ref.session_id} "
                               f"({wanted}); nothing was kept.", path=session_file)
        store = Root(store_root, f"{self.agent} root")
        root_text = _root_text(store_root)
        try:   # before anything is copied: a kept copy is always found
            _index(archive.paths, [ref])
        except (OSError, RepriseError) as exc:
            index = archive.paths.kept_index()
            reason = exc.message if isinstance(exc, RepriseError) else exc.strerror or str(exc)
            raise ArchiveError(f"The kept index {index} could not record this session: {reason.rstrip('.')}; "
                               "nothing was kept.", path=index) from None
        kept = {(entry.info.get("part"), entry.digest): entry for entry in archive.entries(ref) if entry.op == OP}
        import secrets

        token = secrets.token_hex(6)
        session, new = _keep_file(archive, ref, store, session_file, SESSION, root_text, token, kept)
        result = KeepResult(ref, session)
        (result.added if new else result.unchanged).append(session)
        for path, part in self._other_files(store, session_file, ref.session_id, result):
            try:
                other, new = _keep_file(archive, ref, store, path, part, root_text, token, kept)
            except (OSError, RepriseError) as exc:
                result.problems.append(_problem(path, exc))
                continue
            (result.added if new else result.unchanged).append(other)
        return result

    def _other_files(self, store: Root, session_file: Path, session_id: str, result: KeepResult
                     ) -> list[tuple[Path, str]]:
        """(path, part) of each file kept with the session file: those directly in its sidecar folders,
        and the session's other files beside it. What cannot be kept is a problem in `result`."""
        found = []
        for sub, folder in self.sidecar_folders(session_file, session_id):
            try:
                names = store.names(folder)
            except (OSError, RepriseError) as exc:
                result.problems.append(_problem(folder, exc))
                continue
            for name, is_dir in names:
                path = folder / name
                if is_dir:
                    result.problems.append(Problem(str(path), "not_regular", f"{path} is a folder; only the files "
                                                   f"directly in {sub}/ are kept.", severity="warning"))
                    continue
                found.append((path, f"{sub}/{name}"))
        for path in self.companions(session_file, session_id):
            if path.parent != session_file.parent or path == session_file:
                result.problems.append(Problem(str(path), "not_beside", f"{path} is not another file of the "
                                               f"session beside {session_file}; it was not kept."))
                continue
            found.append((path, f"{COMPANIONS}/{path.name}"))
        return found

    def read_kept(self, archive: Archive, ref: SessionRef, part: str = SESSION) -> bytes:
        """The newest kept bytes of the session file (or of the sidecar `part`), verified against their
        digest; NotFoundError when nothing of it was kept."""
        return archive.read(ref, self._newest(archive, ref, part).digest)

    def kept_path(self, archive: Archive, ref: SessionRef, part: str = SESSION) -> Path:
        """Where the newest kept bytes of the session file (or of `part`) lie, for a reader that streams
        them (unverified: `read_kept` checks the digest)."""
        return archive.directory(ref) / f"{self._newest(archive, ref, part).digest}.json"

    def _newest(self, archive: Archive, ref: SessionRef, part: str) -> ArchiveEntry:
        matches = [entry for entry in archive.entries(ref) if entry.op == OP and entry.info.get("part") == part]
        if not matches:
            what = "it" if part == SESSION else part
            raise NotFoundError(f"Reprise has kept no copy of {what} for {self.agent} session {ref.session_id}.",
                                path=archive.directory(ref))
        return matches[-1]


def kept_sessions(paths: OwnPaths, *, store_root: Path | None = None) -> KeptListing:
    """Every kept session in Reprise's data folder `paths` (OwnPaths of the agent's source), read
    from the archive indexes of the sessions the kept index names (of every archived session when
    there is no complete kept index: it is then written); only those kept from `store_root` when
    it is given. A damaged index line or an unreadable folder is a Problem, and
    the rest is still listed."""
    listing = KeptListing()
    archive = Archive(paths)
    wanted = _root_text(store_root) if store_root is not None else None
    indexed = _indexed(archive, listing.problems)
    found_any: list[SessionRef] = []   # what a walk found kept, from any root: the index names them all
    for ref in indexed if indexed is not None else _archived(archive, listing.problems):
        reading = archive.reading(ref)
        listing.problems.extend(reading.problems)
        if indexed is None and _kept(ref, reading.entries, None) is not None:
            found_any.append(ref)
        found = _kept(ref, reading.entries, wanted)
        if found is not None:
            listing.sessions.append(found)
    if indexed is None:
        with contextlib.suppress(OSError, RepriseError):   # it is only a shortcut: the next listing walks again
            _index(paths, found_any, walked=True)
    return listing


def _archived(archive: Archive, problems: list[Problem]) -> Iterator[SessionRef]:
    """Every session with an archive folder in the data folder."""
    paths = archive.paths
    for key, is_dir in _names(archive.root, paths.workspaces, problems):
        try:
            folder = paths.archive_folder(key)
        except InvalidIdError:
            continue
        if not is_dir:
            continue
        for name, is_session_dir in _names(archive.root, folder, problems):
            try:
                ref = SessionRef(key, name, paths.source)
            except InvalidIdError:
                continue
            if is_session_dir:
                yield ref


def _index(paths: OwnPaths, refs: list[SessionRef], *, walked: bool = False) -> None:
    """Add these sessions to the kept index (and, after a walk, the line that says it named them all)."""
    items: list[dict[str, object]] = [{"workspace_key": ref.workspace_key, "session_id": ref.session_id}
                                      for ref in refs]
    if walked:
        items.append(_WALKED)
    Root(paths.root).append(paths.kept_index(),
                            b"".join((json.dumps(item, ensure_ascii=True) + "\n").encode("ascii") for item in items))


def _indexed(archive: Archive, problems: list[Problem]) -> list[SessionRef] | None:
    """The sessions the kept index names, in order, each once; None when it cannot say it names all
    (no index, an unreadable one, or no walk recorded after its last damaged line)."""
    paths = archive.paths
    index = paths.kept_index()
    refs: dict[SessionRef, None] = {}
    complete = False
    try:
        for line in archive.root.lines(index, _INDEX_LINE_BYTES):
            item = _json(line)
            if item == _WALKED:
                complete = True
            elif (ref := _ref_of(item, paths.source)) is not None:
                refs[ref] = None
            elif line.terminated:   # damaged: it may have named a session (a torn last line copied nothing)
                complete = False
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, RepriseError) as exc:
        problems.append(_problem(index, exc))
        return None
    return list(refs) if complete else None


def _json(line: Line) -> object:
    try:
        return json.loads(line.data) if line.data is not None else None
    except ValueError:
        return None


def _ref_of(item: object, source: str) -> SessionRef | None:
    if not isinstance(item, dict):
        return None
    try:
        return SessionRef(item["workspace_key"], item["session_id"], source)
    except (KeyError, TypeError, InvalidIdError):
        return None


def kept_session(archive: Archive, ref: SessionRef) -> KeptSession | None:
    """The kept versions of one session (None when it was never kept)."""
    return _kept(ref, archive.entries(ref), None)


# --- copying one file ----------------------------------------------------------------------------

def _keep_file(archive: Archive, ref: SessionRef, store: Root, path: Path, part: str, root_text: str, token: str,
               kept: dict[tuple[object, str], ArchiveEntry]) -> tuple[KeptFile, bool]:
    """(the kept version of one file, whether its bytes were new to the archive)."""
    fd = _open(store, path)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ArchiveError(f"{path} is not a regular file; nothing of it was kept.", path=path)
        size = info.st_size
        if size > MAX_SESSION_BYTES:
            raise ArchiveError(f"{path} is {size:,} bytes, over the {MAX_SESSION_BYTES:,}-byte limit; "
                               "nothing of it was kept.", path=path)
        hasher = hashlib.sha256()
        for chunk in _prefix(fd, size, path):
            hasher.update(chunk)
        name = hasher.hexdigest()
        known = kept.get((part, name))
        if known is not None and _int(known.info.get("mtime_ns")) == info.st_mtime_ns:
            return _file(known, part, path), False
        # Bytes already kept but touched since: the entry is indexed again (the copy is not
        # rewritten), so that `covers` sees the file's new modification time.
        entry = archive.put_copy(ref, name, _prefix(fd, size, path), op=OP, part=part, path=str(path),
                                 root=root_text, size=size, mtime_ns=info.st_mtime_ns, keep=token)
    finally:
        os.close(fd)
    kept[(part, name)] = entry
    return _file(entry, part, path), known is None


def _open(store: Root, path: Path) -> int:
    """An fd of a file under the agent's root, reached without following a link."""
    with store.parent(path) as (dir_fd, name):
        try:
            return os.open(name, _READ_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ArchiveError(f"{path} is a symlink; Reprise keeps only files it reaches without a link, "
                                   "so nothing of it was kept.", path=path) from None
            if isinstance(exc, FileNotFoundError):
                raise NotFoundError(f"{path} does not exist; nothing of it was kept.", path=path) from None
            raise ArchiveError(f"{path} cannot be read: {exc.strerror or exc}; nothing of it was kept.",
                               path=path) from None


def _prefix(fd: int, size: int, path: Path) -> Iterator[bytes]:
    """The first `size` bytes of an open file, a chunk at a time (what was there when it was opened)."""
    offset = 0
    while offset < size:
        try:
            chunk = os.pread(fd, min(_CHUNK, size - offset), offset)
        except OSError as exc:
            raise ArchiveError(f"{path} cannot be read: {exc.strerror or exc}; nothing of it was kept.",
                               path=path) from None
        if not chunk:
            raise ArchiveError(f"{path} shrank while Reprise copied it; nothing of it was kept.",
                               hint="try again", path=path)
        offset += len(chunk)
        yield chunk


# --- reading the indexes -------------------------------------------------------------------------

def _kept(ref: SessionRef, entries: list[ArchiveEntry], wanted_root: str | None) -> KeptSession | None:
    ours = [entry for entry in entries if entry.op == OP and isinstance(entry.info.get("part"), str)
            and (wanted_root is None or entry.info.get("root") == wanted_root)]
    sessions = [entry for entry in ours if entry.info["part"] == SESSION]
    if not sessions:
        return None
    newest: dict[str, ArchiveEntry] = {}
    for entry in ours:
        newest[entry.info["part"]] = entry
    session = newest.pop(SESSION)
    sidecars = tuple(_file(entry, part, None) for part, entry in sorted(newest.items()))
    return KeptSession(ref, Path(str(session.info.get("root", ""))), _file(session, SESSION, None),
                       len({entry.digest for entry in sessions}), sidecars)


def _file(entry: ArchiveEntry, part: str, path: Path | None) -> KeptFile:
    size, mtime_ns = _int(entry.info.get("size")), _int(entry.info.get("mtime_ns"))
    original = path if path is not None else Path(str(entry.info.get("path", "")))
    return KeptFile(part, entry.digest, size if size is not None else -1, original, entry.time, mtime_ns)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _names(root: Root, folder: Path, problems: list[Problem]) -> list[tuple[str, bool]]:
    try:
        return root.names(folder)
    except (OSError, RepriseError) as exc:
        problems.append(_problem(folder, exc))
        return []


def _problem(path: Path, exc: OSError | RepriseError) -> Problem:
    if isinstance(exc, RepriseError):
        return Problem(exc.path or str(path), exc.code, exc.message)
    return Problem(str(path), "unreadable", f"{path}: {exc.strerror or exc}.")


def _root_text(root: Path) -> str:
    return str(Path(root).expanduser().resolve())
