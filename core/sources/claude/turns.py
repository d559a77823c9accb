"""Claude Code's turns run by Reprise: `[sources.claude] send` run by the client runner
(`client_runs.py`: the message on stdin, in the turn's folder), its `--output-format json` result
read into an outcome (the reply, the usage, the session it wrote, an error, the tool calls Claude
Code denied), and the `new` command.

Claude Code saves the turn in its own file; Reprise only reads it back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ...agents import substitute
from ...outcome import TurnOutcome
from ...processes import Finished
from .. import agent_json
from ..client_runs import ClientSendBackend, client_env, stderr_tail

INPUT_PREVIEW = 200


@dataclass(slots=True)
class ClaudeResult:
    """What `claude -p --output-format json` printed about its turn."""

    text: str
    is_error: bool
    session_id: str | None
    usage: dict[str, Any] | None
    denials: list[str] = field(default_factory=list)
    subtype: str | None = None


def parse_result(stdout: str) -> ClaudeResult | None:
    """The last JSON object of type `result` on stdout (Claude Code prints one); None without it."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = agent_json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and value.get("type", "result") == "result":
            return _result_of(value)
    return None


def _result_of(value: dict[str, Any]) -> ClaudeResult:
    text = value.get("result")
    session_id = value.get("session_id")
    subtype = value.get("subtype")
    denials = value.get("permission_denials")
    return ClaudeResult(text if isinstance(text, str) else "", value.get("is_error") is True,
                        session_id if isinstance(session_id, str) else None, turn_usage(value),
                        [denial_line(d) for d in denials] if isinstance(denials, list) else [],
                        subtype if isinstance(subtype, str) else None)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def turn_usage(value: Mapping[str, Any]) -> dict[str, Any] | None:
    """The turn's usage in Reprise's names: input, output and cache tokens summed over the turn's
    model calls, its cost (API-equivalent), duration and model calls. `context_tokens` is filled in
    from the session file after the turn (the newest reply's figure, measured)."""
    usage = value.get("usage")
    if not isinstance(usage, dict):
        return None
    cost = value.get("total_cost_usd")
    return {"input_tokens": _count(usage.get("input_tokens")), "output_tokens": _count(usage.get("output_tokens")),
            "cache_read_tokens": _count(usage.get("cache_read_input_tokens")),
            "cache_creation_tokens": _count(usage.get("cache_creation_input_tokens")),
            "cost": float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0,
            "duration_ms": _count(value.get("duration_ms")), "iterations": _count(value.get("num_turns")),
            "context_tokens": 0}


def denial_line(denial: object) -> str:
    """One tool call Claude Code denied, as a line of the reply."""
    if not isinstance(denial, dict):
        return "Claude Code denied a tool call."
    tool = denial.get("tool_name")
    name = tool if isinstance(tool, str) and tool else "a tool"
    tool_input = denial.get("tool_input")
    shown = ""
    if isinstance(tool_input, dict) and tool_input:
        text = json.dumps(tool_input, ensure_ascii=False, separators=(",", ":"))
        shown = ": " + (text if len(text) <= INPUT_PREVIEW else text[:INPUT_PREVIEW] + "…")
    return f"Claude Code denied {name}{shown}"


def denials_text(denials: list[str]) -> str:
    if not denials:
        return ""
    lines = "\n".join(f"- {line}" for line in denials)
    return (f"\n\n[reprise: {len(denials)} tool call(s) denied by Claude Code's permissions (allow them with "
            f"--allowedTools in [sources.claude] send):\n{lines}]")


def read_output(finished: Finished, session_id: str, notes: list[str]) -> TurnOutcome:
    """The outcome of one `claude -p` run from the JSON result it printed (a run stopped, or over the
    cap, is `client_runs.unread_outcome`'s, and its reply is then filled from the file)."""
    result = parse_result(finished.stdout.text())
    if result is None:
        return TurnOutcome("failed", finished.stdout.text().strip(), notes=notes,
                           error=f"Exit status {finished.status}; Claude Code printed no JSON result. "
                                 f"{stderr_tail(finished.stderr)}".strip())
    if result.session_id is not None and result.session_id != session_id:
        notes.append(f"Claude Code recorded this turn in session {result.session_id}, not {session_id}.")
    failed = result.is_error or finished.status != 0
    response = "" if failed else result.text
    error = None
    if failed:
        why = result.text or result.subtype or stderr_tail(finished.stderr)
        error = f"Exit status {finished.status}. {why}".strip() if finished.status != 0 else why or "It failed."
    return TurnOutcome("failed" if failed else "succeeded", response + denials_text(result.denials), error=error,
                       usage=result.usage, notes=notes)


class ClaudeSendBackend(ClientSendBackend):
    """`[sources.claude] send`: Claude Code runs the turn and saves it in the session's file
    (CLAUDE_CONFIG_DIR names its root when that is not ~/.claude)."""

    def __init__(self, template: list[str], root: Path):
        super().__init__("claude", "Claude Code", template, partial(client_env, root, "CLAUDE_CONFIG_DIR", ".claude"),
                         read_output)


def new_argv(template: list[str], session_id: str, workspace: Path) -> list[str]:
    """`[sources.claude] new` for a session id Reprise chose."""
    return substitute(template, session_id=session_id, workspace=str(workspace))
