"""Sessions out of the way and kept from harm: `rm` and `trash` (list, restore, purge), `prune` (old or
empty sessions to the trash) and `keep` (a copy out of reach of the agent's own clean-up)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reprise.core.errors import UsageError
from reprise.core.sources.registry import short_id

from ..format import human_size
from ..text import clipped, safe_line
from .arguments import Command
from .output import contract, emit

if TYPE_CHECKING:
    from reprise.core.service import Service


@dataclass(frozen=True, slots=True)
class RemoveArguments:
    id: str
    force: bool


@dataclass(frozen=True, slots=True)
class TrashArguments:
    trash_command: str | None   # None: `reprise trash` alone lists this workspace's
    id: str = ""
    all: bool = False
    older_than: str | None = None
    yes: bool = False


@dataclass(frozen=True, slots=True)
class PruneArguments:
    older_than: str | None
    empty: bool
    keep_last: int
    include_undated: bool
    all: bool
    force: bool
    yes: bool


@dataclass(frozen=True, slots=True)
class KeepArguments:
    id: str | None
    due: float | None


def remove(service: Service, args: RemoveArguments, as_json: bool) -> int:
    ref = service.resolve(args.id)
    entry = service.remove(ref, force=args.force)
    if as_json:
        emit(contract.dump(contract.trash_entry(entry)))
    else:
        print(f"Moved {safe_line(ref.session_id)} to the trash "
              f"(reprise trash restore {safe_line(short_id(ref.source, ref.session_id).strip('…'))} puts it back).")
        note = service.source(ref).trash_note
        if note:
            print(f"reprise: {note}.", file=sys.stderr)
    return 0


def trash(service: Service, args: TrashArguments, as_json: bool) -> int:
    from reprise.core.retention import format_age, parse_age

    if args.trash_command in (None, "list"):
        entries = service.trash_entries(all_workspaces=args.all)
        now = time.time()
        if as_json:
            emit(contract.dump(contract.trash_list(entries, now)))
            return 0
        for entry in entries:
            print(f"{clipped(entry.ref.session_id, 9):9}  {format_age(entry.age(now)):>8} ago  "
                  f"{human_size(entry.size):>8}  {clipped(entry.title or '(untitled)', 50)}")
        print(f"{len(entries)} in the trash")
        return 0
    if args.trash_command == "restore":
        entry = service.trash_restore(service.resolve_trashed(args.id))
        if as_json:
            emit(contract.dump(contract.trash_entry(entry)))
        else:
            print(f"Restored {safe_line(entry.ref.session_id)} from the trash.")
        return 0
    older = parse_age(args.older_than) if args.older_than else None
    confirmed = args.yes
    if not confirmed:
        entries = [e for e in service.trash_entries(all_workspaces=args.all)
                   if older is None or e.age(time.time()) > older]
        if not entries:
            print("Nothing to purge.")
            return 0
        if not sys.stdin.isatty():
            raise UsageError(f"Purging deletes {len(entries)} trashed sessions for good.", hint="confirm with --yes")
        answer = input(f"Delete {len(entries)} trashed sessions and their archives for good? [y/N] ")
        confirmed = answer.strip().lower() in ("y", "yes")
        if not confirmed:
            print("Nothing was deleted.")
            return 1
    result = service.purge(all_workspaces=args.all, older_than=older, confirmed=confirmed)
    if as_json:
        emit(contract.dump(contract.purge(result)))
    else:
        print(f"Purged {len(result.purged)} trashed sessions; kept {len(result.kept)}.")
        for note in result.notes:
            print(f"reprise: {safe_line(note)}.", file=sys.stderr)
    return 0


def prune(service: Service, args: PruneArguments, as_json: bool) -> int:
    from reprise.core.retention import PruneOptions, parse_age

    options = PruneOptions(older_than=parse_age(args.older_than) if args.older_than else None, empty=args.empty,
                           keep_last=args.keep_last, include_undated=args.include_undated, force=args.force)
    result = service.prune(options, all_workspaces=args.all, confirmed=args.yes)
    if as_json:
        emit(contract.dump(contract.prune(result)))
        return 0
    selection = result.selection
    for candidate in selection.selected:
        moved = "moved " if candidate.ref in result.moved else "select"
        print(f"{moved} {clipped(candidate.ref.session_id, 9):9}  {safe_line(candidate.reason)}")
    for candidate in selection.protected:
        print(f"keep   {clipped(candidate.ref.session_id, 9):9}  {safe_line(candidate.reason)}")
    for candidate in selection.skipped:
        print(f"skip   {clipped(candidate.ref.session_id, 9):9}  {safe_line(candidate.reason)}")
    for ref, error in result.failed:
        print(f"failed {clipped(ref.session_id, 9):9}  {safe_line(error)}")
    for candidate in selection.keep_instead:
        print(f"save?  {clipped(candidate.ref.session_id, 9):9}  {safe_line(candidate.reason)}; "
              "reprise keep ID copies it out of its agent's reach")
    if result.applied:
        print(f"Moved {len(result.moved)} sessions to the trash.")
    else:
        print(f"{len(selection.selected)} sessions would move to the trash; run again with --yes to do it.")
    return 0


def keep(service: Service, args: KeepArguments, as_json: bool) -> int:
    if args.due is not None:
        return _keep_due(service, args.due, as_json)
    report = service.keep(service.resolve(args.id or ""))
    if as_json:
        emit(contract.dump(contract.keep(report)))
        return 0
    added = ", ".join(report.added) or "nothing new"
    print(f"Kept {safe_line(report.ref.session_id)}: {human_size(report.size)}, copy {report.digest[:12]} "
          f"in Reprise's archive (added: {safe_line(added)}); "
          f"{service.sources[report.ref.source].label}'s clean-up cannot reach it.")
    for problem in report.problems:
        print(f"Warning: {safe_line(problem.path)}: {safe_line(problem.message)}")
    return 0


def _keep_due(service: Service, days: float, as_json: bool) -> int:
    """Every session due for its agent's clean-up within `days`, counted and sized first, then kept;
    exit 1 when one could not be kept."""
    due = service.due(days)
    within = f"{days:g} day{'' if days == 1 else 's'}"
    if not as_json:
        agents = " and ".join(sorted({service.sources[row.source].label for row in due})) or "their agent"
        print(f"{len(due):,} session{'' if len(due) == 1 else 's'} ({human_size(sum(row.size for row in due))}) "
              f"deleted by {agents} within {within}" + (": keeping them." if due else "."))
    reports, problems = service.keep_due(due)
    if as_json:
        emit(contract.dump(contract.keep_due(days, reports, problems)))
        return 1 if problems else 0
    for report in reports:
        added = ", ".join(report.added) or "nothing new"
        print(f"  kept {safe_line(report.ref.session_id)}: {human_size(report.size)} (added: {safe_line(added)})")
        for problem in report.problems:
            print(f"  warning: {safe_line(problem.path)}: {safe_line(problem.message)}")
    for problem in problems:
        print(f"  not kept: {safe_line(problem.path)}: {safe_line(problem.message)}")
    if due:
        print(f"Kept {len(reports):,} of {len(due):,}; their agent's clean-up cannot reach the copies.")
    return 1 if problems else 0


COMMANDS: dict[str, Command[Any]] = {
    "rm": Command(RemoveArguments, remove),
    "trash": Command(TrashArguments, trash),
    "prune": Command(PruneArguments, prune),
    "keep": Command(KeepArguments, keep),
}
