"""`continue`: a session continued in another agent, its history written as a new session of that
agent (the source never changed), with the command that resumes it and the target's meter of it."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reprise.core.errors import UsageError

from ..text import safe_line
from .arguments import Command
from .output import contract, emit

if TYPE_CHECKING:
    from reprise.core.service import Service


@dataclass(frozen=True, slots=True)
class ContinueArguments:
    id: str
    target: str
    dry_run: bool
    brief: bool
    budget: int | None
    brief_file: str | None
    print: bool
    fresh: bool


def _brief_text(path: str | None) -> str | None:
    """The brief in `path` (- for stdin); None without one."""
    if path is None:
        return None
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as given:
            return given.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the brief: {getattr(exc, 'strerror', None) or exc}.",
                         path=path) from None


def continue_session(service: Service, args: ContinueArguments, as_json: bool) -> int:
    ref = service.resolve(args.id)
    text = _brief_text(args.brief_file)
    brief = args.brief or args.print or text is not None or args.budget is not None
    result = service.continue_in(ref, args.target, dry_run=args.dry_run or args.print, brief=brief,
                                 budget=args.budget, brief_text=text, fresh=args.fresh)
    if as_json:
        emit(contract.dump(contract.continued(result, dry_run=args.dry_run or args.print)))
        return 0
    if args.print and result.brief is not None:
        sys.stdout.write(result.brief.text)
        return 0
    written = result.written
    turns = f"{written.turns} turn{'s' if written.turns != 1 else ''}"
    what = f"{result.source_label} session {safe_line(ref.session_id)} ({turns})"
    if not written.written:
        print(f"Would write {what} as a new {result.target_label} session {safe_line(written.ref.session_id)}: "
              f"{safe_line(str(written.path))} ({len(written.data):,} bytes)")
    else:
        print(f"Continued {what} in {result.target_label} as {safe_line(written.ref.session_id)}")
        print(f"  file: {safe_line(str(written.path))}")
        if result.resume_argv:
            print(f"  resume it: {safe_line(shlex.join(result.resume_argv))}")
    if result.brief is not None:
        made = result.brief
        turns = f"{made.turns} turn{'s' if made.turns != 1 else ''}"
        print(f"  brief: {made.tokens:,} of {made.budget:,} tokens, {turns} covered"
              + (f"; left out: {safe_line('; '.join(made.left_out))}" if made.left_out else ""))
    for line in written.notes:
        print(f"  note: {safe_line(line)}")
    if result.context_tokens is not None:
        window = f" of {result.context_window:,}" if result.context_window is not None else ""
        print(f"  next turn: {result.context_tokens:,} tokens{window} ({result.target_label}'s meter)")
        if result.over_window:
            print(f"  it does not fit {result.target_label}'s window: trim it "
                  f"(reprise trim {safe_line(written.ref.session_id)} --fork --fit {result.context_window}), "
                  f"or undo it (reprise restore {safe_line(written.ref.session_id)}) and continue with a brief "
                  f"(reprise continue {safe_line(ref.session_id)} --to {safe_line(args.target)} --brief --fresh)")
    elif result.meter_note:
        print(f"  {safe_line(result.meter_note)}")
    if written.written:
        print(f"  undo: reprise restore {safe_line(written.ref.session_id)} (moves it to Reprise's trash)")
    return 0


COMMANDS: dict[str, Command[Any]] = {"continue": Command(ContinueArguments, continue_session)}
