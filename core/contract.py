"""The `--json` contract: a pydantic model of every document `reprise ... --json` prints, and the
one converter from core's objects to each.

The CLI prints `dump(<converter>(obj))`; nothing else in Reprise shapes a `--json` document.
Field order is the order the documents have always had, so old readers see the same bytes; new
fields are added, never renamed. `python -m reprise.core.contract` writes the JSON Schema of every
document to `docs/json-schema.json` (a test checks that the file is current).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from . import list_document
from .problems import next_step_for
from .search_index import SNIPPET_CELLS

if TYPE_CHECKING:
    from .archive import ArchiveEntry as CoreArchiveEntry
    from .audit import AuditRecord as CoreAuditRecord
    from .config import SourceChoice
    from .continuation import Continuation
    from .errors import RepriseError
    from .meter import MeterResult, Part
    from .paths import SessionRef
    from .problems import Problem as CoreProblem
    from .retention import PruneCandidate as CorePruneCandidate
    from .retention import PruneOptions as CorePruneOptions
    from .rows import SessionRow
    from .search_engine import SearchUpdate
    from .search_index import SearchHit as CoreSearchHit
    from .sending import SendResult
    from .service import DoctorReport, Listing, WorkspaceInfo
    from .service import ResumePlan as CoreResumePlan
    from .service import SessionDetail as CoreSessionDetail
    from .sources.base import KeepReport
    from .transcript import Transcript as CoreTranscript
    from .transcript import Usage
    from .trash_results import PruneResult, PurgeResult, RelinkResult
    from .trash_results import TrashEntry as CoreTrashEntry
    from .trimming import RestoreResult, TrimResult
    from .trimming import TrimOptions as CoreTrimOptions

# Where the schema lives in a checkout, relative to its root (the package may be installed elsewhere).
SCHEMA_PATH = Path("docs") / "json-schema.json"


class Document(BaseModel):
    """A `--json` document or a part of one: every field typed, nothing unknown accepted.

    Each model's validator is built on its first use (`defer_build`): a command prints one kind of
    document, and building all of them cost `reprise list --json` a third of its time."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class _WithoutNulls(Document):
    """A part whose unset fields are left out of the output instead of printed as null."""

    @model_serializer(mode="wrap")
    def _given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}


def dump(document: BaseModel) -> dict[str, Any]:
    """The JSON data of a document, in its field order (the CLI encodes it)."""
    return document.model_dump(mode="json", by_alias=True)


# --- shared parts -----------------------------------------------------------------------------------

class Problem(Document):
    """Why a file cannot be used (`severity` "error") or should not be rewritten ("warning")."""

    path: str
    code: str
    message: str
    field: str | None
    severity: Literal["error", "warning"]


def problem(item: CoreProblem) -> Problem:
    return Problem(path=item.path, code=item.code, message=item.message, field=item.field,
                   severity=item.severity)  # type: ignore[arg-type]


# --- errors ------------------------------------------------------------------------------------------

