"""Reprise's own facts about one session (its title, pin, creation time and estimates), kept in a
file beside it (`own_files.py` reads and writes it): a pydantic model, imported when a session's
facts are read or written, never by a listing of the cached rows."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SessionMeta(BaseModel):
    """Reprise's own facts about a session, kept outside the session file (Fractal would drop them)."""

    model_config = ConfigDict(extra="allow", defer_build=True)  # built on first use, not at import
    title: str | None = None
    pinned: bool = False
    created_at: str | None = None
    estimates: dict[str, int] = Field(default_factory=dict)
