"""Claude Code's meter: what the next turn of a session will send, part by part.

What Claude Code 2.1.332 sends on the next turn (measured against the real client, offline, with a
fake API that counts what the model sees): the messages of the newest call whose usage is recorded,
then that call's reply (thinking blocks included: they are sent back), then whatever the
conversation gained after it (tool results, rendered attachments), then the new prompt. So:

- `measured`: the newest real call's input + cache creation + cache read (Claude Code's own figure);
- `reply`: that call's reply, `output_tokens` as measured (it is re-sent as it was produced);
- `since`: what the chain holds after that reply (tool results, prompts, rendered attachments), counted;
- `client`: what the way the turn is sent adds (`via`): the interactive UI (`resume`) sends one more
  tool and a system message announcing it than `-p` (`send`); a `-p` turn after an interactive one
  sends a system message withdrawing it. Learned from the file's own request log where it holds an
  interactive request, else from `CLIENT_ADDS` (per client version, checked by a compat test);
- `message`: the draft.

After a compaction no call has measured the context yet, and the compaction's `postTokens` leaves
out the system prompt and the tools: the next turn is the `fixed` part (system prompt and tool
definitions, as the stretch's first request shape had them), the kept `history` (the summary, the
preserved messages and what came after the boundary, with the attachments a first prompt re-sends),
and the draft.

Claude's tokenizer is not public. What Reprise counts itself is counted with o200k_base and scaled by
the session's calibration factor: the measured usage of a call whose exact request the file's request
log holds (request_log.py), divided by Reprise's own count of that request. The call is the first one
after the newest compaction (or of the session): the smallest request, so calibrating costs the same
for a session of any length. Without such a call the counts are plain o200k estimates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...meter import CALIBRATED, ESTIMATED, MEASURED, RESUME, SEND, Measured, MeterResult, Part, TokenCounter, user_spec
from ..agent_meter import ENCODING, AgentMeter, fixed_prompt
from .chain import ChainTable, main_chain_records
from .messages import BOUNDARY, ERROR, kind_of
from .records import SKIPPED, Record, parse_lines
from .request_log import INTERACTIVE, SDK, LoggedRequest, RequestLog, content_texts, read_log, transcript_messages
from .windows import WINDOWS_SOURCE, claude_window

if TYPE_CHECKING:
    from ...config import MeterSettings

FIXED_CHARS = 49_300      # a resumed turn's fixed request text before any history (Claude Code 2.1.332)
DEFAULT_MODEL = "claude"
CALIBRATION_RANGE = (0.5, 3.0)   # a factor outside it is a request rebuilt wrongly, not a tokenizer


# What sending the turn one way adds over a request measured the other way, in o200k tokens before
# calibration, per client version, measured with the real client: {version: {(via, the measured
# call's query source, whether a compaction came since): {what: tokens}}}. "shape" is the system
# prompt and tools (the interactive UI adds AskUserQuestion; after a compaction it also shortens the
# Agent and Bash descriptions), "message" the system text announcing or withdrawing that tool (after
# a compaction merged into the re-sent system message, so without a message's framing).
CLIENT_ADDS: dict[str, dict[tuple[str, str, bool], dict[str, int]]] = {
    "2.1.332": {
        (RESUME, SDK, False): {"shape": 1_197, "message": 466},
        (RESUME, SDK, True): {"shape": 1_008, "message": 424},
        (SEND, INTERACTIVE, False): {"message": 102},
    },
}
# Rendered attachments the first prompt after a compaction re-sends (written only once it is typed).
FIRST_PROMPT_ATTACHMENTS = ("date", "remote_session_change")
_REMINDER = ("<system-reminder>\n", "\n</system-reminder>")
# The system prompt's first block, sent with every request but left out of the logged shape (2.1.332
# sends "x-anthropic-billing-header: cc_version=2.1.332.297; cc_entrypoint=sdk-cli;"; the build suffix
# varies, the entrypoint is "cli" in the interactive UI).
BILLING_HEADER = "x-anthropic-billing-header: cc_version={version}.000; cc_entrypoint={entrypoint};"


@dataclass(frozen=True, slots=True)
class ContextNow:
    """The measured context of a session and where the figure comes from."""

    tokens: int | None      # None: no reply or compaction recorded yet
    turn: int               # the turn (from 1) whose reply or compaction it was measured at
    source: str             # "reply", "compaction", or "estimate" (a fork Reprise wrote, before its first turn)
    model: str | None


@dataclass(frozen=True, slots=True)
class Calibrate:
    """A call to calibrate against: its `requestRef`, its measured context, where its reply is in the chain.
    The first call after the newest compaction (or of the session) is taken: the smallest request of the
    conversation as it is now, so the calibration never counts more than one request's first turn."""

    request_id: str
    tokens: int
    at: int
    since: int   # where its stretch of the chain starts (after a compaction): the messages it can hold


