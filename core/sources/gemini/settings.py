"""`[sources.gemini]`: Gemini CLI's stores and the commands Reprise runs it with."""

from __future__ import annotations

from pydantic import Field

from ...settings_models import Text
from ..settings import SweptSettings

RESUME = ["gemini", "--resume", "{session_id}"]
NEW = ["gemini", "--session-id", "{session_id}"]
# The message on stdin, never in argv: with `-p ""` headless Gemini CLI appends stdin to the (empty)
# prompt. No approval bypass (`--yolo`, `--approval-mode`): a tool call that needs one is refused.
SEND = ["gemini", "--resume", "{session_id}", "--output-format", "json", "-p", ""]


class GeminiSettings(SweptSettings):
    """`[sources.gemini]`: unset `roots` are $GEMINI_CLI_HOME/.gemini, else ~/.gemini; unset
    `enabled`: on when a root has a `tmp/` folder. `keep_before_sweep` keeps, during listings, the
    sessions Gemini CLI's `general.sessionRetention` deletes within the week."""

    resume: list[Text] = Field(default_factory=lambda: list(RESUME), min_length=1)
    new: list[Text] = Field(default_factory=lambda: list(NEW), min_length=1)
    send: list[Text] = Field(default_factory=lambda: list(SEND), min_length=1)
