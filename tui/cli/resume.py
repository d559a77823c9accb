"""Choosing a session to hand to its agent: `resume` (by id, --last or the picker), `new` and `pick`."""

from __future__ import annotations

import shlex
import shutil
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from reprise.core.errors import AgentError, RepriseError, UsageError

from . import agent_handoff, tui_runs
from .arguments import Command
from .output import contract, emit, note

if TYPE_CHECKING:
    from reprise.core.service import Service


@dataclass(frozen=True, slots=True)
class ResumeArguments:
    id: str | None
    last: bool
    print: bool
    yes: bool


@dataclass(frozen=True, slots=True)
class NewArguments:
    title: str | None
    new_agent: str | None
    print: bool


@dataclass(frozen=True, slots=True)
class PickArguments:
    args: bool
    whole_command: bool


def resume(service: Service, args: ResumeArguments, as_json: bool) -> int:
    """Resume the session named by an id or --last; with neither, the one chosen in the picker."""
    if args.last and args.id:
        raise UsageError("Give a session id or --last, not both.")
    skipped: list[str] = []
    if args.last:
        last = service.last_session()
        ref, skipped = last.ref, [last.note] if last.note else []
    elif args.id:
        ref = service.resolve(args.id)
    else:
        if as_json:
            raise UsageError("Which session? Give an id (or a prefix) or --last.")
        picked = tui_runs.pick(service, "resume")
        if picked is None:
            return 1
        ref = picked.ref
    plan = service.resume_plan(ref, for_exec=not args.print)
    plan = replace(plan, notes=[*skipped, *plan.notes])
    if plan.program_missing is not None:
        raise plan.program_missing
    notes = [*service.take_notices(), *plan.notes]   # said before the agent replaces this process
    worries = [(refusal, hint) for worry, refusal, hint in (
        (plan.over_window, f"Session {ref.session_id} is over the model's context window.",
         "pass --yes to resume anyway, or trim it first"),
        (plan.writer is not None, f"Session {ref.session_id} may be being written by its agent now "
                                  f"({plan.writer}).", "pass --yes to resume it anyway"),
    ) if worry and not args.yes and not args.print]
    if args.print or worries:
        for each in notes:   # above the question, which gives the time to read them
            note(each)
    for refusal, hint in worries:
        if not sys.stdin.isatty():
            raise RepriseError(refusal, hint=hint)
        note(refusal)
        answer = input("Resume anyway? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("Not resumed.", file=sys.stderr)
            return 1
    if args.print:
        if as_json:
            emit(contract.dump(contract.resume_plan(plan)))
        else:
            print(shlex.join(plan.argv))
        return 0
    if not agent_handoff.read_before_start([] if worries else notes, plan.argv[0]):
        return 1
    agent_handoff.exec_handoff(plan.argv, plan.cwd)
    return 0


def new(service: Service, args: NewArguments, as_json: bool) -> int:
    ref = service.new_session(args.title, source=service.new_agent(args.new_agent))
    argv = service.new_argv(ref)
    if argv is not None and not (args.print or as_json):
        if shutil.which(argv[0]) is None:
            raise AgentError(f"The agent program {argv[0]!r} was not found on PATH.",
                             hint=f"install it, or set [sources.{ref.source}] new in the config file")
        print(f"reprise: new session {ref.session_id}", file=sys.stderr)
        agent_handoff.exec_handoff(argv, str(service.workspace))
        return 0
    if as_json:
        emit(contract.dump(contract.session_place(ref, service.workspace, argv)))
    elif argv is not None:
        print(shlex.join(argv))
    else:
        print(ref.session_id)
    return 0


def pick(service: Service, args: PickArguments, as_json: bool) -> int:
    result = tui_runs.pick(service, "pick")
    if result is None:
        return 1
    if args.args or args.whole_command:
        plan = service.resume_plan(result.ref, for_exec=False)
        if args.args:
            print(shlex.join(plan.argv[1:]))
        else:
            print(plan.command_line)
    elif as_json:
        emit(contract.dump(contract.session_place(result.ref, result.workspace)))
    else:
        print(result.ref.session_id)
    return 0


COMMANDS: dict[str, Command[Any]] = {
    "resume": Command(ResumeArguments, resume),
    "new": Command(NewArguments, new),
    "pick": Command(PickArguments, pick),
}
