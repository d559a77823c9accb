"""Trims and their undoing: `trim` (archived first, or as a fork), `restore` (archived records put
back) and `archive` (a session's archive entries: listed, shown or exported)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reprise.core.errors import RepriseError

from ..format import human_size
from ..text import clipped, one_line, safe_line, safe_text
from .arguments import Command
from .output import contract, emit

if TYPE_CHECKING:
    from reprise.core.service import Service


@dataclass(frozen=True, slots=True)
class TrimArguments:
    id: str
    keep_history: int | None
    cap_replies: int | None
    spare: int
    fold: int | None
    drop: str | None
    fit: int | None
    dry_run: bool
    fork: bool
    force: bool
    model: str | None


@dataclass(frozen=True, slots=True)
class RestoreArguments:
    id: str
    archive: str | None
    all: bool
    dry_run: bool
    force: bool


@dataclass(frozen=True, slots=True)
class ArchiveArguments:
    archive_command: str
    id: str
    digest: str = ""
    output: str | None = None


def trim(service: Service, args: TrimArguments, as_json: bool) -> int:
    from reprise.core.sources.roles import TrimmingInPlace
    from reprise.core.trimming import TrimOptions

    options = TrimOptions(keep_history=args.keep_history, cap_replies=args.cap_replies, spare=args.spare,
                          fold=args.fold, drop=TrimOptions.parse_drop(args.drop) if args.drop else (), fit=args.fit)
    ref = service.resolve(args.id)
    result = service.trim(ref, options, dry_run=args.dry_run, fork=args.fork, force=args.force, model=args.model)
    plan = result.plan
    if as_json:
        emit(contract.dump(contract.trim(result)))
        return 1 if plan.fit is not None and not plan.fit.fits else 0
    if plan.fit is not None:
        if plan.fit.fits:
            print(f"Plan for --fit {plan.fit.target:,}: {plan.fit.chosen}")
        else:
            print(f"No plan on the ladder brings the total to {plan.fit.target:,} tokens; nothing was changed.")
    if not plan.changed:
        for note in plan.notes:
            print(f"note: {safe_line(note)}")
        print("Nothing to trim.")
        return 1 if plan.fit is not None and not plan.fit.fits else 0
    counts = plan.counts()
    print(f"Session {safe_line(ref.session_id)}:")
    print(f"  context {plan.meter_before:,} -> {plan.meter_after:,} tokens" if plan.meter_before is not None else "")
    print(f"  file    {human_size(plan.size_before)} -> {human_size(plan.size_after)}")
    print(f"  turns   {counts['capped']} capped, {counts['folded']} folded, {counts['dropped']} dropped; "
          f"{counts['history_removed']} history entries removed")
    for note in plan.notes:
        print(f"  note: {safe_line(note)}")
    if result.dry_run:
        print("Dry run: nothing was written.")
        if not args.fork and not service.can(ref.source, TrimmingInPlace):
            print(f"{service.source(ref).label}'s own files are never rewritten: the trim is written as a new "
                  f"session (reprise trim {safe_line(ref.session_id[:8])} --fork ...).")
    elif result.forked:
        print(f"Written as a new session {safe_line(result.ref.session_id)}; the original is untouched.")
    else:
        print(f"Trimmed; the removed text is in the archive ({(plan.records_digest or '')[:12]}). "
              f"Undo: reprise restore {safe_line(ref.session_id[:8])}")
    return 0


def restore(service: Service, args: RestoreArguments, as_json: bool) -> int:
    ref = service.resolve(args.id)
    result = service.restore(ref, archive_digest=args.archive, all_trims=args.all, dry_run=args.dry_run,
                             force=args.force)
    if as_json:
        emit(contract.dump(contract.restore(result)))
        return 0
    for step in result.steps:
        print(f"{step.mode:10} {clipped(step.op, 14):14} {clipped(step.digest, 12)}")
    for note in result.notes:
        print(f"note: {safe_line(note)}")
    verb = "Would restore" if result.dry_run else "Restored"
    print(f"{verb} {len(result.steps)} archive entr{'y' if len(result.steps) == 1 else 'ies'}: "
          f"{human_size(result.size_before)} -> {human_size(result.size_after)}")
    return 0


def archive(service: Service, args: ArchiveArguments, as_json: bool) -> int:
    ref = service.resolve(args.id)
    if args.archive_command == "list":
        entries = service.archive_entries(ref)
        if as_json:
            emit(contract.dump(contract.archive_list(ref, entries)))
            return 0
        for entry in entries:
            print(f"{entry.digest[:12]}  {one_line(entry.time, 32):32}  {entry.op}")
        print(f"{len(entries)} archive entries of {ref.session_id}")
        return 0
    entry, data = service.archive_bytes(ref, args.digest)
    if args.output:
        try:
            with open(args.output, "xb") as out:
                out.write(data)
        except OSError as exc:
            raise RepriseError(f"{args.output}: cannot export the archive entry: {exc.strerror or exc}.",
                               path=args.output) from None
        if as_json:
            emit(contract.dump(contract.ArchiveExport(session_id=ref.session_id, digest=entry.digest,
                                                       op=entry.op, bytes=len(data), output=args.output)))
        else:
            print(f"Wrote {human_size(len(data))} ({entry.op} {entry.digest[:12]}) to {args.output}", file=sys.stderr)
        return 0
    if as_json:
        emit(contract.dump(contract.ArchiveText(session_id=ref.session_id, digest=entry.digest, op=entry.op,
                                                 text=data.decode("utf-8", "replace"))))
    elif sys.stdout.isatty():
        sys.stdout.write(safe_text(data.decode("utf-8", "replace")) + "\n")
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
    return 0


COMMANDS: dict[str, Command[Any]] = {
    "trim": Command(TrimArguments, trim),
    "restore": Command(RestoreArguments, restore),
    "archive": Command(ArchiveArguments, archive),
}
