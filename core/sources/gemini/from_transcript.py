"""Another agent's session as a new Gemini CLI session file (issue 30, `reprise continue` the native
way): `session_file_of` is pure (a transcript, the new id, the folder and a clock in; the file's
bytes and notes out), in the client's byte form (`writer.py`); `project_of` and `mark_project` name
and claim the project folder (`tmp/<slug>/`) of the session's folder, as the client does.

The file is flat, as `writer.py` lays one out: a header naming the new id, the folder's
`projectHash`, started and updated now (the client's sweep dates a session by its `lastUpdated`),
then per turn, as Gemini CLI 0.61.0 records a turn: the prompt as a `user` message of one text part;
each shell command as a `gemini` message holding one `run_shell_command` tool call with its result
(the client records a call in the model's message, with its `functionResponse` parts and `status`),
the marked text of the tool calls before it (`session_writing.tool_call_text`) as that message's
text; the reply as the turn's last `gemini` message, after the marked text of the calls that came
after the last command; and, for a failed turn, an `error` message (the client's record of one,
never sent to the model). Each turn ends with a `gemini` message, so the history alternates; one
that recorded no reply gets a marked line, and how a turn that did not succeed ended is said in its
reply as marked text, so the model reads it. A brief (`prompt_only`) is the user message alone.
Messages keep the source's times (a turn without any is dated now); no message carries a model or
token figures (the source's were another model's). Thinking is left out (the client sends its own
model's thoughts only) and said.

What the real client needs, found with `gemini --resume NEWID -p ...` (0.61.0, against the fake
server, tests/compat/gemini/test_continue_compat.py):
- The file in the `chats/` folder of the project the client maps the folder to. For a folder the
  client has no project of yet, a `tmp/<slug>/.project_root` marker naming the folder is enough: the
  client's registry (`ProjectRegistry.getShortId`) adopts a marked project for a folder
  `projects.json` does not name, and records it there itself. Reprise claims a slug as the client
  does (the folder's name, lower-cased, `-1`, `-2`... past one taken) and never writes `projects.json`.
- Its recorded tool calls: on resume the client turns a `gemini` message's `toolCalls` into the
  model's `functionCall` parts followed by a user turn of their `functionResponse` parts, so no
  separate user message of the results is written (the client's own live record has one, which its
  resume sends a second time).
- No `<session_context>` message: the client adds its own at the start of a resumed history.
A prompt the client would not resume (empty, or starting with `/`, `?` or injected context's tag) is
carried as marked text, said in a note. A lone surrogate, which the API's UTF-8 strings cannot hold,
becomes U+FFFD, said in a note; every other text (newlines, NUL, U+2028) is written as it is.
"""

from __future__ import annotations

import os
import re
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from ...errors import UsageError
from ...rooted import Root, write_new
from ...times import parse_time
from ...transcript import ToolCall, Transcript, Turn
from ..session_writing import (
    MARK,
    counted,
    ending_text,
    prompt_only,
    tool_call_text,
    without_lone_surrogates,
    written_notes,
)
from .layout import (
    PROJECT_ROOT,
    GeminiRoot,
    check_session_id,
    folder_text,
    marker_folder,
    project_hash,
    read_registry,
)
from .lines import prompt_text
from .writer import header, iso, session_bytes

TARGET = "Gemini CLI"
SHELL_TOOL = "run_shell_command"   # the client's shell tool (`transcript.SHELL_TOOLS`)
SHELL_LABEL = "Shell"      # the client's display name of its shell tool
HISTORY = "history"        # the other folder of project markers the client keeps beside `tmp/`


class _Messages:
    """The messages of the new session, in order, each with an id derived from the session's."""

    def __init__(self, session_id: str, agent: str, now: datetime):
        self.namespace = uuid.UUID(session_id)
        self.agent = agent
        self.now = now
        self.messages: list[dict[str, Any]] = []
        self.surrogates = 0
        self.undated = 0
        self.marked_prompts = 0

    def text(self, value: str) -> str:
        mended: str = without_lone_surrogates(value)
        self.surrogates += mended is not value
        return mended

    def stamp(self, value: str | None) -> str:
        moment = parse_time(value)
        return iso(moment if moment is not None else self.now)

    def add(self, kind: str, at: str, **fields: Any) -> None:
        message_id = str(uuid.uuid5(self.namespace, f"message {len(self.messages)}"))
        self.messages.append({"id": message_id, "timestamp": at, "type": kind, **fields})

    def prompt(self, text: str, at: str) -> None:
        content = [{"text": self.text(text)}]
        if prompt_text({"type": "user", "content": content}) is None:   # the client would pass it over
            self.marked_prompts += 1
            content = [{"text": f"{MARK} {self.agent} prompt:\n{content[0]['text']}"}]
        self.add("user", at, content=content)

    def gemini(self, text: str, at: str, calls: list[dict[str, Any]] | None = None) -> None:
        fields: dict[str, Any] = {"content": text, "thoughts": []}
        if calls:
            fields["toolCalls"] = calls
        self.add("gemini", at, **fields)

    def turn(self, number: int, turn: Turn) -> None:
        self.undated += turn.started_at is None and turn.ended_at is None
        start, end = self.stamp(turn.started_at or turn.ended_at), self.stamp(turn.ended_at or turn.started_at)
        self.prompt(turn.user_message, start)
        if prompt_only(turn):   # a brief: the client answers it with the next prompt
            return
        pending: list[str] = []
        for at, call in enumerate(turn.tool_calls, start=1):
            if call.shell is None:
                pending.append(self.text(tool_call_text(call, self.agent)))
                continue
            self.gemini("\n\n".join(pending), end, [self.shell_call(f"{SHELL_TOOL}_reprise_{number}_{at}", call, end)])
            pending = []
        reply = "\n\n".join(part for part in (*pending, self.text(turn.reply),
                                              self.text(ending_text(turn, self.agent))) if part.strip())
        self.gemini(reply or f"{MARK} no reply was recorded.", end)
        if turn.status == "failed":
            self.add("error", end, content=self.text(turn.error or "no error was recorded"))

    def shell_call(self, call_id: str, call: ToolCall, at: str) -> dict[str, Any]:
        assert call.shell is not None
        command = self.text(call.shell)
        output = self.text(call.result) if call.result is not None else f"{MARK} no output was recorded."
        response = {"functionResponse": {"id": call_id, "name": SHELL_TOOL, "response": {"output": output}}}
        return {"id": call_id, "name": SHELL_TOOL, "args": {"command": command}, "result": [response],
                "status": "error" if call.is_error else "success", "timestamp": at, "resultDisplay": output,
                "description": command, "displayName": SHELL_LABEL, "renderOutputAsMarkdown": False}