class ErrorBody(Document):
    code: str = Field(description="the error's kind: usage, not_found, ambiguous, problem_file, changed_on_disk, "
                                  "locked, archive, agent, config, pending_turn, conflict, over_window, invalid_id, "
                                  "audit, fork_only, error")
    message: str
    path: str | None
    hint: str | None
    candidates: list[str] | None = Field(default=None, description="only when the id is ambiguous")

    @model_serializer(mode="wrap")
    def _candidates_when_ambiguous(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("candidates") is None:
            data.pop("candidates", None)
        return data


class Error(Document):
    """What every command prints with `--json` when it fails (its exit status says how)."""

    error: ErrorBody


def error(exc: RepriseError) -> Error:
    return Error(error=ErrorBody(code=exc.code, message=exc.message, path=exc.path, hint=exc.hint,
                                 candidates=getattr(exc, "candidates", None)))


def usage_error(message: str) -> Error:
    """argparse's own usage errors."""
    return Error(error=ErrorBody(code="usage", message=message, path=None, hint=None))


# --- list -------------------------------------------------------------------------------------------

class RowUsage(Document):
    input_tokens: int
    output_tokens: int
    cost: float = Field(description="USD as the agent recorded it; for Claude Code the API-equivalent sum it "
                        "records (subscription users pay no such sum)")
    cache_read_tokens: int = Field(description="0 where the source records no cache figures (Fractal)")
    cache_creation_tokens: int = Field(description="0 where the source records no cache figures (Fractal)")


class RowProblem(Document):
    code: str
    message: str | None
    field: str | None


class Session(Document):
    """One listing row: a session, or a file that could not be read and why (`problem`)."""

    session_id: str
    workspace_key: str
    workspace_path: str | None = Field(description="null when the folder behind the key is unknown")
    path: str
    title: str | None
    pinned: bool
    turns: int
    first_message: str
    last_message: str
    last_status: str | None
    pending: bool
    last_activity: str | None = Field(description="the newest history `updated_at`, else null")
    activity_source: Literal["history", "mtime"]
    size: int
    context_tokens: int | None = Field(description="the newest recorded context figure; null when none")
    usage: RowUsage
    resume_cost: int | None = Field(description="the next turn's context tokens with an empty draft (the list's "
                                    "NEXT column); null until counted")
    problem: RowProblem | None
    warning: str | None
    source: str = Field(description='the agent whose store holds the session: "fractal", "claude" or "codex"')
    branch: str | None = Field(description="the git branch the session ran on, when the source records it")
    model: str | None = Field(description="the model the session ran on, when the source records it")
    hidden_by_agent: bool = Field(description="true for sessions the agent's own picker does not offer")
    agent_title: str | None = Field(default=None, description="the title the agent's own picker shows "
                                    "(Claude Code's custom or AI title); null for Fractal")
    deleted_by_agent_at: str | None = Field(default=None, description="when the agent's own clean-up deletes the "
                                            "file (Claude Code's cleanupPeriodDays after its last change); null "
                                            "when never, or when Reprise keeps a copy of it as it is")
    kept: bool = Field(default=False, description="Reprise keeps a copy of the file as it is (`reprise keep`), "
                       "out of the agent's clean-up")


class SessionList(Document):
    """`reprise list`."""

    sessions: list[Session]
    shown: int
    total: int
    scope: str
    sort: Literal["updated", "turns", "size", "context", "next", "cost"] = Field(
        description='the sort asked for; "next" sorts by `resume_cost` (the NEXT column), "cost" is its old name')


def session(row: SessionRow) -> Session:
    """A listing row; its listing fields must be loaded (`Service.load_details`)."""
    return Session.model_validate(list_document.session_data(row))


def session_list(listing: Listing) -> SessionList:
    """`reprise list`, validated: the CLI prints `list_document.list_data(listing)` as it is, the same data."""
    return SessionList.model_validate(list_document.list_data(listing))


# --- show -------------------------------------------------------------------------------------------

class HistoryEntry(Document):
    turn_id: str
    status: str
    user_message: str
    files_read: list[str]
    files_modified: list[str]
    commands_run: list[str]
    error: str | None
    created_at: str
    updated_at: str


class DetailUsage(Document):
    """The session's totals: sums, with `context_tokens` the newest recorded figure."""

    input_tokens: int
    output_tokens: int
    cost: float
    duration_ms: int
    iterations: int
    context_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int


class TranscriptUsage(Document):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    cost: float | None
    context_tokens: int | None
    duration_ms: int | None


class FileTouch(Document):
    path: str
    provenance: Literal["observed", "reported"] = Field(
        description="observed: recorded by the agent's host; reported: the model's own claim")


class CommandRun(Document):
    command: str
    provenance: Literal["observed", "reported"]


class ToolCall(Document):
    name: str
    input: str
    result: str | None
    is_error: bool


class TranscriptTurn(Document):
    turn_id: str
    user_message: str
    status: Literal["pending", "succeeded", "failed", "max_iterations", "interrupted"]
    reply: str
    error: str | None
    usage: TranscriptUsage | None
    started_at: str | None
    ended_at: str | None
    tool_calls: list[ToolCall]
    files_read: list[FileTouch]
    files_modified: list[FileTouch]
    commands: list[CommandRun]
    detailed: bool = Field(description="false when the store keeps only the message and the reply of this turn")
    thinking: str = Field(default="", description="the model's own reasoning, where the store keeps it "
                          "(Claude Code's thinking blocks); never part of `reply`")


class Compaction(Document):
    before_turn: int = Field(description="the agent compacted its context before this turn (0-based)")
    at: str | None
    tokens_after: int | None
    tokens_before: int | None = None


class Transcript(Document):
    """The neutral read model of a session, the same for every agent's store."""

    source: str
    session_id: str
    turns: list[TranscriptTurn]
    compactions: list[Compaction]
    notes: list[str]


class SessionLink(Document):
    """A session of another agent this one was continued or imported from (`from`), or into (`in`)."""

    direction: Literal["from", "in"]
    how: Literal["continued", "imported"] = Field(
        description="continued: written by `reprise continue`; imported: the agent's own import (Codex's)")
    agent: str
    session_id: str
    through_turn: int | None


class SessionDetail(Document):
    """`reprise show`."""

    session_id: str
    workspace_key: str
    workspace_path: str | None
    path: str
    title: str | None
    pinned: bool
    size: int
    turns: int
    summary: str | None = Field(description="Fractal's rendered summary; null for other agents' sessions")
    history: list[HistoryEntry] | None = Field(
        description="Fractal's bounded history (its newest 20 turns); null for other agents' sessions")
    usage: DetailUsage
    warnings: list[Problem]
    transcript: Transcript | None = Field(description="every turn in the neutral model")
    links: list[SessionLink] = Field(default_factory=list,
                                     description="the continuations in other agents Reprise recorded, both ways")


def _transcript_usage(usage: Usage | None) -> TranscriptUsage | None:
    if usage is None:
        return None
    return TranscriptUsage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                           cache_read_tokens=usage.cache_read_tokens, cache_creation_tokens=usage.cache_creation_tokens,
                           cost=usage.cost, context_tokens=usage.context_tokens, duration_ms=usage.duration_ms)


