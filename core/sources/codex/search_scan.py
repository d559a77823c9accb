"""How the search's byte scan reads a Codex rollout (`core/sources/byte_scan.py`): a fork Codex made
is always parsed (its texts include its parent's), and the lines no search record comes from are
passed over (its transcript takes the prompt from its event, never from the messages Codex injects).
"""

from __future__ import annotations

from ..byte_scan import LINE_HEAD, ByteScanRule

# A Codex fork's `session_meta` (its first line) names its parent.
INHERITS = b'"forked_from_id":"'
# The lines of a rollout no search record comes from, told by their first bytes: the session's
# metadata with the base instructions, the developer and user messages, the tool list, the turn's
# context. In a rollout of the generated store they hold a common word of the instructions in every file.
_START = b'{"timestamp":"'
_META = b'"type":"session_meta"'
_SKIPPED = (_META, b'"role":"developer"', b'"role":"user"', b'"type":"additional_tools"',
            b'"type":"turn_context"', b'"type":"world_state"')

_FORK = ByteScanRule(always_candidate=True)
_ROLLOUT = ByteScanRule(skipped_line_heads=_SKIPPED, candidate_if_in_first=INHERITS)
_OTHER = ByteScanRule(candidate_if_in_first=INHERITS)   # a head as Codex does not write it: every byte


def byte_scan_rule(first_chunk: bytes) -> ByteScanRule:
    """The rule of a rollout whose first chunk this is: a fork is always a candidate; a rollout that
    starts as Codex writes one (its `session_meta` first) is read without the lines of no record; any
    other file whole, a candidate when its first chunk names a parent."""
    rollout = first_chunk.startswith(_START) and _META in first_chunk[:LINE_HEAD]
    if rollout and INHERITS in first_chunk:
        return _FORK
    return _ROLLOUT if rollout else _OTHER
