"""The store as a whole: `workspaces`, `relink` (a moved repository), `audit` (destructive operations),
`config` (the effective settings and their sources) and `doctor` (a check of every file)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..reports.audit import audit_lines, audit_problem_lines
from ..text import clipped, safe_line
from .arguments import Command, NoArguments
from .output import contract, emit, print_lines

if TYPE_CHECKING:
    from reprise.core.service import Service


@dataclass(frozen=True, slots=True)
class RelinkArguments:
    old: str
    dir: str
    force: bool


@dataclass(frozen=True, slots=True)
class AuditArguments:
    here: bool


@dataclass(frozen=True, slots=True)
class DoctorArguments:
    clean: bool


def relink(service: Service, args: RelinkArguments, as_json: bool) -> int:
    result = service.relink(args.old, args.dir, force=args.force)
    if as_json:
        emit(contract.dump(contract.relink(result)))
    else:
        print(f"Moved {len(result.sessions)} sessions from {safe_line(result.old_key)} to {safe_line(result.new_key)} "
              f"({safe_line(result.new_path)}).")
    return 0


def audit(service: Service, args: AuditArguments, as_json: bool) -> int:
    records = service.audit_records(all_workspaces=not args.here)
    problems = service.audit_problems()
    if as_json:
        emit(contract.dump(contract.audit(records, problems)))
        return 0
    for problem in audit_problem_lines(problems):
        print(f"reprise: {problem.plain}", file=sys.stderr)
    print_lines(audit_lines(records))
    return 0


def workspaces(service: Service, args: NoArguments, as_json: bool) -> int:
    infos = service.workspaces()
    if as_json:
        emit(contract.dump(contract.workspaces(infos)))
        return 0
    if not infos:
        print(f"No workspaces under {safe_line(service.state_root)}")
    for info in infos:
        where = safe_line(info.path) if info.path else f"(folder unknown: {safe_line(info.key)})"
        print(f"{info.sessions:6} sessions  {clipped(info.last_activity or '-', 32):20}  {where}")
    return 0


def config(service: Service, args: NoArguments, as_json: bool) -> int:
    rows = service.config_report()
    if as_json:
        emit(contract.dump(contract.config(service.loaded.config_path, rows, service.source_choices())))
        return 0
    print(f"Config file: {safe_line(service.loaded.config_path)}")
    for key, value, source in rows:
        print(f"{key} = {json.dumps(value)}    # {source}")
    print("Sources:")
    for choice in service.source_choices():
        roots = ", ".join(safe_line(root) for root in choice.roots)
        print(f"  {choice.name}: {'on' if choice.enabled else 'off'} ({safe_line(choice.why)}); roots: {roots}")
    return 0


def doctor(service: Service, args: DoctorArguments, as_json: bool) -> int:
    report = service.doctor(clean=args.clean)
    if as_json:
        emit(contract.dump(contract.doctor(report)))
        return 0 if report.ok else 1
    from ..reports.doctor import doctor_lines

    print_lines(doctor_lines(report, service.state_root))
    return 0 if report.ok else 1


COMMANDS: dict[str, Command[Any]] = {
    "workspaces": Command(NoArguments, workspaces),
    "relink": Command(RelinkArguments, relink),
    "audit": Command(AuditArguments, audit),
    "config": Command(NoArguments, config),
    "doctor": Command(DoctorArguments, doctor),
}