def session_file_of(transcript: Transcript, *, session_id: str, folder: str, agent: str, now: datetime
                    ) -> tuple[bytes, list[str]]:
    """The bytes of a new Gemini CLI session `session_id` run in `folder` (an absolute path, as the
    client resolves it) holding the transcript's turns (`agent`: the source agent's label), started
    `now`, and notes on what was left out or changed."""
    messages = _Messages(check_session_id(session_id), agent, now)
    for number, turn in enumerate(transcript.turns, start=1):
        messages.turn(number, turn)
    head = header(session_id, project_hash(folder), now, now)
    notes = written_notes(transcript, agent, TARGET, undated=messages.undated, mended=messages.surrogates,
                          why_mended="Gemini's API takes UTF-8 text only")
    if messages.marked_prompts:
        passed_over = "that Gemini CLI would pass over (empty, or a command)"
        notes.append(f"{counted(messages.marked_prompts, 'prompt', passed_over)} carried as text marked {MARK}")
    return session_bytes(head, messages.messages), notes


# --- the project folder of the session's folder, as the client names and claims it ---------------------


def slugify(name: str) -> str:
    """The client's slug of a folder's name (`ProjectRegistry.slugify`)."""
    return re.sub(r"^-|-$", "", re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", name.lower()))) or "project"


def _markers(root: GeminiRoot, slug: str) -> list[Path]:
    return [root.tmp / slug / PROJECT_ROOT, root.path / HISTORY / slug / PROJECT_ROOT]


def _owner(marker: Path) -> str | None:
    """The folder a marker names; "" for one that cannot be read; None when there is none."""
    if not os.path.lexists(marker):
        return None
    return marker_folder(marker.parent) or ""


def project_of(root: GeminiRoot, folder: str) -> tuple[str, bool]:
    """The project (`tmp/<slug>`) the client maps `folder` to under `root`, as its registry would
    (`ProjectRegistry.getShortId`), and whether its marker has to be written first: the slug
    `projects.json` names when its markers do not name another folder; else a project whose marker
    names the folder; else a new slug claimed as the client claims one."""
    checked = folder_text(folder)
    if checked is None or checked != folder:
        raise UsageError(f"{folder[:200]!r} is not a folder Gemini CLI records (an absolute path, resolved).")
    registry = read_registry(root.projects)
    named = {slug for slug, known in registry.folders.items() if folder_text(known) == folder}
    for slug in sorted(named):
        if all(_owner(marker) in (None, folder) for marker in _markers(root, slug)):
            return slug, _owner(root.tmp / slug / PROJECT_ROOT) is None
    for base in (root.tmp, root.path / HISTORY):
        try:
            candidates = sorted(os.listdir(base))
        except OSError:
            continue
        for candidate in candidates:
            if _owner(base / candidate / PROJECT_ROOT) == folder:
                return candidate, _owner(root.tmp / candidate / PROJECT_ROOT) is None
    taken = set(registry.folders)
    base_slug = slugify(os.path.basename(folder))
    for counter in range(10_000):
        candidate = base_slug if counter == 0 else f"{base_slug}-{counter}"
        if candidate not in taken and all(_owner(marker) in (None, folder) for marker in _markers(root, candidate)):
            return candidate, True
    raise UsageError(f"No project folder is free for {folder} in {root.tmp}.")   # pragma: no cover - 10,000 taken


def mark_project(root: GeminiRoot, slug: str, folder: str) -> None:
    """Write the project's `.project_root` naming `folder`, as the client writes one (never over one)."""
    marker = root.tmp / slug / PROJECT_ROOT
    with Root(root.path, "Gemini CLI store").parent(marker, create=True) as (fd, name):
        write_new(fd, name, folder.encode("utf-8", "surrogateescape"))

