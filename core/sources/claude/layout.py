"""Where Claude Code keeps its sessions under one root (`CLAUDE_CONFIG_DIR`, else `~/.claude`):
`projects/<slug>/<session uuid>.jsonl`, the slug being the session's folder with every character
that is not a letter or digit replaced by `-` (lossy: the real folder is the records' `cwd`), and
beside each file a `<uuid>/` folder of sidecars (`subagents/agent-*.jsonl`, `tool-results/`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..store_location import StoreRoot
from ..uuid_ids import checked_uuid, is_uuid

SUFFIX = ".jsonl"
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def slug(folder: str) -> str:
    """The project folder name Claude Code gives a working folder."""
    return _NOT_ALNUM.sub("-", folder)


is_session_id = is_uuid   # Claude Code names each session file by its UUID


def check_session_id(text: str) -> str:
    return checked_uuid(text, "Claude Code")


@dataclass(frozen=True, slots=True)
class ClaudeRoot(StoreRoot):
    """One Claude Code root folder."""

    @property
    def projects(self) -> Path:
        return self.path / "projects"

    @property
    def settings_file(self) -> Path:
        return self.path / "settings.json"

    def project(self, folder_slug: str) -> Path:
        return self.projects / folder_slug

    def session_file(self, folder_slug: str, session_id: str) -> Path:
        return self.project(folder_slug) / f"{check_session_id(session_id)}{SUFFIX}"

    def subagents(self, session_file: Path) -> Path:
        return session_file.with_suffix("") / "subagents"
