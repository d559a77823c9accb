"""Reprise's folders, session identity, and the paths of Reprise's own files, from validated ids.

Nothing here touches the disk at import time; no other module builds a path from a raw
string. A session is (source, workspace key, id); the workspace key is a neutral hash of the
resolved folder (Fractal's `workspace_key`), so one folder's sessions of every agent meet.
Each source's own layout lives in its folder under `core/sources/`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import unicodedata
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from .errors import InvalidIdError

MAX_ID_LENGTH = 128
# A source's name (`SourceSpec.name`, `[sources.<name>]`, `--source <name>`): which ones exist is the
# registry's to say (core/sources/registry.py), not this module's.
SOURCE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_KEY_SHAPE = re.compile(r"^[A-Za-z0-9._-]{1,80}--[0-9a-f]{16}$")


def fractal_state_root(env: dict[str, str] | None = None) -> Path:
    """Fractal's own state root: FRACTAL_STATE_HOME, $XDG_STATE_HOME/fractal, ~/.local/state/fractal."""
    environment = os.environ if env is None else env
    if environment.get("FRACTAL_STATE_HOME"):
        return Path(environment["FRACTAL_STATE_HOME"]).expanduser()
    if environment.get("XDG_STATE_HOME"):
        return Path(environment["XDG_STATE_HOME"]).expanduser() / "fractal"
    return Path.home() / ".local" / "state" / "fractal"


def config_file(env: dict[str, str] | None = None) -> Path:
    environment = os.environ if env is None else env
    if environment.get("REPRISE_CONFIG"):
        return Path(environment["REPRISE_CONFIG"]).expanduser()
    import platformdirs

    return platformdirs.user_config_path("reprise") / "config.toml"


def data_dir(env: dict[str, str] | None = None) -> Path:
    """Reprise's own data folder, for what it keeps about other agents' sessions (REPRISE_DATA_DIR overrides)."""
    environment = os.environ if env is None else env
    if environment.get("REPRISE_DATA_DIR"):
        return Path(environment["REPRISE_DATA_DIR"]).expanduser()
    import platformdirs

    return platformdirs.user_data_path("reprise")


def cache_dir(env: dict[str, str] | None = None) -> Path:
    environment = os.environ if env is None else env
    if environment.get("REPRISE_CACHE_DIR"):
        return Path(environment["REPRISE_CACHE_DIR"]).expanduser()
    import platformdirs

    return platformdirs.user_cache_path("reprise")


UNKNOWN_FOLDER_KEY = "unknown-folder--0000000000000000"   # no path's key: its digest would have to be all zeros


# While `keys_resolved_once` holds (in this thread or task): each folder's key as first resolved.
_RESOLVED: ContextVar[dict[str, str] | None] = ContextVar("resolved_keys", default=None)


def workspace_key(path: str | Path) -> str:
    """Fractal's workspace key: a readable slug of the resolved path plus a digest of it."""
    memo = _RESOLVED.get()
    if memo is not None and isinstance(path, str):
        key = memo.get(path)
        if key is None:
            key = memo[path] = _key_of(path)
        return key
    return _key_of(path)


@contextlib.contextmanager
def keys_resolved_once() -> Iterator[None]:
    """Within this (a batch of a listing's reads: the files of one moment), each folder's key is
    resolved once (a resolve is a stat of each of its parts; a store's thousands of files name a
    few dozen folders)."""
    token = _RESOLVED.set({})
    try:
        yield
    finally:
        _RESOLVED.reset(token)


def _key_of(path: str | Path) -> str:
    resolved = Path(path).expanduser().resolve()
    slug_source = "-".join(part for part in resolved.parts if part != resolved.anchor)
    slug = _SLUG_UNSAFE.sub("-", slug_source).strip("-._") or "workspace"
    digest = hashlib.sha256(str(resolved).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{slug[:80]}--{digest}"


def validate_session_id(session_id: str) -> str:
    """Return the id if it is safe as a file name; raise InvalidIdError otherwise."""
    if not isinstance(session_id, str) or not session_id:
        raise InvalidIdError("A session id cannot be empty.")
    shown = session_id[:40].encode("unicode_escape").decode("ascii")
    if len(session_id) > MAX_ID_LENGTH:
        raise InvalidIdError(
            f"Session id {shown}... is {len(session_id)} characters long; at most {MAX_ID_LENGTH} are allowed."
        )
    if session_id in (".", ".."):
        raise InvalidIdError(f"Session id {shown!r} is not a file name.")
    if "/" in session_id or "\\" in session_id or "\x00" in session_id:
        raise InvalidIdError(f"Session id {shown!r} contains a path separator or NUL.")
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in session_id):
        raise InvalidIdError(f"Session id {shown!r} contains control characters.")
    if session_id.endswith(".json"):
        raise InvalidIdError(f"Session id {shown!r} ends in .json, which Fractal rejects.")
    return session_id


