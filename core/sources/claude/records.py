"""Claude Code's session file as records: complete JSON lines read tolerantly from a chunk of bytes
(`jsonl_lines.parse_lines`: a truncated last line left for the next read, a line that is not a JSON
object with a `type` skipped with a warning naming it, unknown types kept), and Claude Code's skims:
with `skim` (the default) the large lines the readers need nothing from are not parsed. The request
log (`api-request*`: the request snapshots that make even a one-turn file 140 KB) becomes a stub
naming its type, and a large `attachment` a stub with only its chain fields (uuid, parent,
sidechain, timestamp), read from the line's compact form; a line whose form does not match is
parsed whole. The listing's read (`skim_results`) stubs the request log at any size and decodes
every other line for the fields the listing reads only (`listing_records`: an attachment's body is
skipped there as fast as a stub's pattern runs); a line that decode does not take is decoded whole
with orjson (`exact`, `agent_json.loads_line`).
"""

from __future__ import annotations

import re

from .. import jsonl_lines
from ..agent_json import Exact
from ..jsonl_lines import Parsed, Record

__all__ = ["SKIM_OVER", "SKIPPED", "Parsed", "Record", "parse_lines"]

SKIPPED = "reprise_skipped_bytes"   # a skimmed record's marker: the size of the line it stands for
SKIM_OVER = 2048                    # lines this long or longer are skimmed when their type allows

_REQUEST_LOG = b'{"type":"api-request'
_TYPE_AT_START = re.compile(rb'\{"type":"([A-Za-z0-9_-]{1,64})"')
_ATTACHMENT_HEAD = re.compile(
    rb'\{"parentUuid":(?:null|"([0-9A-Za-z-]{1,64})"),"isSidechain":(true|false),"attachment":\{"type":"([A-Za-z0-9_-]{1,64})"')
# The head's key lies within its first bytes (a uuid is at most 64 characters): a line without it there
# is no attachment, told without running the pattern (most lines are not).
_ATTACHMENT_KEY = b',"attachment":{"type":"'
_ATTACHMENT_KEY_BY = len(b'{"parentUuid":"",') + 64 + len(b'"isSidechain":false') + len(_ATTACHMENT_KEY)
_ATTACHMENT_TAIL = re.compile(rb',"type":"attachment","uuid":"([0-9A-Za-z-]{1,64})","timestamp":"([0-9T:.Z+-]{1,40})"')
_TIMESTAMP = re.compile(rb'"timestamp":"([0-9T:.Z+-]{1,40})"')
_TAIL_MARK = b',"type":"attachment","uuid":"'


def parse_lines(chunk: bytes, base_offset: int, *, first_line: int = 1, skim: bool = True,
                skim_results: bool = False, exact: Exact | None = None) -> Parsed:
    """The records of the complete lines of `chunk`, which starts at `base_offset` in the file and
    whose first line is line `first_line`. Never raises for the bytes. `skim_results` (the listing's
    read: it needs the chain and the usage, not the messages' content) decodes only what the listing
    reads.
    `exact` (a listing's read): decode with orjson where it tells that orjson's record is json's for
    what the reader uses (`agent_json.loads_line`)."""
    if not skim:
        return jsonl_lines.parse_lines(chunk, base_offset, first_line=first_line, exact=exact)
    if skim_results:
        from .listing_records import listing_record  # msgspec: imported by a read, not by a warm listing

        return jsonl_lines.parse_lines(chunk, base_offset, first_line=first_line, exact=exact,
                                       skimmer=_request_log, decode=listing_record)
    return jsonl_lines.parse_lines(chunk, base_offset, first_line=first_line, exact=exact, skimmer=_skimmed,
                                   skim_over=SKIM_OVER)


def _skimmed(chunk: bytes, start: int, end: int) -> Record | None:
    """A stub for a large line (chunk[start:end]) whose content no reader needs, or None to parse it whole."""
    stub = _request_log(chunk, start, end)
    if stub is not None:
        return stub
    return _attachment(chunk, start, end)


def _request_log(chunk: bytes, start: int, end: int) -> Record | None:
    """A request log's stub (its type and timestamp), or None for any other line."""
    if not chunk.startswith(_REQUEST_LOG, start, end):
        return None
    match = _TYPE_AT_START.match(chunk, start, end)
    if match is None:
        return None
    stub: Record = {"type": match.group(1).decode()}
    nested = chunk.find(b"{", start + 1, end)   # the timestamp is among the top-level fields before any nested one
    stamp = _TIMESTAMP.search(chunk, start, nested if nested > 0 else end)
    if stamp is not None:
        stub["timestamp"] = stamp.group(1).decode()
    stub[SKIPPED] = end - start
    return stub


def _attachment(chunk: bytes, start: int, end: int) -> Record | None:
    """A large attachment's stub (its chain fields), or None for any other line."""
    if chunk.find(_ATTACHMENT_KEY, start, min(end, start + _ATTACHMENT_KEY_BY)) == -1:
        return None
    head = _ATTACHMENT_HEAD.match(chunk, start, end)
    if head is None:
        return None
    at = chunk.rfind(_TAIL_MARK, start, end)
    tail = _ATTACHMENT_TAIL.match(chunk, at, end) if at > start else None
    if tail is None:
        return None
    parent = head.group(1)
    return {
        "type": "attachment",
        "parentUuid": parent.decode() if parent is not None else None,
        "isSidechain": head.group(2) == b"true",
        "attachment": {"type": head.group(3).decode()},
        "uuid": tail.group(1).decode(),
        "timestamp": tail.group(2).decode(),
        SKIPPED: end - start,
    }