def transcript(item: CoreTranscript) -> Transcript:
    return Transcript(source=item.source, session_id=item.session_id, notes=list(item.notes), turns=[
        TranscriptTurn(turn_id=turn.turn_id, user_message=turn.user_message, status=turn.status, reply=turn.reply,
                       error=turn.error, usage=_transcript_usage(turn.usage), started_at=turn.started_at,
                       ended_at=turn.ended_at,
                       tool_calls=[ToolCall(name=call.name, input=call.input, result=call.result,
                                            is_error=call.is_error) for call in turn.tool_calls],
                       files_read=[FileTouch(path=f.path, provenance=f.provenance) for f in turn.files_read],
                       files_modified=[FileTouch(path=f.path, provenance=f.provenance) for f in turn.files_modified],
                       commands=[CommandRun(command=c.command, provenance=c.provenance) for c in turn.commands],
                       detailed=turn.detailed, thinking=turn.thinking)
        for turn in item.turns],
        compactions=[Compaction(before_turn=c.before_turn, at=c.at, tokens_after=c.tokens_after,
                                tokens_before=c.tokens_before) for c in item.compactions])


def session_detail(detail: CoreSessionDetail) -> SessionDetail:
    """`show`: `summary` and `history` are the agent's own (Fractal's); null for sources without them."""
    totals = detail.totals
    history = None if detail.history is None else [HistoryEntry.model_validate(entry) for entry in detail.history]
    return SessionDetail(
        session_id=detail.ref.session_id, workspace_key=detail.ref.workspace_key,
        workspace_path=detail.workspace_path, path=str(detail.path), title=detail.title,
        pinned=detail.meta.pinned, size=detail.size, turns=len(detail.transcript.turns),
        summary=detail.summary_text, history=history,
        usage=DetailUsage(input_tokens=totals.input_tokens, output_tokens=totals.output_tokens,
                          cost=totals.cost or 0.0, duration_ms=totals.duration_ms or 0,
                          iterations=totals.iterations or 0, context_tokens=totals.context_tokens or 0,
                          cache_read_tokens=totals.cache_read_tokens,
                          cache_creation_tokens=totals.cache_creation_tokens),
        warnings=[problem(w) for w in detail.warnings],
        transcript=transcript(detail.transcript),
        links=[SessionLink(direction=link.direction, how=link.how, agent=link.source, session_id=link.session_id,
                           through_turn=link.through_turn) for link in detail.links])


class Summary(Document):
    """`reprise show ID --summary`: exactly Fractal's rendered summary."""

    session_id: str
    summary: str | None


def summary(detail: CoreSessionDetail) -> Summary:
    return Summary(session_id=detail.ref.session_id, summary=detail.summary_text)


# --- new, rename, pin, recover, pick ------------------------------------------------------------------

class SessionPlace(Document):
    """`reprise new` (the session written) and `reprise pick` (the session chosen)."""

    session_id: str
    workspace_key: str
    workspace_path: str | None
    command: list[str] | None = Field(default=None, description="`new` of an agent that writes the session "
                                      "itself (Claude Code): the argv that starts it, run in workspace_path")


def session_place(ref: SessionRef, workspace_path: str | Path | None,
                  command: list[str] | None = None) -> SessionPlace:
    return SessionPlace(session_id=ref.session_id, workspace_key=ref.workspace_key,
                        workspace_path=str(workspace_path) if workspace_path is not None else None, command=command)


class Renamed(Document):
    """`reprise rename`."""

    session_id: str
    title: str | None


class Pinned(Document):
    """`reprise pin` and `reprise unpin`."""

    session_id: str
    pinned: bool


class Recovered(Document):
    """`reprise recover`: the pending turns marked interrupted."""

    session_id: str
    interrupted: list[str]


# --- resume --print ---------------------------------------------------------------------------------

class ResumePlan(Document):
    """`reprise resume ID --print`."""

    session_id: str
    argv: list[str]
    cwd: str
    notes: list[str]
    snapshot: str | None = Field(description="the digest of the archive entry written before the handoff")
    resume_cost: int | None
    window: int | None
    over_window: bool
    being_written: str | None = Field(default=None, description="why the session counts as being written by its "
                                      "agent now (a record minutes old, a live Claude Code); null otherwise")


def resume_plan(plan: CoreResumePlan) -> ResumePlan:
    meter = plan.meter
    return ResumePlan(session_id=plan.ref.session_id, argv=plan.argv, cwd=plan.cwd, notes=plan.notes,
                      snapshot=plan.snapshot.digest if plan.snapshot else None,
                      resume_cost=meter.total if meter else None, window=meter.window if meter else None,
                      over_window=plan.over_window, being_written=plan.writer)


# --- meter ------------------------------------------------------------------------------------------

