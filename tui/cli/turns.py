"""Turns: `send` (one turn with an agent backend, signals heard while it runs), `meter` (the next
turn's context) and `recover` (pending turns whose agent is gone)."""

from __future__ import annotations

import contextlib
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reprise.core.errors import UsageError

from ..format import counted
from ..text import safe_text
from .arguments import Command, SessionArguments
from .output import contract, emit, is_terminal, print_lines

if TYPE_CHECKING:
    from reprise.core.paths import SessionRef
    from reprise.core.processes import TurnSignals
    from reprise.core.sending import SendResult
    from reprise.core.service import Service


@dataclass(frozen=True, slots=True)
class SendArguments:
    id: str
    message: str | None
    message_file: str | None
    agent: str | None
    yes: bool


@dataclass(frozen=True, slots=True)
class MeterArguments:
    id: str
    message: str | None
    message_file: str | None
    model: str | None
    via: str


def _message(args: SendArguments | MeterArguments) -> str:
    if args.message_file == "-":
        return sys.stdin.read()
    if args.message_file:
        try:
            return Path(args.message_file).read_text(encoding="utf-8", errors="surrogateescape")
        except OSError as exc:
            raise UsageError(f"{args.message_file}: cannot read the message file: {exc.strerror or exc}.",
                             path=args.message_file) from None
    return args.message or ""


def send(service: Service, args: SendArguments, as_json: bool) -> int:
    """The turn runs in a thread; this thread only waits on a queue, so SIGINT, SIGTERM and
    SIGHUP reach their handlers at once (an interrupted `Thread.join` would return early)."""
    import queue
    import threading

    from reprise.core.processes import TurnSignals

    message = _message(args)
    ref = service.resolve(args.id)
    cancel = threading.Event()
    done: queue.Queue[tuple[SendResult | None, BaseException | None]] = queue.Queue()

    def run() -> None:
        try:
            done.put((service.send_turn(ref, message, agent=args.agent, confirm_over=args.yes, cancel=cancel), None))
        except BaseException as exc:  # handed to this thread, which raises it
            done.put((None, exc))

    with TurnSignals(cancel) as signals:
        threading.Thread(target=run, name="reprise-turn", daemon=True).start()
        while True:
            try:
                result, error = done.get(timeout=0.5)
                break
            except queue.Empty:
                continue
    if signals.received is not None:
        return _after_signal(service, ref, signals, result, error, as_json)
    if error is not None:
        raise error
    assert result is not None
    if as_json:
        emit(contract.dump(contract.sent(result)))
    else:
        o = result.outcome
        print(f"[{o.status}] turn {result.turn_id or '?'} via {result.backend}")
        if o.response:
            print(safe_text(o.response))
        if o.error:
            print(f"Error: {safe_text(o.error)}", file=sys.stderr)
        for note in o.notes:
            if note not in o.response:  # Fractal writes its own reply: Reprise's notes are not in it
                print(f"reprise: {safe_text(note)}", file=sys.stderr)
    return 0 if result.outcome.status == "succeeded" else 1


def _after_signal(service: Service, ref: SessionRef, signals: TurnSignals, result: SendResult | None,
                  error: BaseException | None, as_json: bool) -> int:
    """One line for a turn ended by a signal: on stderr, and in the audit log (the only place
    it can go when the terminal is gone)."""
    name = signals.name
    status = result.outcome.status if result is not None else None
    service.record_signal(ref, name, result.turn_id if result is not None else None, status)
    if error is not None:
        line = f"reprise: {name}: {error}"
    elif result is None or result.turn_id is None:
        line = f"reprise: {name}: the turn did not start."
    else:
        line = f"reprise: {name}: turn {result.turn_id} was stopped and recorded {status}."
    if not (signals.received == signal.SIGHUP and is_terminal(sys.stderr)):
        with contextlib.suppress(OSError, ValueError):
            if as_json and result is not None:
                emit(contract.dump(contract.sent(result)))
            print(safe_text(line), file=sys.stderr)
    return signals.exit_status


def recover(service: Service, args: SessionArguments, as_json: bool) -> int:
    ref = service.resolve(args.id)
    marked = service.mark_stale_interrupted(ref)
    if as_json:
        emit(contract.dump(contract.Recovered(session_id=ref.session_id, interrupted=marked)))
    else:
        print(f"Marked {counted(len(marked), 'stale pending turn')} interrupted." if marked
              else "No stale pending turns.")
    return 0


def meter(service: Service, args: MeterArguments, as_json: bool) -> int:
    message = _message(args)
    ref = service.resolve(args.id)
    result = service.measure(ref, message, model=args.model, via=args.via)
    if as_json:
        emit(contract.dump(contract.meter(ref, result)))
        return 0
    from ..reports.meter import meter_lines

    print_lines(meter_lines(ref.session_id, result, with_draft=bool(message)))
    return 0


COMMANDS: dict[str, Command[Any]] = {
    "send": Command(SendArguments, send),
    "meter": Command(MeterArguments, meter),
    "recover": Command(SessionArguments, recover),
}
