"""How a store names workspaces, which the catalog asks instead of knowing each store's shape.

Three kinds of store:
- `group`: the store keeps each workspace's sessions in a group (folder) named by Reprise's
  workspace key, and records the folder each key stands for (Fractal). A listing of some workspaces
  scans their groups only.
- `recorded`: each file records the folder it was made in (Claude Code, Codex): every group is
  scanned, each row carries its folder, and the changed files a listing of some workspaces reads are
  narrowed by what their heads name.
- `mapped`: the store keeps its own map of groups to folders (a registry file, a hash of the path, a
  database column). A listing of some workspaces scans the groups the map gives for them; a group
  the map does not name is listed under an unknown folder, keyed by its own name (`unmapped_key`),
  never dropped.
"""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, ClassVar, Literal

from ..paths import workspace_key

if TYPE_CHECKING:   # the listing's types: `base` names the rule, so it is imported by it
    from .base import HeadKeys, SessionFile

    Narrowing = Callable[[list[SessionFile], Collection[str], HeadKeys], list[SessionFile]]

WorkspaceKind = Literal["group", "recorded", "mapped"]
UNMAPPED_PREFIX = "unknown-folder-"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class WorkspaceRule(ABC):
    """What the catalog asks a store about its workspaces (its `listing.workspaces`)."""

    kind: ClassVar[WorkspaceKind]

    @abstractmethod
    def groups_for(self, keys: Collection[str] | None) -> list[str] | None:
        """The groups that hold these workspaces' sessions; None: every group must be scanned."""

    @abstractmethod
    def folder_of(self, key: str) -> str | None:
        """The folder the store records for a workspace key apart from its files; None when it has none."""

    def narrow(self, files: list[SessionFile], keys: Collection[str], known: HeadKeys) -> list[SessionFile]:
        """Of these new or changed files, those that can hold a session of these workspaces; all of
        them unless the store can tell from less than a read of each (`known`: what each file's head
        told before, by path, kept up to date here and stored by the catalog)."""
        return files


class GroupRule(WorkspaceRule):
    """A store whose groups are named by workspace key, with its own record of each key's folder."""

    kind = "group"

    def __init__(self, folder_of: Callable[[str], str | None]):
        self._folder_of = folder_of

    def groups_for(self, keys: Collection[str] | None) -> list[str] | None:
        return None if keys is None else list(keys)

    def folder_of(self, key: str) -> str | None:
        return self._folder_of(key)


class RecordedRule(WorkspaceRule):
    """A store whose files each record their folder: every group scanned, the files narrowed by head."""

    kind = "recorded"

    def __init__(self, narrow: Narrowing | None = None):
        self._narrow = narrow

    def groups_for(self, keys: Collection[str] | None) -> list[str] | None:
        return None

    def folder_of(self, key: str) -> str | None:
        return None   # each row carries the folder its file records

    def narrow(self, files: list[SessionFile], keys: Collection[str], known: HeadKeys) -> list[SessionFile]:
        return files if self._narrow is None else self._narrow(files, keys, known)


def unmapped_key(group: str) -> str:
    """The workspace key a group the store's map does not name is listed under: "unknown-folder-"
    and the group's own name (as far as a key can hold it), then a digest of that name. No folder
    has it as its key (a folder's digest is of its path)."""
    slug = _UNSAFE.sub("-", group).strip("-._")[:60] or "group"
    digest = hashlib.sha256(b"unmapped\0" + group.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{UNMAPPED_PREFIX}{slug}--{digest}"


def unmapped_group_name(key: str) -> str | None:
    """The group's own name an `unmapped_key` holds (as far as a key can hold it); None for any other key."""
    if not key.startswith(UNMAPPED_PREFIX):
        return None
    return key.removeprefix(UNMAPPED_PREFIX).rpartition("--")[0] or None


class MappedRule(WorkspaceRule):
    """A store that keeps its own map of groups to folders. `groups` lists the store's groups and
    `folders` reads its map ({group: folder}); both are asked each time, so a map the agent changed
    is seen on the next listing."""

    kind = "mapped"

    def __init__(self, groups: Callable[[], list[str]], folders: Callable[[], Mapping[str, str]]):
        self._groups = groups
        self._folders = folders

    def key_of(self, group: str) -> str:
        """The workspace key of a group's sessions: its folder's, or `unmapped_key` when the map has none."""
        folder = self._folders().get(group)
        return unmapped_key(group) if folder is None else workspace_key(folder)

    def keys(self) -> dict[str, str]:
        """{group: workspace key} of every group of the store."""
        folders = self._folders()
        return {group: unmapped_key(group) if group not in folders else workspace_key(folders[group])
                for group in self._groups()}

    def groups_for(self, keys: Collection[str] | None) -> list[str] | None:
        if keys is None:
            return None
        wanted = set(keys)
        return [group for group, key in self.keys().items() if key in wanted]

    def folder_of(self, key: str) -> str | None:
        for folder in self._folders().values():
            if workspace_key(folder) == key:
                return folder
        return None
