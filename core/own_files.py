"""Reprise's own files about a workspace's sessions (never inside a session file, which its agent
would drop): each session's metadata (title, pin, estimates), the lock that serialises Reprise's
writers of one session, and the record of the folder behind a workspace key. All of them are
reached through a `Root` (core/rooted.py), in the folders `OwnPaths` names for one source.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import LockedError, RepriseError
from .paths import OwnPaths, SessionRef, guess_workspace_path, validate_workspace_key
from .rooted import Root

if TYPE_CHECKING:
    from .session_meta import SessionMeta

MAX_META_BYTES = 1024 * 1024
MAX_RECORD_BYTES = 65536
LOCK_TIMEOUT_S = 10.0


def __getattr__(name: str) -> object:
    if name == "SessionMeta":   # its home is session_meta.py (pydantic): here for the sources that import it from here
        from .session_meta import SessionMeta

        return SessionMeta
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class OwnFiles:
    """Reprise's own files under one root, laid out by `paths`."""

    def __init__(self, paths: OwnPaths, rooted: Root):
        self.paths = paths
        self.rooted = rooted

    @contextlib.contextmanager
    def lock(self, ref: SessionRef, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
        """Serialise writers of one session between Reprise processes (fcntl.flock)."""
        path = self.paths.lock_file(ref)
        try:
            fd = self.rooted.open_lock(path)
        except OSError as exc:
            raise RepriseError(f"Could not open the lock file {path}: {exc.strerror or exc}; nothing was changed.",
                               path=path) from None
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockedError(
                            f"Session {ref.session_id} is being changed by another Reprise process.",
                            hint="try again in a moment", path=path) from None
                    time.sleep(0.01)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # --- Reprise's metadata --------------------------------------------------------------

    def read_meta(self, ref: SessionRef) -> SessionMeta:
        """A session's metadata; the defaults when the file is missing or unusable (see `meta_problem`)."""
        meta, _problem = self._meta(self.paths.meta_file(ref))
        return meta

    def _meta(self, path: Path) -> tuple[SessionMeta, str | None]:
        from .session_meta import SessionMeta

        try:
            data = self.rooted.read(path, MAX_META_BYTES)
        except FileNotFoundError:
            return SessionMeta(), None
        except RepriseError as exc:
            return SessionMeta(), exc.message
        try:
            return SessionMeta.model_validate_json(data), None
        except ValueError:
            return SessionMeta(), f"{path}: not a JSON object of Reprise's metadata (title, pinned, estimates)."

    def update_meta(self, ref: SessionRef, change: Callable[[SessionMeta], object]) -> SessionMeta:
        """Read, change and write a session's metadata under the session's lock. A metadata file
        that exists but cannot be read is not silently replaced."""
        with self.lock(ref):
            path = self.paths.meta_file(ref)
            meta, problem = self._meta(path)
            if problem is not None:
                raise RepriseError(f"{problem.rstrip('.')}; Reprise's metadata of this session was left as it is.",
                                   hint="fix or delete the file", path=path)
            change(meta)
            self.write_meta(ref, meta)
            return meta

    def write_meta(self, ref: SessionRef, meta: SessionMeta) -> None:
        data = json.dumps(meta.model_dump(mode="json"), indent=2) + "\n"
        self._write_own(self.paths.meta_file(ref), data.encode("ascii"), "the session's metadata")

    def _write_own(self, path: Path, data: bytes, what: str) -> None:
        """Write one of Reprise's own files through the root; an I/O error is a RepriseError naming it."""
        try:
            self.rooted.write_atomic(path, data)
        except OSError as exc:
            raise RepriseError(f"Could not write {what} ({path}): {exc.strerror or exc}.", path=path) from None

    def record_workspace(self, key: str, workspace: Path) -> None:
        """Remember the folder behind a key (the key cannot be reversed). Raises OSError when it cannot
        be written, RepriseError when a link or a non-file is in the way."""
        validate_workspace_key(key)
        path = self.paths.workspace_record(key)
        wanted = {"path": str(workspace)}
        with contextlib.suppress(FileNotFoundError, ValueError, RepriseError):
            if json.loads(self.rooted.read(path, MAX_RECORD_BYTES)) == wanted:
                return
        self.rooted.write_atomic(path, (json.dumps(wanted, indent=2) + "\n").encode("ascii"))

    def workspace_path(self, key: str) -> str | None:
        """The folder recorded for a key, or None. Called for every workspace on every listing, so it
        reads a plain path string and refuses anything but a small regular file reached without links."""
        validate_workspace_key(key)
        try:
            value = json.loads(self.rooted.read(self.paths.workspace_record(key), MAX_RECORD_BYTES)).get("path")
        except (OSError, ValueError, AttributeError, RepriseError):
            return None
        return value if isinstance(value, str) else None

    def workspace_name(self, key: str) -> str:
        """A workspace as messages name it: by its folder, never by its key."""
        try:
            folder = self.workspace_path(key) or guess_workspace_path(key)
        except RepriseError:
            folder = None
        return f"workspace {folder or '(folder unknown)'}"