def validate_workspace_key(key: str) -> str:
    if not isinstance(key, str) or not _KEY_SHAPE.match(key) or key.strip(".") == "":
        shown = str(key)[:60].encode("unicode_escape").decode("ascii")
        raise InvalidIdError(f"{shown!r} is not a workspace key (slug--16 hex digits).")
    return key


@dataclass(frozen=True, slots=True, order=True)
class SessionRef:
    """A validated (workspace key, session id) of one source: the only way code below the CLI names a session."""

    workspace_key: str
    session_id: str
    source: str   # the name of a source (which ones are registered is checked where a name comes in)

    def __post_init__(self) -> None:
        validate_workspace_key(self.workspace_key)
        validate_session_id(self.session_id)
        if not isinstance(self.source, str) or not SOURCE_NAME.fullmatch(self.source):
            shown = str(self.source)[:40].encode("unicode_escape").decode("ascii")
            raise InvalidIdError(f"{shown!r} is not a source name.")


@dataclass(frozen=True, slots=True)
class OwnPaths:
    """Where Reprise keeps its own files for one source's sessions: `workspaces/<key>/reprise/` under
    `root` (Reprise's data folder), with each kind of file in a folder named after the source, so that
    Reprise never writes into another agent's store. (Fractal's layout, `fractal/layout.py`, keeps its
    files under its own state root without that folder, where Reprise always kept them.)"""

    root: Path
    source: str

    @property
    def workspaces(self) -> Path:
        return self.root / "workspaces"

    def workspace(self, key: str) -> Path:
        return self.workspaces / validate_workspace_key(key)

    def reprise_dir(self, key: str) -> Path:
        return self.workspace(key) / "reprise"

    def _own(self, key: str, kind: str) -> Path:
        return self.reprise_dir(key) / kind / self.source

    def workspace_record(self, key: str) -> Path:
        return self.reprise_dir(key) / "workspace.json"

    def meta_dir(self, key: str) -> Path:
        return self._own(key, "meta")

    def meta_file(self, ref: SessionRef) -> Path:
        return self.meta_dir(ref.workspace_key) / f"{ref.session_id}.json"

    def lock_file(self, ref: SessionRef) -> Path:
        return self._own(ref.workspace_key, "locks") / f"{ref.session_id}.lock"

    def archive_folder(self, key: str) -> Path:
        """The folder holding one archive folder per session of this source in a workspace."""
        return self._own(key, "archive")

    def archive_dir(self, ref: SessionRef) -> Path:
        return self.archive_folder(ref.workspace_key) / ref.session_id

    def trash_dir(self, key: str) -> Path:
        return self._own(key, "trash")

    def trash_file(self, ref: SessionRef) -> Path:
        return self.trash_dir(ref.workspace_key) / f"{ref.session_id}.json"

    def trash_meta_file(self, ref: SessionRef) -> Path:
        return self.trash_dir(ref.workspace_key) / "meta" / f"{ref.session_id}.json"

    def trash_record_file(self, ref: SessionRef) -> Path:
        """When and from where a session was trashed."""
        return self.trash_dir(ref.workspace_key) / "records" / f"{ref.session_id}.json"

    def audit_file(self, key: str) -> Path:
        return self.reprise_dir(key) / "audit.jsonl"

    def kept_index(self) -> Path:
        """The sessions of this source with a kept copy (Claude Code's `keep`), one line each."""
        return self.root / "kept" / f"{self.source}.jsonl"

    def runs_dir(self, ref: SessionRef) -> Path:
        """Records of the turns Reprise itself is running on a session (see core/liveness.py)."""
        return self._own(ref.workspace_key, "runs") / ref.session_id


def is_temp_name(name: str) -> bool:
    """Reprise's in-flight writes: `.<id>.tmp-<pid>-<rand>` (never `*.json`)."""
    return name.startswith(".") and ".tmp-" in name and not name.endswith(".json")


@functools.lru_cache(maxsize=1024)
def guess_workspace_path(key: str, *, max_tries: int = 1 << 16) -> str | None:
    """Recover the folder behind a key when its slug is unambiguous enough.

    Each `-` of the slug was either a path separator or a literal `-`; try each split and
    keep the one whose digest matches the key. Keys of paths with other characters (spaces,
    non-ASCII) cannot be recovered this way.
    """
    validate_workspace_key(key)
    slug, _, wanted = key.rpartition("--")
    if slug == "workspace":
        return "/" if hashlib.sha256(b"/").hexdigest()[:16] == wanted else None
    parts = slug.split("-")
    gaps = len(parts) - 1
    if len(slug) >= 80 or (1 << gaps) > max_tries:
        return None
    for mask in range(1 << gaps):
        path = parts[0]
        for index in range(gaps):
            path += ("/" if mask >> index & 1 else "-") + parts[index + 1]
        candidate = "/" + path
        if hashlib.sha256(candidate.encode("utf-8")).hexdigest()[:16] == wanted:
            return candidate
    return None
