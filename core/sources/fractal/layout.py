"""Fractal's layout under its state root: `workspaces/<key>/sessions/<id>.json`, with Reprise's
own files beside the sessions in `workspaces/<key>/reprise/`, which Fractal ignores."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...paths import OwnPaths, SessionRef, validate_workspace_key


@dataclass(frozen=True, slots=True)
class StorePaths(OwnPaths):
    """The layout under one Fractal state root: its sessions, and Reprise's own files of them
    (directly in `reprise/<kind>/`, without the source's folder other sources have: where Reprise
    always kept them)."""

    def _own(self, key: str, kind: str) -> Path:
        return self.reprise_dir(key) / kind

    def sessions(self, key: str) -> Path:
        return self.workspaces / validate_workspace_key(key) / "sessions"

    def session_file(self, ref: SessionRef) -> Path:
        return self.sessions(ref.workspace_key) / f"{ref.session_id}.json"
