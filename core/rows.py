"""A listing's row: one session file of one source, or a file that could not be read and why.

Every field is declared. The identity, the stat, the sort keys and a problem come with every
listing; the listing fields a row shows (`details`, the source's `ListingFields`) are loaded
explicitly, for the rows a caller shows or serializes (`Catalog.load_details`), never on access.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import RepriseError
from .paths import SessionRef
from .sources.base import ListingFields


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
    workspace_path: str | None = None
    title: str | None = None
    pinned: bool = False
    details: ListingFields | None = None   # None until loaded

    def __repr__(self) -> str:
        return f"SessionRow({self.source!r}, {self.workspace_key!r}, {self.file_id!r})"

    @property
    def fields(self) -> ListingFields:
        """The loaded listing fields; DetailsNotLoaded before `Catalog.load_details` filled them."""
        if self.details is None:
            raise DetailsNotLoaded(f"the listing fields of {self.path} were not loaded (Catalog.load_details)")
        return self.details

    @property
    def ref(self) -> SessionRef | None:
        """The session's validated name; None for a file whose name is not a valid id."""
        try:
            return SessionRef(self.workspace_key, self.file_id, self.source)
        except RepriseError:
            return None

    @property
    def display_title(self) -> str:
        if self.title:
            return self.title
        if self.problem_code:
            return f"[{self.problem_code}] {self.problem_message}"
        first = self.fields.first_message.strip()
        return first.splitlines()[0] if first else "(no turns yet)"

    def as_dict(self) -> dict:
        fields = self.fields
        usage = fields.usage
        return {
            "session_id": fields.session_id or self.file_id,
            "workspace_key": self.workspace_key,
            "workspace_path": self.workspace_path,
            "path": self.path,
            "title": self.title,
            "pinned": self.pinned,
            "turns": self.turns,
            "first_message": fields.first_message,
            "last_message": fields.last_message,
            "last_status": fields.last_status,
            "pending": fields.pending,
            "last_activity": fields.last_activity,
            "activity_source": fields.activity_source,
            "size": self.size,
            "context_tokens": self.context_tokens or None,
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "cost": usage.cost,
                      "cache_read_tokens": usage.cache_read_tokens,
                      "cache_creation_tokens": usage.cache_creation_tokens},
            "resume_cost": self.resume_cost,
            "problem": None if self.problem_code is None else {
                "code": self.problem_code, "message": self.problem_message, "field": self.problem_field},
            "warning": fields.warning,
            "source": self.source,
            "branch": fields.branch,
            "model": fields.model,
            "hidden_by_agent": fields.hidden_by_agent,
        }