@dataclass(slots=True)
class MeterInputs:
    """What the meter reads of a session: its main chain, where the newest measured call is in it,
    a compaction newer than that call, and the file's request log."""

    chain: list[Record] = field(default_factory=list)
    measured_at: int | None = None      # the chain index of the measured reply's last record
    usage: dict[str, Any] | None = None
    measured_ref: str | None = None     # the measured call's `requestRef`
    boundary_at: int | None = None      # a compact boundary newer than any measured call
    calibrate: Calibrate | None = None  # the newest call the request log names (before a compaction too)
    log: RequestLog = field(default_factory=RequestLog)
    version: str | None = None


def meter_inputs(data: bytes, records: list[Record], version: str | None,
                 table: ChainTable | None = None) -> MeterInputs:
    """What the meter needs of a session file (`data`, read skimmed into `records`): its main chain,
    the newest measured call (an assistant message with usage, not an API error), a compaction newer
    than it, and the request log. The chain's records after that call or compaction are read again
    whole: the skimmed read leaves large attachments without the text they render. `table`: the
    chain table of these records when the caller has built it already."""
    chain = main_chain_records(records, table)[0]
    inputs = MeterInputs(chain, version=version)
    for at in range(len(chain) - 1, -1, -1):
        record = chain[at]
        kind = kind_of(record)
        if kind == BOUNDARY:
            inputs.boundary_at = at
            break
        if record.get("type") == "assistant" and kind != ERROR and _context(record) > 0:
            inputs.measured_at, inputs.usage = at, record["message"]["usage"]
            ref = record.get("requestRef")
            inputs.measured_ref = ref if isinstance(ref, str) else None
            break
    calls = [at for at, record in enumerate(chain) if record.get("type") == "assistant"
             and isinstance(record.get("requestRef"), str) and _context(record) > 0 and kind_of(record) != ERROR]
    if calls:   # the first call of the newest stretch between compactions that has one: its request is the smallest
        segment = max((at for at in range(calls[-1]) if chain[at].get("subtype") == "compact_boundary"
                       and chain[at].get("type") == "system"), default=-1)
        first = next(at for at in calls if at > segment)
        inputs.calibrate = Calibrate(chain[first]["requestRef"], _context(chain[first]), first, segment + 1)
    start = inputs.boundary_at if inputs.boundary_at is not None else inputs.measured_at
    if start is not None and any(SKIPPED in record for record in chain[start:]):
        _read_whole(data, chain, start)
    inputs.log = read_log(data, [inputs.calibrate.request_id] if inputs.calibrate else [])
    return inputs


def _read_whole(data: bytes, chain: list[Record], start: int) -> None:
    """Replace the skimmed stubs of chain[start:] by their records read whole (from the line of
    chain[start] on)."""
    uuid = chain[start].get("uuid")
    at = data.rfind(f'"uuid":"{uuid}"'.encode()) if isinstance(uuid, str) else -1
    if at == -1:
        return
    line = data.rfind(b"\n", 0, at) + 1
    whole = {record.get("uuid"): record for record in parse_lines(data[line:], line, skim=False).records
             if isinstance(record.get("uuid"), str)}
    for index in range(start, len(chain)):
        if SKIPPED in chain[index]:
            chain[index] = whole.get(chain[index].get("uuid"), chain[index])


