"""What Reprise writes of Gemini CLI sessions, and what Gemini CLI's own sweep will delete: the roles
`GeminiSource` takes from here (keep, fork, new, send, the sweep), on the hooks every agent store gives
(`AgentStoreSource`: where a session's file is, its root, its bytes, who may be writing it, its trash).

Reprise never rewrites a Gemini CLI file: a fork is a new file beside the original (`fork.py`,
`writer.py`), a new session is written by the client itself (`new.py`), a send is the client's own
turn (`turns.py`), and the trash and keep copies are Reprise's own (`trash.py`, `keep.py`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ...agents import Backend
from ...errors import NotFoundError, PendingTurnError, RepriseError, UsageError
from ...meter import MeterResult
from ...paths import SessionRef
from ...problems import Problem
from ...rows import SessionRow
from ..agent_store import AgentStoreSource
from ..base import AgentDeletion, KeepReport
from ..file_keep import COMPANIONS
from ..roles import Metered
from .keep import keep, kept_sessions
from .kept import KeptListing
from .layout import CHATS, TMP, is_session_name, join_id, main_first
from .retention import AT_RISK_DAYS, Sweeps, read_policy

if TYPE_CHECKING:
    from ...session_meta import SessionMeta
    from ...trimming import TrimOptions, TrimResult

NAME = "gemini"
DEFAULT_MODEL = "gemini-2.5-pro"   # the tokenizer a fork counts with when the session names no model
AT_RISK_SHOWN = 20


class GeminiWriting(AgentStoreSource):
    """The writes and the sweep of a Gemini CLI source (its `roots`: `.gemini` folders)."""

    _sweeps: Sweeps | None = None
    gemini_listing: KeptListing   # the source's: it knows each project's folder

    # --- the trash and keep --------------------------------------------------------------------

    def keep(self, ref: SessionRef) -> KeepReport:
        """Copy the session's file, its subagents' files and its stubs into Reprise's archive, out of the
        sweep's reach."""
        path = self._locate(ref)
        if path is None:
            raise NotFoundError(f"No Gemini CLI session file {ref.session_id} to keep (it may only be kept already).")
        with self.own_files.lock(ref):
            result = keep(self.archive, ref, path, self._root_path(path))
        return KeepReport(ref, result.session.digest, result.session.size, [f.part for f in result.added],
                          [f.part for f in result.unchanged], result.problems)

    def kept_versions(self) -> dict[SessionRef, tuple[int, int]]:
        """{session: (size, mtime_ns) of its newest kept copy}, the mtime joined as a row's is: the newest of
        the session file's and of its other files' (a resume's stubs) kept with it."""
        versions = {}
        for kept in kept_sessions(self.own_paths).sessions:
            stamps = [kept.session.mtime_ns or -1, *(other.mtime_ns or -1 for other in kept.sidecars
                                                     if other.part.startswith(f"{COMPANIONS}/"))]
            versions[kept.ref] = (kept.session.size, max(stamps))
        return versions

    # --- Gemini CLI's sweep --------------------------------------------------------------------

    @property
    def sweeps(self) -> Sweeps:
        if self._sweeps is None:
            self._sweeps = Sweeps([root.path for root in self.roots],
                                  folder_of=self.gemini_listing.folder_of_group)
        return self._sweeps

    def deletion(self, path: str, mtime_ns: int, now: float) -> AgentDeletion | None:
        return self.sweeps.deletion(path, mtime_ns, now)

    def deletions(self, rows: Sequence[SessionRow], listed: Sequence[SessionRow], now: float
                  ) -> list[AgentDeletion | None]:
        return self.sweeps.deletions(rows, listed, now)

    def health(self, *, clean: bool, stale_after: float) -> tuple[list[Problem], list[str], list[str], list[str]]:
        """For `doctor`: the settings files that cannot be read, damaged keep records, what the sweep does
        by the user's settings, and the sessions it deletes within the week that Reprise does not keep as
        they are. Reprise leaves no temp files of its own in a Gemini CLI store."""
        problems, notes = self.sweep_health()
        problems.extend(kept_sessions(self.own_paths).problems)
        return problems, [], [], notes

    def sweep_health(self) -> tuple[list[Problem], list[str]]:
        """The settings files that cannot be read, what the sweep does by the user's settings, and the
        sessions it deletes within the week that Reprise does not keep as they are."""
        problems: list[Problem] = []
        notes: list[str] = []
        now = time.time()
        kept = {(str(kept.session.original), kept.session.size, kept.session.mtime_ns)
                for kept in kept_sessions(self.own_paths).sessions}
        for root in self.roots:
            policy = read_policy(root.path, None)
            problems.extend(policy.problems)
            notes.append(f"{root.path}: {policy.describe()}")
            at_risk = []
            for path, size, mtime_ns in _main_files(root.path):
                deletion = self.sweeps.deletion(str(path), mtime_ns, now)
                if deletion is not None and deletion.at_risk and (str(path), size, mtime_ns) not in kept \
                        and (deletion.at is None or deletion.at <= now + AT_RISK_DAYS * 86400):
                    at_risk.append(f"{path.name} ({deletion.phrase})")
            if at_risk:
                notes.append(f"{len(at_risk)} Gemini CLI session(s) under {root.path} are deleted by Gemini CLI "
                             "within a week; `reprise keep ID` (or `reprise keep --due`) copies them out of its "
                             "reach: " + ", ".join(sorted(at_risk)[:AT_RISK_SHOWN])
                             + (" …" if len(at_risk) > AT_RISK_SHOWN else ""))
        return problems, notes

    # --- sending -------------------------------------------------------------------------------

    def turn_backend(self, ref: SessionRef) -> Backend | None:
        """Every turn of a Gemini CLI session runs `[sources.gemini] send`, whatever `--agent` says."""
        from .turns import GeminiSendBackend

        path = self._locate(ref)
        store = self._root_path(path) if path is not None else self.roots[0].path
        return GeminiSendBackend(list(self.settings.sources.gemini.send), store)

    def check_sendable(self, ref: SessionRef, message: str, workspace: Path | None, *,
                       confirm_over: bool) -> MeterResult | None:
        """The meter with the message; refused when the session's file is gone, or while Gemini CLI may be
        running it (a process on its id or holding its file: a `lastUpdated` a moment ago alone does not
        refuse, it is the turn Reprise sent before), or over the window unless confirmed."""
        from ..file_writers import process_writing
        from .liveness import ids_in_argv

        path = self._locate(ref)
        if path is None:
            raise NotFoundError(f"No Gemini CLI session file {ref.session_id}, so no turn can be sent to it.")
        opened = self.open(ref)
        running = process_writing(path, session_id=ref.session_id, ids_in_argv=ids_in_argv)
        if running is not None:
            raise PendingTurnError(f"Gemini CLI may be running session {ref.session_id} now ({running.why}).",
                                   hint="finish or leave that Gemini CLI first")
        if Metered not in self.roles:
            return None   # no meter of Gemini CLI's next request: nothing to weigh the message against
        return self.prepare_meter(opened, workspace).with_message(message).sendable(confirm_over=confirm_over)

    # --- a new session -------------------------------------------------------------------------

    def new_session(self, key: str, folder: Path, meta: SessionMeta) -> SessionRef:
        """A session id for Gemini CLI to start on (`new_argv`: `gemini --session-id ID` in the folder),
        with Reprise's title of it kept ahead of the file the client writes."""
        from .new import new_session_id

        if not self.roots:
            raise NotFoundError("No Gemini CLI store to start a session in.", hint="set [sources.gemini] roots")
        return self._titled(SessionRef(key, new_session_id(), NAME), meta)

    def new_argv(self, ref: SessionRef, folder: Path) -> list[str] | None:
        from .new import new_argv

        return new_argv(list(self.settings.sources.gemini.new), ref.session_id, folder)

    # --- trim as a fork ------------------------------------------------------------------------

    def fork(self, ref: SessionRef, options: TrimOptions, workspace: Path | None, *, dry_run: bool,
             force: bool, model: str | None, expected_sha256: str | None) -> TrimResult:
        """Preview or write a trimmed copy of the session as a new session file beside it, in the same
        `chats/` folder (Gemini CLI's own file is never rewritten), archived and titled "<title>
        (trimmed)" with lineage (`fork_files.write_fork`); the client resumes it by its new id from the
        session's folder."""
        from .fork import new_session_id, plan_fork
        from .writer import file_name

        opened = self.open(ref)
        if opened.path.parent.name != CHATS or opened.path.parent.parent.parent.name != TMP:
            raise UsageError(f"{opened.path} is not in a project's chats/ folder; Reprise does not fork it.")
        data = self._read(opened.path)
        self._refuse_changed(ref, data, expected_sha256, opened.path)
        fork_id = new_session_id()
        now = datetime.now(UTC)
        plan = plan_fork(data, options, fork_id=fork_id, now=now, context_before=self._measured(opened)[0],
                         count=self._counting(model, None, DEFAULT_MODEL))
        title = opened.agent_title or (opened.transcript.turns[0].user_message if opened.transcript.turns else "") \
            or f"session {ref.session_id[:8]}"
        return self._fork_result(ref, plan, data, fork_id, self.writer(ref, opened), options=options, dry_run=dry_run,
                                 force=force, title=title, path=opened.path,
                                 fork_path=opened.path.parent / file_name(fork_id, now))


def _main_files(store: Path) -> list[tuple[Path, int, int]]:
    """(path, size, mtime_ns) of each session's first file in every project's `chats/` of a store."""
    found = []
    try:
        projects = sorted((store / TMP).iterdir())
    except OSError:
        return []
    for project in projects:
        chats = project / CHATS
        try:
            names = [name for name in _names(chats) if is_session_name(name)]
        except (OSError, RepriseError):
            continue
        groups: dict[str, list[str]] = {}
        for name in names:
            groups.setdefault(join_id(name), []).append(name)
        for members in groups.values():
            path = chats / main_first(members)[0]
            try:
                info = path.stat()
            except OSError:
                continue
            found.append((path, info.st_size, info.st_mtime_ns))
    return found


def _names(folder: Path) -> Sequence[str]:
    return sorted(entry.name for entry in folder.iterdir() if entry.is_file())
