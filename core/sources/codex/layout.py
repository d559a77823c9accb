"""Where Codex CLI keeps its sessions under one root (`CODEX_HOME`, else `~/.codex`): rollouts
`sessions/YYYY/MM/DD/rollout-YYYY-MM-DDTHH-MM-SS-<uuid>.jsonl`, grouped by date (the folder a
session ran in is `session_meta.cwd`), archived ones flat in `archived_sessions/`, and the names
given by renames in `session_index.jsonl`. Session ids are UUIDs (v7: their first characters are
the time, so a store's ids share a prefix and the random last characters tell them apart).
Codex's SQLite files (`state_*.sqlite`) are never opened.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..store_location import StoreRoot
from ..uuid_ids import UUID, checked_uuid, is_uuid

SUFFIX = ".jsonl"
ARCHIVED = "archived_sessions"
INDEX = "session_index.jsonl"
_ROLLOUT = re.compile(rf"rollout-\d{{4}}-\d{{2}}-\d{{2}}T\d{{2}}-\d{{2}}-\d{{2}}-({UUID})\.jsonl")
_YEAR, _TWO = re.compile(r"\d{4}"), re.compile(r"\d{2}")


def session_id_of(name: str) -> str | None:
    """The session id in a rollout's file name, or None for a file that is not a rollout."""
    match = _ROLLOUT.fullmatch(name)
    return match.group(1) if match else None


is_session_id = is_uuid


def check_session_id(text: str) -> str:
    return checked_uuid(text, "Codex")


@dataclass(frozen=True, slots=True)
class CodexRoot(StoreRoot):
    """One Codex root folder."""

    @property
    def sessions(self) -> Path:
        return self.path / "sessions"

    @property
    def archived(self) -> Path:
        return self.path / ARCHIVED

    @property
    def index(self) -> Path:
        return self.path / INDEX

    def date_folders(self) -> list[str]:
        """Every `sessions/YYYY/MM/DD` folder, oldest first; folders named otherwise are not Codex's."""
        found: list[str] = []
        for year in _subfolders(str(self.sessions), _YEAR):
            for month in _subfolders(year, _TWO):
                found.extend(_subfolders(month, _TWO))
        return found


def _subfolders(folder: str, shape: re.Pattern[str]) -> list[str]:
    try:
        entries = os.scandir(folder)
    except OSError:
        return []
    found = []
    with entries:
        for entry in entries:
            try:
                if shape.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
                    found.append(entry.path)
            except OSError:
                continue
    return sorted(found)


IMPORTS_LEDGER = "external_agent_session_imports.json"   # Codex's record of the sessions it imported (imports.py)
