"""Gemini CLI's workspaces: the `mapped` rule (`core/sources/workspaces.py`). Its sessions are kept
by project (`tmp/<slug>/chats/`), and the client keeps its own map of slugs to folders: each
project's `.project_root` marker, and the root's `projects.json`. A project neither names (a
marker gone, a registry reset, another machine's store) is listed under an unknown folder keyed by
its slug, never dropped.

A group is a project's `chats/` folder, by its path (several roots may hold the same slug).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import PurePath

from ...paths import workspace_key
from ..workspaces import MappedRule, unmapped_key


def unmapped_name(group: str) -> str:
    """What names a group the map does not: its slug, then its root ("alpha in /home/u/.gemini")."""
    chats = PurePath(group)
    return f"{chats.parent.name} in {chats.parent.parent.parent}"


def key_of(group: str, folder: str | None) -> str:
    """The workspace key of a group's sessions: its folder's, else the unknown folder of its slug."""
    return unmapped_key(unmapped_name(group)) if folder is None else workspace_key(folder)


class GeminiRule(MappedRule):
    """The `mapped` rule with an unmapped group named by its slug first (`unmapped_name`)."""

    def __init__(self, groups: Callable[[], list[str]], folders: Callable[[], Mapping[str, str]],
                 key_of_folder: Callable[[str], str] = workspace_key):
        super().__init__(groups, folders)
        self._folders_now = folders
        self._key_of_folder = key_of_folder   # the listing's, which remembers a folder's key
        self._keyed_from: Mapping[str, str] | None = None
        self._keyed: dict[str, str] = {}   # {workspace key: folder} of the map `_keyed_from`

    def key_of(self, group: str) -> str:
        return key_of(group, self._folders_now().get(group))

    def keys(self) -> dict[str, str]:
        folders = self._folders_now()
        return {group: key_of(group, folders.get(group)) for group in self._groups()}

    def folder_of(self, key: str) -> str | None:
        """The folder of a workspace key (the first the map names with that key): the map keyed once
        for each map the listing reads, not every folder's key worked out again for each key asked."""
        folders = self._folders_now()
        if folders is not self._keyed_from:
            keyed: dict[str, str] = {}
            for folder in folders.values():
                keyed.setdefault(self._key_of_folder(folder), folder)
            self._keyed, self._keyed_from = keyed, folders
        return self._keyed.get(key)
