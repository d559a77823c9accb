"""What Reprise keeps about a session for people: `rename` (its title), `pin` and `unpin`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..text import safe_line
from .arguments import Command, SessionArguments
from .output import contract, emit

if TYPE_CHECKING:
    from reprise.core.service import Service


@dataclass(frozen=True, slots=True)
class RenameArguments:
    id: str
    title: str


def rename(service: Service, args: RenameArguments, as_json: bool) -> int:
    ref = service.resolve(args.id)
    meta = service.rename(ref, args.title)
    if as_json:
        emit(contract.dump(contract.Renamed(session_id=ref.session_id, title=meta.title)))
    else:
        print(f"Renamed {safe_line(ref.session_id)} to {safe_line(meta.title or '(untitled)')}")
        note = service.source(ref).rename_note
        if note:
            print(note)
    return 0


def _pin(pinned: bool) -> Callable[[Service, SessionArguments, bool], int]:
    def command(service: Service, args: SessionArguments, as_json: bool) -> int:
        ref = service.resolve(args.id)
        service.set_pinned(ref, pinned)
        if as_json:
            emit(contract.dump(contract.Pinned(session_id=ref.session_id, pinned=pinned)))
        else:
            print(f"{'Pinned' if pinned else 'Unpinned'} {safe_line(ref.session_id)}")
        return 0
    return command


COMMANDS: dict[str, Command[Any]] = {
    "rename": Command(RenameArguments, rename),
    "pin": Command(SessionArguments, _pin(True)),
    "unpin": Command(SessionArguments, _pin(False)),
}