class MeterPart(Document):
    name: Literal["overhead", "agents_md", "summary", "history", "message", "measured", "fixed", "reply", "since",
                  "client"] = Field(
        description="`measured`: what the agent's newest model call sent, as the provider measured it; `fixed`: the "
                    "system prompt and tool definitions; `history`: the conversation the next turn sends; `reply`: "
                    "the newest reply, which the measured call did not contain; `since`: what came after that call "
                    "(tool results, attachments); `client`: what the agent adds when the turn goes `via` this way; "
                    "`message`: the draft with its framing")
    tokens: int | None
    basis: Literal["configured", "counted", "failed", "measured", "estimated", "calibrated estimate"] = Field(
        description="`counted`: with the model's own tokenizer; `estimated`: with a tokenizer that is not the "
                    "model's, or derived from the agent's figures; `calibrated estimate`: a bundled tokenizer's "
                    "count scaled by the session's `calibration`; `measured`: the provider's figure; "
                    "`configured`: a configured overhead")
    chars: int
    full_chars: int | None
    note: str | None
    error: str | None


class Measured(Document):
    turn: int
    tokens: int
    label: str


class Meter(Document):
    """`reprise meter`: the next turn's context, part by part."""

    session_id: str
    model: str
    model_source: str
    encoding: str
    parts: list[MeterPart]
    total: int
    window: int | None = Field(description="the input budget; null when the model's window is not known")
    window_source: str
    draft: int = Field(description="the total with this message minus the total with an empty composer")
    percent: float | None = Field(description="the total's share of the window; null when the window is unknown")
    state: Literal["ok", "warn", "over", "unknown"]
    exact: bool
    measured: Measured | None
    via: Literal["send", "resume"] = Field(
        description="how the turn is sent: `send`, the agent's non-interactive command (`reprise send`, the "
                    "composer); `resume`, the agent's own terminal UI (Enter, `reprise resume`)")
    compacts_at: int | None = Field(description="the total at which the agent compacts the session on its own; "
                                                "null when not known")
    calibration: float | None = Field(description="the factor applied to the parts whose basis is "
                                                  "`calibrated estimate`: the provider's measured count of a request "
                                                  "the session file holds, over Reprise's own count of it")


def meter_part(part: Part) -> MeterPart:
    return MeterPart(name=part.name, tokens=part.tokens, basis=part.basis, chars=part.chars,  # type: ignore[arg-type]
                     full_chars=part.full_chars, note=part.note, error=part.error)


def meter(ref: SessionRef, result: MeterResult) -> Meter:
    measured = result.measured
    return Meter(session_id=ref.session_id, model=result.model, model_source=result.model_source,
                 encoding=result.encoding, parts=[meter_part(part) for part in result.parts], total=result.total,
                 window=result.window, window_source=result.window_source, draft=result.draft,
                 percent=None if result.percent is None else round(result.percent, 2),
                 state=result.state, exact=result.exact,  # type: ignore[arg-type]
                 measured=Measured(turn=measured.turn, tokens=measured.tokens, label=measured.label)
                 if measured else None, via=result.via,  # type: ignore[arg-type]
                 compacts_at=result.compacts_at,
                 calibration=None if result.calibration is None else round(result.calibration, 4))


# --- send -------------------------------------------------------------------------------------------

class TurnUsage(DetailUsage):
    """One turn's usage as the agent recorded it; fields the agent adds are kept."""

    model_config = ConfigDict(extra="allow")


class Sent(Document):
    """`reprise send`: the turn's outcome."""

    session_id: str
    backend: str
    turn_id: str | None
    status: str
    response: str
    files_read: list[str]
    files_modified: list[str]
    commands_run: list[str]
    error: str | None
    usage: TurnUsage | None
    estimate_before_turn: int | None
    notes: list[str]


def sent(result: SendResult) -> Sent:
    o = result.outcome
    usage = None
    if o.usage is not None:
        recorded = dict(o.usage)
        recorded.setdefault("cache_read_tokens", 0)
        recorded.setdefault("cache_creation_tokens", 0)
        usage = TurnUsage.model_validate(recorded)
    return Sent(session_id=result.ref.session_id, backend=result.backend, turn_id=result.turn_id, status=o.status,
                response=o.response, files_read=o.files_read, files_modified=o.files_modified,
                commands_run=o.commands_run, error=o.error, usage=usage, estimate_before_turn=result.estimate,
                notes=o.notes)


# --- trim and restore -------------------------------------------------------------------------------

class TrimOptions(Document):
    """The options given (only those); `spare` follows the option it goes with."""

    keep_history: int | None = None
    cap_replies: int | None = None
    spare: int | None = Field(default=None, description="with cap_replies or fit")
    fold: int | None = None
    drop: list[str] | None = None
    fit: int | None = None

    @model_serializer(mode="wrap")
    def _given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = {key: value for key, value in handler(self).items() if value is not None}
        if "spare" in data and "cap_replies" not in data:
            data["spare"] = data.pop("spare")  # with --fit
        return data


class TurnChange(_WithoutNulls):
    number: int
    turn_id: str
    change: Literal["capped", "folded", "dropped"]
    chars_cut: int | None = Field(default=None, description="only for a capped turn")


class FitTry(Document):
    plan: str
    estimate: int


class Fit(Document):
    target: int
    chosen: str | None
    fits: bool
    tried: list[FitTry]


