"""A listing's row: one session file of one source, or a file that could not be read and why.

Every field is declared. The identity, the stat, the sort keys and a problem come with every
listing (the catalog's columns: `catalog_columns.COLUMNS` names the field each one fills); the listing
fields a row shows (`details`, the source's `ListingFields`) are loaded explicitly, for the rows a
caller shows or serializes (`Catalog.load_details`), never on access.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import RepriseError
from .meter import ContextLimit
from .paths import SessionRef
from .sources.base import AgentDeletion, ListingFields


class DetailsNotLoaded(RuntimeError):
    """A row's listing fields were read before they were loaded (a programming error)."""


@dataclass(slots=True, eq=False, repr=False)
class SessionRow:
    """One line of a listing. Rows compare by identity, like the files they stand for, and show as
    their identity (a repr of every field of ten thousand rows, which Textual makes of a message,
    cost the UI thread a third of a second)."""

    source: str
    workspace_key: str
    file_id: str
    size: int
    mtime_ns: int
    activity_ts: float   # seconds since the epoch: the newest turn's time, else the file's mtime
    turns: int
    context_tokens: int
    problem_code: str | None
    problem_message: str | None
    problem_field: str | None
    resume_cost: int | None
    resume_cost_key: str | None
    content_digest: str | None   # of the bytes the fields were read from, when they were recent
    path: str   # where the source keeps the file (not a catalog column: the source derives it)
    group: str = ""   # the source's folder of the file (the workspace key, for a store grouped by workspace)
    hidden_by_agent: bool = False   # the agent's own picker does not offer it (Claude Code's `claude -p` sessions)
    context_window: int | None = None   # the window the agent recorded for it (`ListingFields.context_window`)
    agent_deletion: AgentDeletion | None = None   # when the agent deletes the file by age (not a catalog column)
    kept: bool = False   # Reprise keeps a copy of the file as it is, out of the agent's reach
    limit: ContextLimit | None = None   # the window its next turn is measured against (not a catalog column)
    folder: str | None = None   # the project folder for people, never the key (not a catalog column)
    workspace_path: str | None = None
    title: str | None = None
    pinned: bool = False
    details: ListingFields | None = None   # None until loaded
    session_id: str | None = None   # the session's id when it is not its file id (`file_is_session` False)
    sweep_facts: str | None = None   # what the agent's sweep needs of it, as its read found it (`ListingFields`)

    def __repr__(self) -> str:
        return f"SessionRow({self.source!r}, {self.workspace_key!r}, {self.file_id!r})"

    @property
    def fields(self) -> ListingFields:
        """The loaded listing fields; DetailsNotLoaded before `Catalog.load_details` filled them."""
        if self.details is None:
            raise DetailsNotLoaded(f"the listing fields of {self.path} were not loaded (Catalog.load_details)")
        return self.details

    @property
    def id(self) -> str:
        """The session's id: its fields' when its file id is not it (`file_is_session` False), else the
        file id. What a row shows, copies and is found by (`reprise show ID`, the list's filter)."""
        return self.session_id or self.file_id

    @property
    def ref(self) -> SessionRef | None:
        """The session's validated name; None for a file whose name is not a valid id."""
        try:
            return SessionRef(self.workspace_key, self.id, self.source)
        except RepriseError:
            return None

    @property
    def display_title(self) -> str:
        if self.title:
            return self.title
        if self.problem_code:
            return f"[{self.problem_code}] {self.problem_message}"
        if self.fields.agent_title:
            return self.fields.agent_title
        first = self.fields.first_message.strip()
        return first.splitlines()[0] if first else "(no turns yet)"
