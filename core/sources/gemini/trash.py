"""Reprise's trash for Gemini CLI sessions (`file_trash.py`: copy, fsync, verify, record, audit, and
only then unlink; restore refuses while anything is at the recorded place): a session file
`tmp/<slug>/chats/session-<minute>-<id8>.jsonl` goes with its subagents' folder `chats/<session id>/`
into the workspace's trash in Reprise's data folder (`workspaces/<key>/reprise/trash/gemini/`), and
comes back to the same name. While it is there, `gemini --resume ID` does not find it.

The session's other files in its `chats/` folder (a resume's stubs, which hold no conversation) go
with it, after it, into `<id>.stubs/` beside it in the trash, each copied, verified and only then
unlinked (one that cannot be moved stays where it is: Gemini CLI deletes such a file itself at its
next start there, and Reprise lists it as an empty session meanwhile); restore puts each back under
its own name unless something is there, and purge deletes them with the session.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from ...errors import RepriseError
from ...paths import SessionRef
from ...rooted import Root
from ...trash_results import TrashEntry
from ..file_trash import AgentFileTrash, aside
from ..uuid_ids import is_uuid
from .layout import is_session_name, join_id

STUBS_SUFFIX = ".stubs"


def named_for(path: Path, session_id: str) -> bool:
    """Whether `path` is named as the client names a file of the session (`session-...-<id8>.json[l]`)."""
    return is_session_name(path.name) and join_id(path.name) == session_id[:8]


class GeminiTrash(AgentFileTrash):
    """The trash of Gemini CLI sessions in Reprise's data folder (`paths`: OwnPaths of "gemini")."""

    agent = "Gemini CLI"
    source = "gemini"

    def is_session_id(self, text: str) -> bool:
        return is_uuid(text)

    def is_session_file(self, path: Path, session_id: str) -> bool:
        return named_for(path, session_id)

    def is_place(self, target: Path, root: Path, session_id: str) -> bool:
        """A session file of the id in a project's `chats/` folder (`tmp/<slug>/chats/`) of `root`."""
        return self.is_session_file(target, session_id) and target.parent.name == "chats" \
            and target.parent.parent.parent == root / "tmp"

    def sidecar_folder(self, session_file: Path, session_id: str) -> Path | None:
        """`chats/<session id>/`: the session's subagents' files."""
        return session_file.parent / session_id

    # --- the session's other files (a resume's stubs) ----------------------------------------------

    def stubs_folder(self, ref: SessionRef) -> Path:
        return self.paths.trash_dir(ref.workspace_key) / f"{ref.session_id}{STUBS_SUFFIX}"

    def stubs_of(self, store: Root, session_file: Path, session_id: str) -> list[Path]:
        """The session's other files beside `session_file` (named for it, regular files)."""
        try:
            names = store.names(session_file.parent)
        except (OSError, RepriseError):
            return []
        return [session_file.parent / name for name, is_dir in names
                if not is_dir and name != session_file.name and named_for(Path(name), session_id)]

    def remove(self, ref: SessionRef, session_file: Path, store_root: Path, *, now: float | None = None,
               force: bool = False) -> TrashEntry:
        """The session file and its subagents' folder into the trash (`AgentFileTrash.remove`), then its
        other files."""
        store = Root(store_root, f"{self.agent} root")
        stubs = self.stubs_of(store, Path(session_file), ref.session_id)
        entry = super().remove(ref, session_file, store_root, now=now, force=force)
        for stub in stubs:
            self._stash(ref, store, stub)
        return entry

    def _stash(self, ref: SessionRef, store: Root, stub: Path) -> None:
        """Move one other file of a trashed session into `<id>.stubs/`: copied, taken off its path,
        compared and only then unlinked; on any failure it stays where it was."""
        target = self.stubs_folder(ref) / stub.name
        try:
            digest = self.data.copy_in(store, stub, target)
        except (OSError, RepriseError):
            return
        try:
            store.move_noreplace(stub, aside(stub))
        except (OSError, RepriseError):
            self._drop(target)
            return
        try:
            same = store.digest(aside(stub)) == digest
        except (OSError, RepriseError):
            same = False
        try:
            if same:
                store.unlink(aside(stub))
                self.audit.append(ref.workspace_key, "rm", session_id=ref.session_id, digests=[digest],
                                  options={"stub": stub.name}, now=time.time())
            else:
                store.move_noreplace(aside(stub), stub)
                self._drop(target)
        except (OSError, RepriseError):
            return   # both kept: the copy in the trash, and the file at its hidden name

    def _drop(self, target: Path) -> None:
        try:
            self.data.unlink(target)
        except (OSError, RepriseError):
            pass

    def restore(self, ref: SessionRef, roots: Sequence[Path], *, now: float | None = None) -> TrashEntry:
        """The session back (`AgentFileTrash.restore`), then each of its other files, under its own name
        beside it unless something is there (then it stays in the trash)."""
        record = self.record(ref)
        entry = super().restore(ref, roots, now=now)
        origin, root = record.get("from"), record.get("root")
        folder = self.stubs_folder(ref)
        if not isinstance(origin, str) or not isinstance(root, str) or not self.data.exists(folder):
            return entry
        store = Root(Path(root), f"{self.agent} root")
        left = False
        for name, is_dir in self.data.names(folder):
            place = Path(origin).parent / name
            try:
                if is_dir or not named_for(place, ref.session_id) or store.exists(place):
                    left = True
                    continue
                store.copy_in(self.data, folder / name, place)
                self.data.unlink(folder / name)
            except (OSError, RepriseError):
                left = True
        if not left:
            try:
                self.data.rmtree(folder)
            except (OSError, RepriseError):
                pass
        return entry

    def _gather(self, ref: SessionRef, tomb: Path) -> bool:
        """A purge takes the session's other files with it."""
        folder = self.stubs_folder(ref)
        if self.data.exists(folder):
            self.data.move(folder, tomb / "stubs", replace=True)
        return super()._gather(ref, tomb)