class TrimCounts(Document):
    capped: int
    folded: int
    dropped: int
    history_removed: int


class Trim(Document):
    """`reprise trim`: the plan, and what was done with it."""

    session_id: str = Field(description="the session written: the fork's id with --fork")
    options: TrimOptions
    changed: bool
    size_before: int
    size_after: int
    meter_before: int | None
    meter_after: int | None
    archive_digest: str | None
    turns: list[TurnChange]
    history_removed: list[str]
    counts: TrimCounts
    fit: Fit | None
    notes: list[str]
    source_session_id: str
    workspace_key: str
    applied: bool
    dry_run: bool
    forked: bool
    archived: list[str]


def trim_options(options: CoreTrimOptions) -> TrimOptions:
    given_spare = options.cap_replies is not None or options.fit is not None
    return TrimOptions(keep_history=options.keep_history, cap_replies=options.cap_replies,
                          spare=options.spare if given_spare else None, fold=options.fold,
                          drop=list(options.drop) or None, fit=options.fit)


def trim(result: TrimResult) -> Trim:
    plan = result.plan
    fit = plan.fit
    return Trim(
        session_id=result.ref.session_id, options=trim_options(plan.options), changed=plan.changed,
        size_before=plan.size_before, size_after=plan.size_after, meter_before=plan.meter_before,
        meter_after=plan.meter_after, archive_digest=plan.records_digest,
        turns=[TurnChange(number=c.number, turn_id=c.turn_id, change=c.change,  # type: ignore[arg-type]
                          chars_cut=c.chars_cut if c.change == "capped" else None) for c in plan.turns],
        history_removed=plan.history_removed, counts=TrimCounts(**plan.counts()),
        fit=None if fit is None else Fit(
            target=fit.target, chosen=fit.chosen, fits=fit.fits,
            tried=[FitTry(plan=label, estimate=estimate) for label, estimate in fit.tried]),
        notes=plan.notes, source_session_id=result.source.session_id, workspace_key=result.ref.workspace_key,
        applied=result.applied, dry_run=result.dry_run, forked=result.forked, archived=result.archived)


class BriefDocument(Document):
    """A brief of a session for another agent."""

    text: str
    tokens: int = Field(description="its tokens, counted with the target's encoding")
    budget: int
    turns: int = Field(description="the source's turns it covers")
    left_out: list[str] = Field(description="what the budget left out (or that an edited brief is over it)")


class Continued(Document):
    """`reprise continue`: the new session written from another agent's (or, dry, what would be)."""

    session_id: str = Field(description="the new session's id")
    agent: str = Field(description="the agent the new session is of")
    workspace_key: str
    path: str
    turns: int
    notes: list[str]
    source_session_id: str
    source_agent: str
    source_sha256: str = Field(description="the source file's SHA-256 when it was read")
    sha256: str = Field(description="the new file's SHA-256")
    written: bool
    dry_run: bool
    resume_argv: list[str]
    context_tokens: int | None = Field(description="the target's meter of the new session's next turn")
    context_window: int | None
    over_window: bool
    brief: BriefDocument | None = Field(description="with --brief: the brief the new session starts with")


def continued(result: Continuation, *, dry_run: bool) -> Continued:
    written = result.written
    made = result.brief
    brief = None if made is None else BriefDocument(text=made.text, tokens=made.tokens, budget=made.budget,
                                                    turns=made.turns, left_out=made.left_out)
    return Continued(session_id=written.ref.session_id, agent=written.ref.source,
                     workspace_key=written.ref.workspace_key, path=str(written.path), turns=written.turns,
                     notes=written.notes, source_session_id=result.source.session_id,
                     source_agent=result.source.source, source_sha256=result.source_sha256, sha256=written.sha256,
                     written=written.written, dry_run=dry_run, resume_argv=result.resume_argv,
                     context_tokens=result.context_tokens, context_window=result.context_window,
                     over_window=result.over_window, brief=brief)


class RestoreStep(Document):
    digest: str
    op: str
    mode: Literal["exact", "reinserted", "trashed"]   # "trashed": a fork Reprise wrote, moved to the trash
    summary_inserted: int
    summary_replaced: int
    history_inserted: int
    digest_turn_removed: bool


class RestoreCounts(Document):
    entries: int
    summary_inserted: int
    summary_replaced: int
    history_inserted: int


class HistoryBeyondFractal(Document):
    entries: int
    fractal_keeps: int
    dropped_on_next_save: list[str]
    kept_in: str | None
    archive_digest: str | None


class Restore(Document):
    """`reprise restore`."""

    session_id: str
    workspace_key: str
    steps: list[RestoreStep]
    counts: RestoreCounts
    size_before: int
    size_after: int
    applied: bool
    dry_run: bool
    archived: str | None
    notes: list[str]
    history_beyond_fractal: HistoryBeyondFractal | None


