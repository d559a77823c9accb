"""The `reprise list --json` and `reprise search --json` documents as plain data, in the field order
of `contract.SessionList` and `contract.Search`.

Validating a pydantic model per row and dumping it again cost a listing of 1,240 sessions 30 ms,
and importing the contract's ninety models 25 ms more, for data already typed by core. The CLI
prints this data as it is; `contract.session_list` and `contract.search` validate the very same data
against the schema's models (a test checks that both give the same bytes). No pydantic here."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .problems import Problem
    from .rows import SessionRow
    from .search_engine import SearchUpdate
    from .search_index import SearchHit
    from .service import Listing


def session_data(row: SessionRow) -> dict[str, Any]:
    """A listing row (`contract.Session`); its listing fields must be loaded (`Service.load_details`)."""
    fields = row.fields
    usage = fields.usage
    deletion = row.agent_deletion
    return {
        "session_id": fields.session_id or row.file_id, "workspace_key": row.workspace_key,
        "workspace_path": row.workspace_path, "path": row.path, "title": row.title or fields.agent_title,
        "pinned": bool(row.pinned), "turns": row.turns, "first_message": fields.first_message,
        "last_message": fields.last_message, "last_status": fields.last_status, "pending": bool(fields.pending),
        "last_activity": fields.last_activity, "activity_source": fields.activity_source, "size": row.size,
        "context_tokens": row.context_tokens or None,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                  "cost": float(usage.cost or 0.0), "cache_read_tokens": usage.cache_read_tokens,
                  "cache_creation_tokens": usage.cache_creation_tokens},
        "resume_cost": row.resume_cost,
        "problem": None if row.problem_code is None else {"code": row.problem_code, "message": row.problem_message,
                                                          "field": row.problem_field},
        "warning": fields.warning, "source": row.source, "branch": fields.branch, "model": fields.model,
        "hidden_by_agent": bool(fields.hidden_by_agent), "agent_title": fields.agent_title,
        "deleted_by_agent_at": None if deletion is None or deletion.at is None else _iso(deletion.at),
        "kept": bool(row.kept),
    }


def list_data(listing: Listing) -> dict[str, Any]:
    """`reprise list` (`contract.SessionList`)."""
    return {"sessions": [session_data(row) for row in listing.rows], "shown": len(listing.rows),
            "total": listing.total, "scope": listing.scope, "sort": listing.sort}


def search_data(hits: Iterable[SearchHit], update: SearchUpdate | None = None) -> dict[str, Any]:
    """`reprise search` (`contract.Search`): each hit's snippet as wide as `SNIPPET_CELLS`, the matched
    words between [ and ]."""
    from .search_index import SNIPPET_CELLS

    return {"hits": [{"session_id": hit.row.id, "workspace_key": hit.row.workspace_key, "turn": hit.turn,
                      "field": hit.field, "snippet": hit.excerpt.around(SNIPPET_CELLS).marked("[", "]")}
                     for hit in hits],
            "outputs_cut": 0 if update is None else update.cut,
            "problems": [] if update is None else [problem_data(each) for each in update.problems]}


def problem_data(item: Problem) -> dict[str, Any]:
    """A file that could not be used (`contract.Problem`)."""
    return {"path": item.path, "code": item.code, "message": item.message, "field": item.field,
            "severity": item.severity}


def _iso(moment: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))
