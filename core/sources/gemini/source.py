"""Gemini CLI's stores as a session source: list, read, search and resume its sessions, and move them
to Reprise's trash.

Reprise reads Gemini CLI's session files as its own loader does (`lines.py`) and never rewrites one:
a session is its `sessionId`, found among the `chats/` folders of its projects (`listing.py`), and
`gemini --resume ID` runs in the session's own folder, the only one where the client looks for it.
Reprise never runs `gemini --list-sessions` or the interactive start to learn anything (both write a
model summary into another session's file). Its own files of Gemini sessions (titles, pins) live in
Reprise's data folder, under `gemini/` folders (`OwnPaths`).

The class stays small: reading is in `listing.py`, `lines.py` and `transcript.py`; each role added
later (meter, send, fork, keep, sweep) delegates to its own module.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import NotFoundError, ProblemFileError, RepriseError
from ...meter import RESUME, SEND, LiveMeter
from ...paths import OwnPaths, SessionRef, workspace_key
from ...problems import Problem
from ...session_files import ReadProblem, read_regular_file
from ...times import parse_time
from ...transcript import Transcript
from ...trash_results import TrashEntry
from ..base import Handoff, OpenedSession
from ..roles import Creator, Diagnosed, Forking, Keeping, Live, Metered, Sender, SessionWriter, Swept, Trashing
from ..session_writing import WrittenSession
from .fields import GeminiFields
from .kept import KeptListing, KeptSessions
from .layout import GeminiRoot, check_session_id, is_file_id, join_id
from .lines import Chat
from .listing import NAME, SessionFiles, fold_of
from .liveness import writer_of
from .spec import SPEC
from .transcript import read_transcript
from .trash import GeminiTrash
from .windows import window_of
from .writes import GeminiWriting

if TYPE_CHECKING:
    from ...config import Settings
    from ...session_meta import SessionMeta

METER_VERSION = "gemini-1"


@dataclass(slots=True)
class GeminiSession:
    """What Reprise read of one session (the source's own model): its merged lines, its listing
    fields, and its files."""

    chat: Chat
    fields: GeminiFields
    files: SessionFiles


class GeminiSource(KeptSessions, GeminiWriting, Metered,
                   Sender, Creator, Forking, Trashing, Swept, Keeping, Live, Diagnosed, SessionWriter):
    spec = SPEC
    name = SPEC.name
    label = SPEC.label
    trash_note = SPEC.trash_note
    cost_label = SPEC.cost_label
    resume_setting = SPEC.resume_setting
    rename_note = SPEC.rename_note

    def __init__(self, roots: Sequence[Path], settings: Settings, data: Path):
        self.roots: list[GeminiRoot] = [GeminiRoot(Path(root)) for root in roots]
        self.gemini_listing = KeptListing(roots, OwnPaths(data, NAME))
        super().__init__(settings, self.gemini_listing)

    # --- finding and reading -----------------------------------------------------------------

    def _files(self, ref: SessionRef) -> SessionFiles | None:
        return self.gemini_listing.locate(check_session_id(ref.session_id), ref.workspace_key)

    def _locate(self, ref: SessionRef) -> Path | None:
        files = self._files(ref)
        return files.main if files is not None else None

    def exists(self, ref: SessionRef) -> bool:
        return self._locate(ref) is not None or self.is_kept(ref)

    def _new_path(self, ref: SessionRef) -> Path:
        return self.roots[0].tmp / ref.session_id if self.roots else Path(ref.session_id)

    def _root_path(self, path: Path) -> Path:
        return self.gemini_listing.root_path(path)

    def _read(self, path: Path) -> bytes:
        return read_regular_file(path, self._root_path(path))[0]

    def open(self, ref: SessionRef) -> OpenedSession:
        files = self._files(ref) or self.kept_files(ref)
        if files is None:
            raise NotFoundError(f"No Gemini CLI session {ref.session_id} in any root "
                                f"({', '.join(str(root.path) for root in self.roots)}).")
        path = files.main
        try:
            data, chat = self.gemini_listing.read_chat(path)
        except FileNotFoundError:
            raise NotFoundError(f"The Gemini CLI session file {path} disappeared.", path=path) from None
        except ReadProblem as exc:
            raise ProblemFileError(Problem(str(path), exc.code, exc.message)) from None
        transcript, notes = read_transcript(chat, ref.session_id, subagents=len(files.subagents))
        warnings = [Problem(str(path), "skipped_line", warning) for warning in chat.warnings]
        if chat.end < len(data) and not chat.legacy:
            warnings.append(Problem(str(path), "truncated_line", f"the last line ({len(data) - chat.end:,} bytes) "
                                    "is incomplete, probably being written; it was skipped"))
        warnings.extend(Problem(str(path), "note", note) for note in notes)
        fields = fold_of(chat).result()
        return self.noted_kept(OpenedSession(ref, path, len(data), hashlib.sha256(data).hexdigest(), transcript,
                                             warnings, GeminiSession(chat, fields, files), agent_title=chat.summary))

    @staticmethod
    def _session(opened: OpenedSession) -> GeminiSession:
        assert isinstance(opened.native, GeminiSession)
        return opened.native

    # --- resuming ----------------------------------------------------------------------------

    def resume_argv(self, ref: SessionRef, workspace: str | None) -> list[str]:
        from ...agents import substitute

        return substitute(self.settings.sources.gemini.resume, session_id=ref.session_id, workspace=workspace or "")

    def before_handoff(self, ref: SessionRef, workspace: Path, *, for_exec: bool) -> Handoff:
        notes = self.kept_back(ref, for_exec=for_exec)
        opened = self.open(ref)
        session = self._session(opened)
        if session.fields.hidden_by_agent:
            notes.append("Gemini CLI's own list does not show this session (a subagent's, or nothing it would "
                         "resume); `gemini --resume` may refuse it.")
        writer = self.writer(ref, opened)
        if writer is not None:
            notes.append(f"Gemini CLI may be writing this session now ({writer}); resuming it as well would "
                         "interleave two conversations in one session file.")
        return Handoff(notes, None, None, writer)

    def writer(self, ref: SessionRef, opened: OpenedSession | None = None, *, now: float | None = None) -> str | None:
        """Why the session counts as being written now (a recent message, a Gemini CLI running it), or
        None (None too when it could not be read: `opened` is None)."""
        if opened is None:
            return None
        newest = self._session(opened).fields.last_activity
        moment = parse_time(newest) if newest else None
        written = writer_of(opened.path, ref.session_id, moment.timestamp() if moment else None,
                            time.time() if now is None else now)
        return written.why if written is not None else None

    def _measured(self, opened: OpenedSession) -> tuple[int | None, int]:
        fields = self._session(opened).fields
        return fields.context_tokens, fields.context_turn

    # --- the meter ---------------------------------------------------------------------------

    def prepare_meter(self, opened: OpenedSession, workspace: Path | None, *, model: str | None = None,
                      via: str = SEND) -> LiveMeter:
        """The next request of a turn sent `via` Reprise's send or the client's own TUI (meter.py); a fork
        Reprise wrote is unmeasured until its first turn."""
        from .meter import GeminiLimits, GeminiMeter
        from .next_request import next_request

        gemini = self.settings.sources.gemini
        limits = GeminiLimits.of(self._root_path(opened.path), workspace, gemini.send if via == SEND else gemini.resume,
                                 opened.path.parent.parent)
        return GeminiMeter(self.settings.meter, self.counter, next_request(self._session(opened).chat.messages),
                           model=model, via=via, limits=limits,
                           unmeasured=self.fork_context(opened.ref, opened.sha256) is not None)

    def context_window(self, workspace: Path, model: str | None = None) -> int | None:
        """A user's `[[meter.models]]` window, else Gemini CLI's tokenLimit for the model."""
        from .meter import DEFAULT_MODEL

        return window_of(model or self.settings.meter.model or DEFAULT_MODEL, self.settings.meter.models)[0]

    def resume_cost_key(self, workspace: Path | None, fallback: Path, model: str | None = None) -> str:
        return f"{METER_VERSION}|{RESUME}"

    # --- a session of another agent written as Gemini CLI's (issue 30) ------------------------

    def write_session(self, transcript: Transcript, folder: Path, meta: SessionMeta, *, origin: SessionRef,
                      agent: str, model: str | None, dry_run: bool) -> WrittenSession:
        """The transcript as a new session file (from_transcript.py) in the `chats/` folder of the
        folder's project in the first root, the project's marker written first when the client has no
        project of the folder yet (it adopts a marked one, as its own registry does)."""
        from .from_transcript import mark_project, project_of, session_file_of
        from .writer import file_name

        if not self.roots:
            raise NotFoundError("No Gemini CLI store to write a session in.", hint="set [sources.gemini] roots")
        root = self.roots[0]
        slug, unmarked = project_of(root, str(folder))
        chats = root.chats_of(slug)
        ref = SessionRef(workspace_key(folder), self._fresh_id(chats), NAME)
        now = datetime.now(UTC)
        data, notes = session_file_of(transcript, session_id=ref.session_id, folder=str(folder), agent=agent,
                                      now=now)
        written = WrittenSession(ref, chats / file_name(ref.session_id, now), data, len(transcript.turns), notes)
        if unmarked and not dry_run:
            mark_project(root, slug, str(folder))
        return self._write_new(written, meta, origin, dry_run=dry_run)

    @staticmethod
    def _fresh_id(chats: Path) -> str:
        """A new session id whose first 8 characters no file in `chats/` shares: the client joins the files
        of a session (and its sweep deletes them) by those 8 characters."""
        from .fork import new_session_id

        try:
            taken = {join_id(name) for name in os.listdir(chats)}
        except OSError:
            taken = set()
        for _ in range(8):
            session_id = new_session_id()
            if session_id[:8] not in taken:
                return session_id
        raise RepriseError("Could not choose a new Gemini CLI session id.")   # pragma: no cover - 8 clashes

    # --- the trash ---------------------------------------------------------------------------

    def remove(self, ref: SessionRef, *, force: bool = False) -> TrashEntry:
        """`reprise rm`; a file listed as unreadable (its row's id is its name: no session id in it) is
        found by that name in the projects' `chats/` folders and goes alone (`trash restore` brings it
        back by the same name). Nothing else takes such an id: it names no session the client resumes."""
        if not is_file_id(ref.session_id):
            return super().remove(ref, force=force)
        found = next((Path(group) / ref.session_id for group in self.gemini_listing.groups()
                      if (Path(group) / ref.session_id).is_file()), None)
        if found is None:
            raise NotFoundError(f"No Gemini CLI file {ref.session_id} to move to the trash.")
        with self.own_files.lock(ref):
            return self._trash().remove(ref, found, self._root_path(found), force=force)

    def _trash(self) -> GeminiTrash:
        return GeminiTrash(self.own_paths, self.audit, self.own_files.lock)

    def _missing_note(self, ref: SessionRef) -> str:
        try:
            self._files(ref)
        except RepriseError as exc:
            return f" ({exc})"
        return ""