def restore(result: RestoreResult) -> Restore:
    beyond = result.beyond_fractal
    return Restore(
        session_id=result.ref.session_id, workspace_key=result.ref.workspace_key,
        steps=[RestoreStep(digest=s.digest, op=s.op, mode=s.mode, summary_inserted=s.summary_inserted,  # type: ignore[arg-type]
                           summary_replaced=s.summary_replaced, history_inserted=s.history_inserted,
                           digest_turn_removed=s.digest_turn_removed) for s in result.steps],
        counts=RestoreCounts(**result.counts()), size_before=result.size_before, size_after=result.size_after,
        applied=result.applied, dry_run=result.dry_run, archived=result.archived, notes=result.notes,
        history_beyond_fractal=None if beyond is None else HistoryBeyondFractal(
            entries=beyond.entries, fractal_keeps=beyond.keeps, dropped_on_next_save=beyond.dropped,
            kept_in=str(beyond.kept_in) if beyond.kept_in else None, archive_digest=beyond.archive_digest))


# --- archive ----------------------------------------------------------------------------------------

class ArchiveEntry(Document):
    """One entry of a session's archive; what else its operation recorded (options, counts, the
    digests of the file before and after) follows the four fields."""

    model_config = ConfigDict(extra="allow")

    digest: str
    op: str
    time: str
    anchors: list[str]


class ArchiveList(Document):
    """`reprise archive list`."""

    session_id: str
    entries: list[ArchiveEntry]


class ArchiveText(Document):
    """`reprise archive show ID DIGEST`: the entry's bytes as text (invalid UTF-8 replaced)."""

    session_id: str
    digest: str
    op: str
    text: str


class ArchiveExport(Document):
    """`reprise archive show ID DIGEST --output FILE`."""

    session_id: str
    digest: str
    op: str
    bytes: int
    output: str


def archive_entry(entry: CoreArchiveEntry) -> ArchiveEntry:
    return ArchiveEntry.model_validate({"digest": entry.digest, "op": entry.op, "time": entry.time,
                                        "anchors": entry.anchors, **entry.info})


def archive_list(ref: SessionRef, entries: Iterable[CoreArchiveEntry]) -> ArchiveList:
    return ArchiveList(session_id=ref.session_id, entries=[archive_entry(entry) for entry in entries])


# --- trash, purge, prune, relink --------------------------------------------------------------------

class TrashEntry(Document):
    """A trashed session (`reprise rm`, `trash restore`, and each of `trash list`)."""

    session_id: str
    workspace_key: str
    trashed_at: str | None
    age_s: int
    size: int
    title: str | None
    from_: str | None = Field(alias="from", description="the path the session was moved from")


class TrashList(Document):
    """`reprise trash list`."""

    trash: list[TrashEntry]


def trash_entry(entry: CoreTrashEntry, now: float | None = None) -> TrashEntry:
    now = time.time() if now is None else now
    return TrashEntry.model_validate({
        "session_id": entry.ref.session_id, "workspace_key": entry.ref.workspace_key, "trashed_at": entry.trashed_at,
        "age_s": round(entry.age(now)), "size": entry.size, "title": entry.title, "from": entry.origin})


def trash_list(entries: Iterable[CoreTrashEntry], now: float | None = None) -> TrashList:
    now = time.time() if now is None else now
    return TrashList(trash=[trash_entry(entry, now) for entry in entries])


class Failure(Document):
    session_id: str
    error: str


class Purge(Document):
    """`reprise trash purge`."""

    purged: list[TrashEntry]
    kept: int
    archives_deleted: list[str]
    finished: list[str] = Field(description="sessions a purge cut short had left, finished now")
    failed: list[Failure]
    leftovers: list[str]
    notes: list[str] = Field(default_factory=list, description="what the purge kept and why (text a fork names)")


def purge(result: PurgeResult, now: float | None = None) -> Purge:
    now = time.time() if now is None else now
    return Purge(purged=[trash_entry(entry, now) for entry in result.purged], kept=len(result.kept),
                 archives_deleted=result.archives_deleted, finished=[ref.session_id for ref in result.finished],
                 failed=[Failure(session_id=entry.ref.session_id, error=why) for entry, why in result.failed],
                 leftovers=result.leftovers, notes=result.notes)


class PruneOptions(Document):
    older_than_s: float | None
    empty: bool
    keep_last: int
    include_undated: bool
    force: bool


class PruneCandidate(Document):
    session_id: str
    workspace_key: str
    reason: str
    turns: int
    size: int
    last_activity: str | None
    pinned: bool


class Prune(Document):
    """`reprise prune`: the selection, and what was moved with --yes."""

    options: PruneOptions
    selected: list[PruneCandidate]
    protected: list[PruneCandidate]
    skipped: list[PruneCandidate]
    applied: bool
    moved: list[str]
    failed: list[Failure]
    keep_instead: list[PruneCandidate] = Field(default_factory=list, description=(
        "sessions not selected that their agent deletes soon by age and Reprise keeps no copy of; "
        "`reprise keep ID` saves one (reason: when the agent deletes it)"))


def prune_options(options: CorePruneOptions) -> PruneOptions:
    return PruneOptions(older_than_s=options.older_than, empty=options.empty, keep_last=options.keep_last,
                           include_undated=options.include_undated, force=options.force)