class ClaudeMeter(AgentMeter):
    """The meter of one Claude Code session, with everything but the draft known."""

    def __init__(self, settings: MeterSettings, counter: TokenCounter, context: ContextNow,
                 inputs: MeterInputs | None = None, *, model: str | None = None, via: str = SEND):
        # A reply by another agent's model (a session continued from Codex): the next turn runs on Claude's.
        claude = context.model if context.model and "claude" in context.model.lower() else None
        why = "default (no reply recorded yet)" if not context.model or claude else \
            f"default (the newest reply is by {context.model}, another agent's model)"
        super().__init__(settings, counter, model=model, recorded=(claude, "the session's newest reply"),
                         default=(DEFAULT_MODEL, why), via=via)
        self.context = context
        self.inputs = inputs or MeterInputs()
        self._base: tuple[list[Part], float | None] | None = None

    # --- counting ------------------------------------------------------------------------------

    def _count(self, texts: list[str] | tuple[str, ...]) -> int:
        return sum(self.counter.count(text, ENCODING) for text in texts if text)

    def _scaled(self, tokens: int, factor: float | None) -> int:
        return math.ceil(tokens * factor) if factor is not None else tokens

    def _request_texts(self, request: LoggedRequest) -> list[str] | None:
        """Every text of a logged request (its shape and messages), or None when a message cannot be found."""
        if request.shape is None:
            return None
        calibrate = self.inputs.calibrate
        known = transcript_messages(self.inputs.chain[calibrate.since:calibrate.at] if calibrate else []) \
            if any(h not in request.blobs for h in request.hashes) else {}
        texts = [self._billing_header(request.interactive), *request.shape.texts]
        for name in request.hashes:
            if name in request.blobs:
                texts.extend(content_texts(request.blobs[name].get("content")))
            elif name in known:
                texts.extend(content_texts(known[name]))
            else:
                return None
        return texts

    def _billing_header(self, interactive: bool) -> str:
        return BILLING_HEADER.format(version=self.inputs.version or "", entrypoint="cli" if interactive else "sdk-cli")

    def _calibration(self) -> float | None:
        """Measured / Reprise's own count of the newest call whose exact request the log holds."""
        calibrate = self.inputs.calibrate
        request = self.inputs.log.requests.get(calibrate.request_id) if calibrate is not None else None
        if calibrate is None or request is None:
            return None
        texts = self._request_texts(request)
        own = self._count(texts) if texts is not None else 0
        if own <= 0:
            return None
        factor = calibrate.tokens / own
        return factor if CALIBRATION_RANGE[0] <= factor <= CALIBRATION_RANGE[1] else None

    def _basis(self, factor: float | None) -> str:
        return CALIBRATED if factor is not None else ESTIMATED

    def _how(self, factor: float | None) -> str:
        return (f"counted with {ENCODING} x {factor:.4f}, the session's calibration" if factor is not None else
                f"counted with {ENCODING} (no request of this session to calibrate against: Claude's tokenizer "
                "is not public)")

    # --- the parts -----------------------------------------------------------------------------

    def _records_texts(self, records: list[Record]) -> list[str]:
        """What the next request sends of these chain records: messages and rendered attachments."""
        texts: list[str] = []
        for record in records:
            kind = record.get("type")
            if kind in ("user", "assistant") and kind_of(record) != ERROR:
                message = record.get("message")
                if isinstance(message, dict):
                    texts.extend(content_texts(message.get("content")))
            elif kind == "attachment":
                texts.extend(_rendered(record))
        return texts

    def _client(self, factor: float | None) -> Part | None:
        inputs = self.inputs
        newest = inputs.log.newest
        request = newest if newest is not None and newest.id == inputs.measured_ref else None
        compacted = inputs.boundary_at is not None
        calibrate = inputs.calibrate
        ref = calibrate.request_id if compacted and calibrate is not None else inputs.measured_ref
        source = inputs.log.sources.get(ref or "") or SDK
        adds = CLIENT_ADDS.get(inputs.version or "", {}).get((self.via, source, compacted))
        if not adds:
            return None
        tokens = dict(adds)
        how = f"Claude Code {inputs.version}'s table"
        interactive = inputs.log.newest_interactive
        if "shape" in tokens and not compacted and request is not None and request.shape is not None \
                and interactive is not None and interactive.shape is not None:
            tokens["shape"] = max(0, self._count(interactive.shape.texts) - self._count(request.shape.texts))
            how = "this session's own interactive request (its tools) and the client's table (its message)"
        what = ("the interactive UI's extra tool and the system message announcing it" if self.via == RESUME else
                "the system message a -p turn sends after an interactive one")
        return Part("client", self._scaled(sum(tokens.values()), factor), self._basis(factor),
                    note=f"{what}: {how}, {self._how(factor)}")

    def _base_parts(self) -> tuple[list[Part], float | None]:
        """Every part but the draft, and the calibration factor."""
        if self._base is not None:
            return self._base
        inputs, context = self.inputs, self.context
        factor = self._calibration()
        parts: list[Part] = []
        called = inputs.usage is not None and inputs.measured_at is not None and inputs.boundary_at is None
        if context.source == "estimate":
            parts.append(Part("measured", context.tokens, ESTIMATED,
                              note="an estimate: the measured context of the session this fork was trimmed from, "
                                   f"minus what the fork leaves out, counted with {ENCODING}; measured again after "
                                   "its first turn"))
        elif called:
            parts.append(Part("measured", _context_of(inputs.usage), MEASURED,
                              note=f"input + cache creation + cache read of the newest call (turn {context.turn}), "
                                   "as Claude Code recorded it: system prompt, tools and history"))
        else:
            parts.extend(self._fixed_and_history(factor))
        if called and inputs.usage is not None and inputs.measured_at is not None:
            output = inputs.usage.get("output_tokens")
            if isinstance(output, int) and output > 0:
                parts.append(Part("reply", output, MEASURED,
                                  note="the newest reply (its output_tokens, thinking included), which the next "
                                       "request sends back"))
            since = self._records_texts(inputs.chain[inputs.measured_at + 1:])
            if since:
                parts.append(Part("since", self._scaled(self._count(since), factor), self._basis(factor),
                                  sum(map(len, since)), note=f"what came after that reply (tool results, prompts, "
                                                             f"attachments): {self._how(factor)}"))
        client = self._client(factor)
        if client is not None:
            parts.append(client)
        self._base = (parts, factor)
        return self._base

    def _fixed_and_history(self, factor: float | None) -> list[Part]:
        """No call measured since the newest compaction (or none at all): the fixed part, and what the
        chain holds since the compaction (or from its start). The fixed part is the shape of the first
        call of the stretch (the calibration's): a compaction drops the tools an interactive turn added,
        so the first request after it has the stretch's first shape, not the newest one."""
        inputs = self.inputs
        first = inputs.log.requests.get(inputs.calibrate.request_id) if inputs.calibrate is not None else None
        newest = first if first is not None and first.shape is not None else inputs.log.newest
        shape = newest.shape if newest is not None else None
        parts = []
        if shape is not None:
            texts = [self._billing_header(self.via == RESUME), *shape.texts]
            parts.append(Part("fixed", self._scaled(self._count(texts), factor), self._basis(factor),
                              sum(map(len, texts)), note="system prompt and tool definitions of the stretch's first "
                                                         f"request: {self._how(factor)}"))
        else:
            parts.append(fixed_prompt(FIXED_CHARS, "nothing measured yet: Claude Code's fixed prompt (system prompt, "
                                                   "tools, environment), about 49,300 characters, estimated"))
        start = inputs.boundary_at + 1 if inputs.boundary_at is not None else 0
        records = inputs.chain[start:]
        if inputs.boundary_at is not None:
            records = self._preserved() + records + self._first_prompt_attachments(records)
        texts = self._records_texts(records)
        if texts or inputs.boundary_at is not None:
            what = ("the compaction's summary, the messages it kept and what came after it"
                    if inputs.boundary_at is not None else "the conversation so far")
            parts.append(Part("history", self._scaled(self._count(texts), factor), self._basis(factor),
                              sum(map(len, texts)), note=f"{what}: {self._how(factor)}"))
        return parts

    def _preserved(self) -> list[Record]:
        """The records a compaction kept (its `preservedMessages`), in chain order."""
        inputs = self.inputs
        boundary = inputs.chain[inputs.boundary_at] if inputs.boundary_at is not None else {}
        metadata = boundary.get("compactMetadata")
        kept = metadata.get("preservedMessages") if isinstance(metadata, dict) else None
        uuids = set(kept.get("uuids") or []) if isinstance(kept, dict) and isinstance(kept.get("uuids"), list) \
            else set()
        return [record for record in inputs.chain[:inputs.boundary_at] if record.get("uuid") in uuids]

    def _first_prompt_attachments(self, since: list[Record]) -> list[Record]:
        """The attachments the first prompt after a compaction re-sends, not written yet: their newest
        earlier copies."""
        present = {_attachment_type(record) for record in since}
        found: dict[str, Record] = {}
        for record in reversed(self.inputs.chain[:self.inputs.boundary_at]):
            kind = _attachment_type(record)
            if kind in FIRST_PROMPT_ATTACHMENTS and kind not in present and kind not in found:
                found[kind] = record
        return list(found.values())

    # --- the result ----------------------------------------------------------------------------

    def _window(self) -> tuple[int | None, int | None, str]:
        spec = user_spec(self.model, self.settings.models)
        if spec is not None:
            return spec.input_budget, None, f"config [[meter.models]] ({spec.pattern})"
        known = claude_window(self.model)
        if known is None:
            return None, None, f"unknown: {self.model} is not in {WINDOWS_SOURCE}"
        return known[0], known[1], f"{WINDOWS_SOURCE}: {known[2]}"

    def _result(self, message: str) -> MeterResult:
        base, factor = self._base_parts()
        draft = self._scaled(self.counter.count(message, ENCODING), factor) if message else 0
        parts = [*base, Part("message", draft, self._basis(factor), len(message), len(message),
                             note=f"the draft: {self._how(factor)}")]
        measured = Measured(self.context.turn, _context_of(self.inputs.usage)) \
            if self.inputs.usage is not None and self.inputs.boundary_at is None and self.context.source != "estimate" \
            else None
        window, compacts_at, window_source = self._window()
        return self._agent_result(parts, draft=draft, measured=measured, window=window, window_source=window_source,
                                  compacts_at=compacts_at, calibration=factor)


def _context(record: Record) -> int:
    message = record.get("message")
    usage = message.get("usage") if isinstance(message, dict) else None
    return _context_of(usage) if isinstance(usage, dict) else 0


def _context_of(usage: dict[str, Any] | None) -> int:
    if usage is None:
        return 0
    return sum(value for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
               if isinstance(value := usage.get(key), int) and not isinstance(value, bool) and value > 0)


def _attachment_type(record: Record) -> str | None:
    attachment = record.get("attachment")
    kind = attachment.get("type") if isinstance(attachment, dict) and record.get("type") == "attachment" else None
    return kind if isinstance(kind, str) else None


def _rendered(record: Record) -> list[str]:
    """The texts an attachment record puts in the request (its `rendered` items)."""
    rendered = record.get("rendered")
    if not isinstance(rendered, list):
        return []
    texts = [item["content"] for item in rendered if isinstance(item, dict) and isinstance(item.get("content"), str)]
    if record.get("renderedRole") == "system":   # sent in a system message, without the reminder's tags
        texts = [text.removeprefix(_REMINDER[0]).removesuffix(_REMINDER[1]) for text in texts]
    return texts
