"""`[sources.codex]`: Codex CLI's stores and the commands Reprise runs it with."""

from __future__ import annotations

from pydantic import Field

from ...settings_models import Text
from ..settings import SourceSettings

RESUME = ["codex", "resume", "{session_id}"]
NEW = ["codex", "resume", "{session_id}"]   # on the rollout Reprise started (sources/codex/new.py)
SEND = ["codex", "exec", "--json", "--skip-git-repo-check", "resume", "{session_id}", "-"]  # the message on stdin


class CodexSettings(SourceSettings):
    """`[sources.codex]`: unset `roots` are $CODEX_HOME, else ~/.codex; unset `enabled`: on when a
    root has a `sessions/` folder."""

    resume: list[Text] = Field(default_factory=lambda: list(RESUME), min_length=1)
    new: list[Text] = Field(default_factory=lambda: list(NEW), min_length=1)
    send: list[Text] = Field(default_factory=lambda: list(SEND), min_length=1)
