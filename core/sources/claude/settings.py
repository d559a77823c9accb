"""`[sources.claude]`: Claude Code's stores and the commands Reprise runs it with."""

from __future__ import annotations

from pydantic import Field

from ...settings_models import Text
from ..settings import SweptSettings

RESUME = ["claude", "--resume", "{session_id}"]
NEW = ["claude", "--session-id", "{session_id}"]
SEND = ["claude", "--resume", "{session_id}", "-p", "--output-format", "json"]  # the message on stdin


class ClaudeSettings(SweptSettings):
    """`[sources.claude]`: unset `roots` are $CLAUDE_CONFIG_DIR, else ~/.claude; unset `enabled`: on
    when a root has a `projects/` folder."""

    resume: list[Text] = Field(default_factory=lambda: list(RESUME), min_length=1)
    new: list[Text] = Field(default_factory=lambda: list(NEW), min_length=1)
    send: list[Text] = Field(default_factory=lambda: list(SEND), min_length=1)
