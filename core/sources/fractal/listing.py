"""Fractal's side of the listing: its session files, their stat, the listing fields and the
search texts of one file, read from its `SessionState`.

`FractalListing` is the `ListingSource` the catalog lists Fractal's store through; the Fractal
source (`FractalSource`) takes these methods over.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import RepriseError
from ...folder_scan import FolderNames, FolderStats, scan_folder, with_suffix
from ...paths import OwnPaths, SessionRef
from ...problems import Problem
from ...transcript import Usage
from ..base import ListedFile, ListingFields, ListingSource, SearchRecord, SessionFile
from ..workspaces import GroupRule
from .spec import SPEC
from .store import Store

if TYPE_CHECKING:   # what reads a file imports pydantic: a listing of the cached rows reads none
    from .models import SessionState

PREVIEW_CHARS = 400
_RACY_NS = 3_000_000_000
_SESSION_FILE = with_suffix(".json")


def _preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


def listing_fields(state: SessionState, key: str, warnings: list[Problem]) -> ListingFields:
    """What a listing shows of one decoded session."""
    from .models import last_measured_context, parse_time, usage_totals
    from .transcript import trace_model

    turns = state.turns
    times = [t for t in (parse_time(h.updated_at) for h in state.history) if t is not None]
    activity = max(times).isoformat() if times else None
    measured = last_measured_context(state)
    totals = usage_totals(state)
    return ListingFields(
        session_id=state.session_id,
        workspace_key=key,
        turns=len(turns),
        first_message=_preview(turns[0].user.message) if turns else "",
        last_message=_preview(turns[-1].user.message) if turns else "",
        last_status=turns[-1].status if turns else None,   # type: ignore[arg-type]  # Fractal's are the neutral ones
        pending=any(t.agent is None for t in turns) or any(h.status == "pending" for h in state.history),
        last_activity=activity,
        activity_source="history" if times else "mtime",
        context_tokens=measured[1] if measured else 0,
        usage=Usage(input_tokens=totals.input_tokens, output_tokens=totals.output_tokens, cost=totals.cost),
        history_count=len(state.history),
        model=trace_model(state),
        warning="; ".join(w.message for w in warnings) or None,
    )


def search_records(state: SessionState) -> list[SearchRecord]:
    """Every searchable text of a session: each turn's message, reply and error, and the files and
    commands of the turns whose details the file keeps (turn 0: a detail whose turn is gone)."""
    records = []
    numbers = {}
    for number, turn in enumerate(state.turns, start=1):
        numbers[turn.turn_id] = number
        records.append(SearchRecord(number, "user", turn.user.message))
        if turn.agent is not None:
            if turn.agent.response:
                records.append(SearchRecord(number, "response", turn.agent.response))
            if turn.agent.error:
                records.append(SearchRecord(number, "error", turn.agent.error))
    for entry in state.history:
        number = numbers.get(entry.turn_id, 0)
        for field_name, items in (("files", entry.files_read + entry.files_modified), ("commands", entry.commands_run)):
            if items:
                records.append(SearchRecord(number, field_name, "\n".join(items)))
        if entry.error and number == 0:
            records.append(SearchRecord(number, "error", entry.error))
    return records


class FractalListing(ListingSource):
    """Fractal's store under one state root, as the catalog lists it."""

    name = SPEC.name

    def __init__(self, store: Store):
        self.store = store
        self._workspaces = f"{store.paths.workspaces}/"

    def __reduce__(self) -> tuple[Callable[[str], FractalListing], tuple[str]]:
        """Worker processes get the state root and open their own store."""
        return _listing_at, (str(self.store.root),)

    @property
    def own_paths(self) -> OwnPaths:
        return self.store.paths

    def file_root(self, path: str) -> Path:
        return self.store.root

    def groups(self) -> list[str]:
        return self.store.workspace_keys()

    @property
    def workspaces(self) -> GroupRule:
        """Fractal keeps each workspace's sessions in a folder named by its key, and records the key's folder."""
        return GroupRule(self.store.workspace_path)

    def workspace_path(self, key: str) -> str | None:
        return self.store.workspace_path(key)

    def file_path(self, key: str, file_id: str) -> str:
        return f"{self._workspaces}{key}/sessions/{file_id}.json"

    def file_stats(self, key: str, known: FolderNames | None = None) -> FolderStats:
        # Reprise's in-flight writes (`.<id>.tmp-…`) never end in .json: the suffix leaves them out.
        return scan_folder(f"{self._workspaces}{key}/sessions", "sessions folder", _SESSION_FILE, known)

    def read_listing(self, file: SessionFile, now_ns: int) -> ListedFile:
        key = file.workspace_key or ""
        try:
            inspected = self.store.inspect(Path(file.path), file.file_id)
        except FileNotFoundError:
            return ListedFile(key, file.file_id, file.path, -1, -1,
                              Problem(file.path, "vanished", "the file disappeared while it was read"), settled=False)
        decoded = inspected.decoded
        if decoded.state is None:
            # A problem is cached like any row (the store already retried a file that could be
            # mid-write), so a broken file costs one read per change, not one per listing.
            problem = decoded.problem or Problem(file.path, "unreadable", "the file could not be read")
            return ListedFile(key, file.file_id, file.path, inspected.size, inspected.mtime_ns, problem,
                              content_digest=inspected.content_digest)
        # Read again on the next listing while the mtime is within the racy window of now: a rewrite in
        # the same tick can keep (size, mtime). Not a file dated in the future: a rewrite now moves its
        # mtime back.
        settled = abs(now_ns - inspected.mtime_ns) >= _RACY_NS
        return ListedFile(key, file.file_id, file.path, inspected.size, inspected.mtime_ns,
                          listing_fields(decoded.state, key, decoded.warnings), settled, inspected.content_digest)

    def read_search_records(self, file: SessionFile) -> list[SearchRecord] | None:
        try:
            inspected = self.store.inspect(Path(file.path), file.file_id)
        except FileNotFoundError:
            return None
        return None if inspected.decoded.state is None else search_records(inspected.decoded.state)

    def title_and_pin(self, ref: SessionRef) -> tuple[str | None, bool]:
        try:
            meta = self.store.read_meta(ref)
        except (OSError, ValueError, RepriseError):   # a bad name or metadata file lists without them
            return None, False
        return meta.title, meta.pinned


def _listing_at(root: str) -> FractalListing:
    return FractalListing(Store(Path(root)))
