"""Gemini CLI sessions only Reprise's kept copies hold (`keep.py`): a session Reprise kept whose files
Gemini CLI's sweep has since deleted is still listed, shown and searched, read from the newest kept
copy of its session file (`kept_listing.py`: the listing's `kept` group), and resuming it puts the kept
files back where the client had them first (`tmp/<slug>/chats/`, byte for byte, its stubs and
subagents' files with it), the only place `gemini --resume ID` finds a session.

A kept row is listed under the folder of its project (the client's map of the chats folder it was
kept from), as its row was before the sweep; the kept copy's name (`<digest>.json` in the archive)
says nothing of its form, so it is read as the file it was kept from is named (`.jsonl` lines, or an
older client's whole `.json`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from ...errors import ConflictError
from ...folder_scan import FolderNames, FolderStats
from ...paths import OwnPaths, SessionRef
from ...problems import Problem
from ...session_files import ReadProblem, read_regular_file
from ..agent_json import Exact
from ..agent_store import AgentStoreSource
from ..base import ListedFile, OpenedSession, SessionFile
from ..file_keep import COMPANIONS, KeptSession
from ..jsonl_listing import JsonlListing
from ..kept_listing import KEPT, KeptOnly, put_back
from .fields import GeminiFields, orjson_exact
from .keep import KEEP, kept_path, kept_session
from .layout import Registry
from .legacy import legacy_chat
from .lines import Chat, chat_of_bytes
from .listing import GeminiListing, SessionFiles
from .retention import FileFacts
from .workspaces import GeminiRule

AGENT = "Gemini CLI"


class KeptRule(GeminiRule):
    """The `mapped` rule, with the kept group among the groups of each workspace one of its sessions is of."""

    def __init__(self, groups: Callable[[], list[str]], folders: Callable[[], Mapping[str, str]],
                 key_of_folder: Callable[[str], str], kept_keys: Callable[[], set[str]]):
        super().__init__(groups, folders, key_of_folder)
        self._kept_keys = kept_keys

    def groups_for(self, keys: Collection[str] | None) -> list[str] | None:
        found = super().groups_for(keys)
        if found is not None and keys is not None and KEPT not in found and self._kept_keys() & set(keys):
            found.append(KEPT)
        return found


class KeptListing(GeminiListing):
    """Gemini CLI's listing with one more group, `kept`: the sessions only Reprise's kept copies hold."""

    def __init__(self, roots: Sequence[Path], own_paths: OwnPaths):
        super().__init__(roots, own_paths)
        self.kept = KeptOnly(own_paths, KEEP)
        self._own_prefix = f"{own_paths.root}/"
        self._rule = KeptRule(self.groups, self.folders, self.key_of_folder, self._kept_keys)

    def _kept_keys(self) -> set[str]:
        if self.kept.paths is None:
            self.kept.refresh()
        return {kept.ref.workspace_key for kept in self.kept.sessions.values()}

    def groups(self) -> list[str]:
        return super().groups() + self.kept.groups()

    def folder_of_group(self, group: str, registries: dict[Path, Registry] | None = None) -> str | None:
        return None if group == KEPT else super().folder_of_group(group, registries)

    def root_path(self, path: str | Path) -> Path:
        if str(path).startswith(self._own_prefix):
            return self._own_paths.root   # a kept copy
        return super().root_path(path)

    def file_stats(self, group: str, known: FolderNames | None = None) -> FolderStats:
        return self.kept.stats() if group == KEPT else super().file_stats(group, known)

    def file_path(self, group: str, file_id: str) -> str:
        return self.kept.path(file_id) if group == KEPT else super().file_path(group, file_id)

    def kept_of(self, path: str | Path) -> KeptSession | None:
        """The kept session whose copy `path` is (None for a file of the client's store)."""
        if not str(path).startswith(self._own_prefix):
            return None
        found = self.kept.session_of(path)
        if found is None:
            self.kept.refresh()
            found = self.kept.session_of(path)
        return found

    def _files_in(self, group: Path, session_id: str) -> SessionFiles | None:
        # `locate` looks in the groups of a workspace: the kept group is no folder of the client's
        return None if str(group) == KEPT else super()._files_in(group, session_id)

    @staticmethod
    def _subagent_file(group: Path, session_id: str) -> Path | None:
        return None if str(group) == KEPT else GeminiListing._subagent_file(group, session_id)

    def others_of(self, file: SessionFile) -> list[str]:
        return [] if file.group == KEPT else super().others_of(file)

    def _group_of(self, file: SessionFile) -> str:
        kept = self.kept_of(file.path) if file.group == KEPT else None
        return str(kept.original.parent) if kept is not None else super()._group_of(file)

    def read_listing(self, file: SessionFile, now_ns: int) -> ListedFile:
        kept = self.kept_of(file.path) if file.group == KEPT else None
        if kept is not None and not kept.original.name.endswith(".json"):
            # the copy's own name ends in .json whatever it holds: lines are read on as lines are
            return JsonlListing.read_listing(self, file, now_ns)
        return super().read_listing(file, now_ns)

    def _row(self, file: SessionFile, found: GeminiFields, size: int, mtime_ns: int, warnings: list[str],
             now_ns: int, digest: str, carry: bytes | None, files: list[FileFacts]) -> ListedFile:
        if file.group == KEPT:
            warnings = [self.kept.note, *warnings]
        return super()._row(file, found, size, mtime_ns, warnings, now_ns, digest, carry, files)

    def read_chat(self, path: Path, exact: Exact = orjson_exact) -> tuple[bytes, Chat]:
        kept = self.kept_of(path)
        if kept is None:
            return super().read_chat(path, exact)
        data, _ = read_regular_file(path, self._own_paths.root)
        chat = legacy_chat(data) if kept.original.name.endswith(".json") else chat_of_bytes(data, exact=exact)
        if chat is None:
            raise ReadProblem("no_session", "the kept copy is not a session Gemini CLI reads")
        return data, chat


class KeptSessions(AgentStoreSource):
    """What a Gemini CLI source does for a session only its kept copies hold (its hooks, called from
    `GeminiSource`: `is_kept_only`, `kept_files`, `noted_kept`, `kept_back`)."""

    gemini_listing: KeptListing

    def kept_only(self, ref: SessionRef) -> KeptSession | None:
        """The kept session, when Gemini CLI no longer holds its file (else None)."""
        return kept_session(self.archive, ref) if self._locate(ref) is None else None

    def is_kept(self, ref: SessionRef) -> bool:
        """Whether Reprise keeps a copy of the session (an `exists` for a session whose file is gone)."""
        return kept_session(self.archive, ref) is not None

    def kept_files(self, ref: SessionRef) -> SessionFiles | None:
        """The session's files as its kept copies hold them, when Gemini CLI no longer holds it."""
        kept = self.kept_only(ref)
        if kept is None:
            return None
        folder = self.archive.directory(ref)
        subagents = [folder / f"{item.digest}.json" for item in kept.sidecars if not item.part.startswith(COMPANIONS)]
        return SessionFiles(kept_path(self.archive, ref), [], subagents)

    def noted_kept(self, opened: OpenedSession) -> OpenedSession:
        """The session as opened, saying first that it was read from a kept copy when it was."""
        kept = self.gemini_listing.kept_of(opened.path)
        if kept is not None:
            opened.warnings.insert(0, Problem(str(kept.original), "deleted_by_agent",
                                              f"Gemini CLI deleted {kept.original}; this is the copy Reprise kept "
                                              f"at {kept.kept_at}", severity="warning"))
        return opened

    def kept_back(self, ref: SessionRef, *, for_exec: bool) -> list[str]:
        """Before a resume: a session only kept copies hold is put back where Gemini CLI had it (`put_back`,
        once the client is about to run: `for_exec`), so `gemini --resume ID` in its folder finds and
        continues it; what to say of it (nothing for a session the client holds)."""
        kept = self.kept_only(ref)
        if kept is None:
            return []
        roots = [Path(root.path).expanduser().resolve() for root in self.roots]
        if kept.store_root not in roots:
            raise ConflictError(f"Gemini CLI session {ref.session_id} was kept from {kept.store_root}, not a "
                                "Gemini CLI root Reprise reads; its kept copy was not put back.",
                                hint=f"Reprise's copy of it is {kept_path(self.archive, ref)}")
        if not for_exec:
            return [f"Gemini CLI deleted this session's file; Reprise puts the copy it kept back to "
                    f"{kept.original} before Gemini CLI resumes it."]
        with self.own_files.lock(ref):
            placed = put_back(self.archive, kept, kept.store_root, AGENT)
        return [f"Gemini CLI had deleted this session's file; Reprise put the copy it kept back "
                f"({len(placed)} file(s), {kept.original} first)."]
