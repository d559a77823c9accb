"""Where Gemini CLI keeps its sessions under one root (`$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`).

- `projects.json`: `{"projects": {"<absolute folder>": "<slug>"}}`, the client's registry of the
  folders it ran in (a slug: lower-case letters, digits and `-`; the folder's name, `-1`, `-2`...);
- `tmp/<slug>/.project_root`: the folder that slug stands for (the client's ownership marker);
- `tmp/<slug>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`: one session (the minute it started,
  UTC, and the first 8 characters of its id); `.json`: one written whole by an older client;
- `tmp/<slug>/chats/<session id>/<subagent id>.jsonl`: the sessions of that session's subagents.
Older clients named the folder by the SHA-256 of the project's path (the `projectHash` every
session file records) rather than a slug.

A session is its `sessionId`, not a file: a resume in a later minute leaves a second, small file
of the same session (a header only), a resume of a `.json` session moves it to a `.jsonl` beside
it. The files of one session are joined by the 8 characters of the id in their names
(`SessionFiles`); the session's id is read from its lines.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...session_files import ReadProblem, read_head
from ..agent_json import loads
from ..store_location import StoreRoot
from ..uuid_ids import checked_uuid, is_uuid

TMP = "tmp"
CHATS = "chats"
PROJECTS = "projects.json"
PROJECT_ROOT = ".project_root"
PREFIX = "session-"
SUFFIXES = (".jsonl", ".json")
MAX_REGISTRY_BYTES = 16 << 20   # a projects.json beyond this is not read (the client's are a few KB)
_STANDARD = re.compile(r"session-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-(.{1,8})\.jsonl?")
_SLUG = re.compile(r"[a-z0-9-]+")          # the client's own check of a registry's slugs
_HASH = re.compile(r"[0-9a-f]{64}")        # an older client's folder: the SHA-256 of the project's path

is_session_id = is_uuid


def check_session_id(text: str) -> str:
    return checked_uuid(text, "Gemini CLI")


def is_session_name(name: str) -> bool:
    """Whether the client reads a file of this name in `chats/` as a session."""
    return name.startswith(PREFIX) and name.endswith(SUFFIXES)


def is_file_id(text: str) -> bool:
    """Whether `text` is the id of a row the client cannot read (no session id in it): its file's name
    in a `chats/` folder, never a path."""
    return is_session_name(text) and "/" not in text and "\0" not in text


@functools.lru_cache(maxsize=1 << 16)   # asked of every file on every listing
def join_id(name: str) -> str:
    """What joins the files of one session in a `chats/` folder: the 8 characters of its id in a
    name as the client writes it (`session-<minute>-<id8>.jsonl`, a subagents' folder named by the
    whole id), else the name itself (a file named otherwise is a session of its own)."""
    match = _STANDARD.fullmatch(name)
    if match is not None:
        return match.group(1)
    if is_uuid(name):
        return name[:8]
    return name


def main_first(names: list[str]) -> list[str]:
    """The session files of one session, the one the client resumes first: the earliest minute
    (a later one is a resume's stub), and of one minute the `.jsonl` (a `.json` beside it is the
    whole-file session a resume moved there)."""
    return sorted(names, key=lambda name: (name.rsplit(".", 1)[0], not name.endswith(".jsonl"), name))


def folder_text(value: object) -> str | None:
    """A folder the registry or a marker names, when it is one: an absolute path without a NUL or a
    line break, `..` or `.` parts (the client writes `path.resolve`d folders)."""
    if not isinstance(value, str):
        return None
    folder = value.strip()
    if not folder.startswith("/") or any(ch in folder for ch in "\0\n\r"):
        return None
    if any(part in (".", "..") for part in folder.split("/")):
        return None
    return folder.rstrip("/") or "/"


def project_hash(folder: str) -> str:
    """The client's `projectHash` of a project folder (`getProjectHash`)."""
    return hashlib.sha256(folder.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(slots=True)
class Registry:
    """What a root's `projects.json` says, as last read: {slug: folder} (each folder as written, checked
    when asked), the stat it was read at, and why it could not be read (None when it could, or is
    absent)."""

    folders: dict[str, str] = field(default_factory=dict)
    stamp: tuple[int, int, int] | None = None
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class GeminiRoot(StoreRoot):
    """One Gemini CLI root folder (`.gemini`)."""

    @property
    def tmp(self) -> Path:
        return self.path / TMP

    @property
    def projects(self) -> Path:
        return self.path / PROJECTS

    def chats_of(self, slug: str) -> Path:
        return self.tmp / slug / CHATS

    def project_folders(self) -> list[str]:
        """Every `tmp/<slug>/` folder with a `chats/` folder, by name (a link is not followed). Each
        `chats/` is looked at relative to `tmp/` (a stat by path walks every folder above it again)."""
        try:
            fd = os.open(self.tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return []
        found = []
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False) and stat.S_ISDIR(
                                os.stat(f"{entry.name}/{CHATS}", dir_fd=fd, follow_symlinks=False).st_mode):
                            found.append(entry.name)
                    except OSError:
                        continue
        except OSError:
            return []
        finally:
            os.close(fd)
        return sorted(found)


def read_registry(path: Path, known: Registry | None = None) -> Registry:
    """`projects.json` as {slug: folder}, as the client reads it: a slug not as the client writes them
    makes the client take the whole file for empty (its schema check), and so does Reprise. Each
    folder is checked (`folder_text`) when a project asks for it, not all of them at each read.
    `known`: the last read, returned as it is when the file's stat is the same."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return Registry()
    except OSError as exc:
        return Registry(problem=f"{path} cannot be read ({exc.strerror or exc})")
    stamp = (info.st_size, info.st_mtime_ns, info.st_ino)
    if known is not None and known.stamp == stamp:
        return known
    if info.st_size > MAX_REGISTRY_BYTES:
        return Registry(stamp=stamp, problem=f"{path} is {info.st_size:,} bytes: too large to be Gemini CLI's")
    try:
        document = loads(read_head(path, MAX_REGISTRY_BYTES + 1)[0])
    except (OSError, ReadProblem, ValueError, RecursionError) as exc:
        return Registry(stamp=stamp, problem=f"{path} is not JSON Gemini CLI wrote ({exc})")
    projects = document.get("projects") if isinstance(document, dict) else None
    if not isinstance(projects, dict):
        return Registry(stamp=stamp, problem=f"{path} has no `projects` object")
    folders: dict[str, str] = {}
    for folder, slug in projects.items():
        if not isinstance(slug, str) or _SLUG.fullmatch(slug) is None:
            return Registry(stamp=stamp, problem=f"{path} names a project by {str(slug)[:40]!r}, not a slug as "
                            "Gemini CLI writes them: the client reads the whole file as empty")
        folders.setdefault(slug, folder)
    return Registry(folders, stamp)


def marker_folder(project: Path) -> str | None:
    """The folder `tmp/<slug>/.project_root` names (None when absent, unreadable or not a folder)."""
    try:
        data = read_head(project / PROJECT_ROOT, 64 << 10)[0]
    except (OSError, ReadProblem):
        return None
    try:
        return folder_text(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def folder_of_project(slug: str, marker: str | None, registry: Mapping[str, str]) -> str | None:
    """The folder a `tmp/` folder stands for: its marker's, else the registry's for its slug, else
    (an older client's folder named by a hash) the registry folder of that hash; None when unknown
    (or the registry's folder is not one: `folder_text`)."""
    if marker is not None:
        return marker
    if slug in registry:
        return folder_text(registry[slug])
    if _HASH.fullmatch(slug):
        return next((checked for folder in registry.values()
                     if (checked := folder_text(folder)) is not None and project_hash(checked) == slug), None)
    return None