def _candidate(c: CorePruneCandidate) -> PruneCandidate:
    return PruneCandidate(session_id=c.ref.session_id, workspace_key=c.ref.workspace_key, reason=c.reason,
                             turns=c.turns, size=c.size, last_activity=c.last_activity, pinned=c.pinned)


def prune(result: PruneResult) -> Prune:
    selection = result.selection
    return Prune(options=prune_options(selection.options), selected=[_candidate(c) for c in selection.selected],
                 protected=[_candidate(c) for c in selection.protected],
                 skipped=[_candidate(c) for c in selection.skipped],
                 keep_instead=[_candidate(c) for c in selection.keep_instead], applied=result.applied,
                 moved=[ref.session_id for ref in result.moved],
                 failed=[Failure(session_id=ref.session_id, error=why) for ref, why in result.failed])


class Relink(Document):
    """`reprise relink`."""

    old_key: str
    new_key: str
    new_path: str
    sessions: list[str]
    trashed: list[str]
    archives: list[str]
    left_behind: list[str]


def relink(result: RelinkResult) -> Relink:
    return Relink(old_key=result.old_key, new_key=result.new_key, new_path=result.new_path, sessions=result.sessions,
                  trashed=result.trashed, archives=result.archives, left_behind=result.left_behind)


# --- audit, search, workspaces, config, doctor ------------------------------------------------------

class AuditRecord(Document):
    """One destructive operation; never any message, response or title text."""

    time: str
    op: str
    workspace_key: str
    session_id: str | None
    options: dict[str, JsonValue]
    digests: list[str]
    counts: dict[str, int]
    result: str
    sessions: list[str]


class Audit(Document):
    """`reprise audit`: the records, and the lines that could not be read."""

    audit: list[AuditRecord]
    problems: list[Problem]


def audit(records: Iterable[CoreAuditRecord], problems: Iterable[CoreProblem]) -> Audit:
    return Audit(audit=[AuditRecord(time=r.time, op=r.op, workspace_key=r.workspace_key, session_id=r.session_id,
                                       options=r.options, digests=r.digests, counts=r.counts, result=r.result,
                                       sessions=r.sessions) for r in records],
                 problems=[problem(p) for p in problems])


class SearchHit(Document):
    session_id: str
    workspace_key: str
    turn: int = Field(description="the turn's number, from 1; 0 for a match in Reprise's own title of the session")
    field: Literal["user", "response", "error", "files", "commands", "tool", "thinking", "title"]
    snippet: str = Field(description="the matched words between [ and ]")


class Search(Document):
    """`reprise search`."""

    hits: list[SearchHit]
    outputs_cut: int = Field(description="sessions searched whose tool outputs were cut for the index: words only "
                                         "in the part left out are not found")
    problems: list[Problem] = Field(description="session files that could not be searched")


def snippet(hit: CoreSearchHit) -> str:
    return hit.excerpt.around(SNIPPET_CELLS).marked("[", "]")


def search(hits: Iterable[CoreSearchHit], update: SearchUpdate | None = None) -> Search:
    return Search(hits=[SearchHit(session_id=hit.row.id, workspace_key=hit.row.workspace_key, turn=hit.turn,
                                  field=hit.field, snippet=snippet(hit)) for hit in hits],  # type: ignore[arg-type]
                  outputs_cut=0 if update is None else update.cut,
                  problems=[] if update is None else [problem(p) for p in update.problems])


class Workspace(Document):
    key: str
    path: str | None
    path_source: str
    sessions: int
    last_activity: str | None


class Workspaces(Document):
    """`reprise workspaces`."""

    workspaces: list[Workspace]


def workspaces(infos: Iterable[WorkspaceInfo]) -> Workspaces:
    return Workspaces(workspaces=[Workspace(key=i.key, path=i.path, path_source=i.path_source, sessions=i.sessions,
                                            last_activity=i.last_activity) for i in infos])


class ConfigValue(Document):
    value: JsonValue
    source: str = Field(description="default, the config file, an environment variable or a flag")


class Keep(Document):
    """`reprise keep`: a session copied into Reprise's archive, out of its agent's clean-up."""

    session_id: str
    digest: str = Field(description="the SHA-256 of the newest kept copy of the session file")
    size: int
    added: list[str] = Field(description='the files copied now ("session", "subagents/agent-….jsonl", …)')
    unchanged: list[str] = Field(description="the files whose copy was already kept as they are")
    problems: list[Problem]


def keep(report: KeepReport) -> Keep:
    return Keep(session_id=report.ref.session_id, digest=report.digest, size=report.size, added=report.added,
                unchanged=report.unchanged, problems=[problem(p) for p in report.problems])


class KeepDue(Document):
    """`reprise keep --due DAYS`: every session its agent deletes within DAYS, kept."""

    days: float
    kept: list[Keep] = Field(description="the sessions kept, the soonest to be deleted first")
    size: int = Field(description="the bytes of the session files kept")
    problems: list[Problem] = Field(description="the sessions that could not be kept, each naming its file")


def keep_due(days: float, reports: Iterable[KeepReport], problems: Iterable[CoreProblem]) -> KeepDue:
    kept = [keep(report) for report in reports]
    return KeepDue(days=days, kept=kept, size=sum(item.size for item in kept),
                   problems=[problem(p) for p in problems])


class SourceState(Document):
    name: str
    enabled: bool
    roots: list[str]
    why: str = Field(description="why the source is on or off, and where its roots came from")


class Config(Document):
    """`reprise config`: the effective configuration and where each value came from, and each source."""

    config_file: str
    values: dict[str, ConfigValue]
    sources: list[SourceState] = Field(default_factory=list)


def config(config_file: str | Path, rows: Iterable[tuple[str, object, str]],
           choices: Iterable[SourceChoice] = ()) -> Config:
    return Config(config_file=str(config_file),
                  values={key: ConfigValue(value=value, source=source) for key, value, source in rows},  # type: ignore[arg-type]
                  sources=[SourceState(name=c.name, enabled=c.enabled, roots=[str(r) for r in c.roots], why=c.why)
                           for c in choices])


class DoctorProblem(Problem):
    """A problem `reprise doctor` found, and what a person can do about it."""

    next_step: str


def doctor_problem(item: CoreProblem) -> DoctorProblem:
    return DoctorProblem(**problem(item).model_dump(), next_step=next_step_for(item))


class SearchIndex(Document):
    """The full-text search index in the catalog cache."""

    bytes: int = Field(description="what the index takes on disk (its tokens and its files' kept texts)")
    sessions: int = Field(description="session files it holds")
    cap_bytes: int | None = Field(description="the `[search] max_mb` cap in bytes; null: none")
    enabled: bool = Field(description="`[search] index`: false builds and reads none (every search scans)")


class Doctor(Document):
    """`reprise doctor`."""

    problems: list[DoctorProblem]
    warnings: list[DoctorProblem]
    temp_files: list[str]
    cleaned: list[str]
    notes: list[str]
    ok: bool
    search_index: SearchIndex | None


def doctor(report: DoctorReport) -> Doctor:
    index = report.search_index
    return Doctor(problems=[doctor_problem(p) for p in report.problems],
                  warnings=[doctor_problem(w) for w in report.warnings],
                  temp_files=report.temp_files, cleaned=report.cleaned, notes=report.notes, ok=report.ok,
                  search_index=None if index is None else SearchIndex(bytes=index.size, sessions=index.sessions,
                                                                      cap_bytes=index.cap, enabled=index.enabled))


# --- the schema -------------------------------------------------------------------------------------

# Each command's `--json` document (a failing command prints `Error` instead).
DOCUMENTS: dict[str, type[Document]] = {
    "error": Error, "list": SessionList, "show": SessionDetail, "show --summary": Summary, "new": SessionPlace,
    "resume --print": ResumePlan, "rename": Renamed, "pin": Pinned, "unpin": Pinned, "meter": Meter,
    "send": Sent, "recover": Recovered, "trim": Trim, "restore": Restore, "continue": Continued,
    "archive list": ArchiveList,
    "archive show": ArchiveText, "archive show --output": ArchiveExport, "rm": TrashEntry,
    "trash list": TrashList, "trash restore": TrashEntry, "trash purge": Purge, "prune": Prune,
    "relink": Relink, "audit": Audit, "pick": SessionPlace, "search": Search, "workspaces": Workspaces,
    "config": Config, "doctor": Doctor, "keep": Keep, "keep --due": KeepDue,
}


def by_name(name: str) -> type[Document]:
    """A document model by its schema name (`Session`, `SessionDetail`, `Meter`...)."""
    for model in _models():
        if model.__name__ == name:
            return model
    raise KeyError(name)


def _models() -> list[type[Document]]:
    return list(dict.fromkeys((*DOCUMENTS.values(), Session, Problem)))


def json_schema() -> dict[str, Any]:
    """The JSON Schema of every document: `$defs` by model name, `x-commands` naming each command's."""
    from pydantic.json_schema import models_json_schema

    refs, schema = models_json_schema([(model, "validation") for model in _models()],
                                      ref_template="#/$defs/{model}")
    names = {model: refs[(model, "validation")]["$ref"] for model in _models()}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Reprise --json documents",
        "description": "What `reprise COMMAND --json` prints: one document per command (x-commands), or Error.",
        "anyOf": [{"$ref": ref} for ref in dict.fromkeys(names[model] for model in DOCUMENTS.values())],
        "x-commands": {command: names[model] for command, model in DOCUMENTS.items()},
        "$defs": schema["$defs"],
    }


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """`python -m reprise.core.contract [--check] [PATH]`, run in a checkout: write the schema to PATH
    (default docs/json-schema.json), or with `--check` exit 1 when the file there is not current."""
    args = sys.argv[1:] if argv is None else argv
    paths = [arg for arg in args if arg != "--check"]
    path = Path(paths[0]) if paths else SCHEMA_PATH
    text = schema_text()
    if "--check" in args:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is not current: run python -m reprise.core.contract", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
