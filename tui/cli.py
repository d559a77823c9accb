"""The `reprise` command: parse arguments, call the service, print for people or as JSON.

Without a subcommand it opens the TUI. Exit status: 0 success, 1 failure, 2 usage error,
3 not found or ambiguous.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

from reprise.core.errors import AmbiguousError, RepriseError, UsageError
from reprise.core.service import SORTS, Service, activity_time

from .format import human_size, relative_time
from .text import one_line, safe_text


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own usage errors: one line, exit 2
        if "--json" in sys.argv:
            print(json.dumps({"error": {"code": "usage", "message": message, "path": None}}))
        else:
            print(f"reprise: {message}", file=sys.stderr)
        raise SystemExit(2)


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--state-dir", default=argparse.SUPPRESS, help="state root (default: Fractal's)")
    common.add_argument("--workspace", default=argparse.SUPPRESS, help="workspace folder (default: current)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON document")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = _Parser(prog="reprise", parents=[common],
                     description="Browse, resume, meter and trim the sessions of coding agents.")
    parser.add_argument("--demo", action="store_true", help="open the TUI on a demo store in a temporary folder")
    parser.add_argument("--agent", choices=("fractal", "command", "echo"),
                        help="agent backend for turns sent from the TUI (default: [agent] backend)")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], help=help_text, description=help_text)

    p = add("list", "list sessions of this workspace (or all)")
    p.add_argument("--all", action="store_true", help="all workspaces")
    p.add_argument("--limit", type=int, help="show at most N")
    p.add_argument("--sort", choices=SORTS, default="updated")

    p = add("show", "show a session: summary, bounded history, usage")
    p.add_argument("id")
    p.add_argument("--summary", action="store_true", help="print exactly Fractal's rendered summary")

    p = add("new", "write a new empty session and print its id")
    p.add_argument("--title")

    p = add("resume", "resume a session in its agent")
    p.add_argument("id", nargs="?")
    p.add_argument("--last", action="store_true", help="the most recently active session")
    p.add_argument("--print", action="store_true", help="print the argv instead of running it")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    p = add("rename", "set a session's title")
    p.add_argument("id")
    p.add_argument("title")
    for name, help_text in (("pin", "pin a session to the top"), ("unpin", "unpin a session")):
        add(name, help_text).add_argument("id")

    p = add("meter", "the next turn's context, part by part")
    p.add_argument("id")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--message", help="the message you are about to send")
    group.add_argument("--message-file", help="read the message from a file (- for stdin)")
    p.add_argument("--model", help="count for this model (default: [meter] model, then Fractal's)")

    p = add("send", "run one turn of a session with an agent backend")
    p.add_argument("id")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--message", help="the message to send")
    group.add_argument("--message-file", help="read the message from a file (- for stdin)")
    p.add_argument("--agent", choices=("fractal", "command", "echo"), help="backend (default: [agent] backend)")
    p.add_argument("--yes", action="store_true", help="send even when the context is over the window")

    p = add("recover", "mark pending turns whose agent is gone (older than [agent] timeout) as interrupted")
    p.add_argument("id")

    p = add("pick", "choose a session in the TUI and print its id (exit 1 if cancelled)")
    p.add_argument("--args", action="store_true",
                   help="print `--workspace DIR --resume ID` for `fractal $(reprise pick --args)`")

    p = add("search", "full-text search over every turn")
    p.add_argument("query", nargs="+")
    p.add_argument("--all", action="store_true", help="all workspaces")
    p.add_argument("--limit", type=int, default=50)

    add("workspaces", "all known workspaces")
    add("config", "the effective configuration and where each value came from")
    p = add("doctor", "check the whole store")
    p.add_argument("--clean", action="store_true", help=f"remove temp files older than 10 minutes")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    as_json = getattr(args, "json", False)
    try:
        if args.command is None:
            return _open_tui(args)
        service = Service.from_environment(state_dir=getattr(args, "state_dir", None),
                                           workspace=getattr(args, "workspace", None))
        handler: Callable = COMMANDS[args.command]
        return handler(service, args, as_json)
    except RepriseError as exc:
        _print_error(exc, as_json)
        return exc.exit_status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _print_error(exc: RepriseError, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"error": exc.as_dict()}))
        return
    print(f"reprise: {safe_text(str(exc))}", file=sys.stderr)
    if isinstance(exc, AmbiguousError):
        for candidate in exc.candidates:
            print(f"  {safe_text(candidate)}", file=sys.stderr)


def _emit(data: dict) -> None:
    print(json.dumps(data, indent=2))


# --- commands ----------------------------------------------------------------------------

def cmd_list(service: Service, args, as_json: bool) -> int:
    listing = service.list_sessions(all_workspaces=args.all, sort=args.sort, limit=args.limit)
    if as_json:
        _emit(listing.as_dict())
        return 0
    if not listing.total:
        print(f"No sessions in {listing.scope}. State root: {service.state_root}")
        return 0
    now = time.time()
    print(f"{'ID':10} {'TITLE':42} {'TURNS':>5} {'STATUS':14} {'ACTIVE':>9} {'SIZE':>8} {'CONTEXT':>8} {'COST':>8}")
    for row in listing.rows:
        status = "PROBLEM" if row.problem_code else (row.last_status or "-")
        pin = "*" if row.pinned else " "
        context = f"{row.context_tokens:,}" if row.context_tokens else "-"
        cost = f"{row.resume_cost:,}" if row.resume_cost is not None else "-"
        print(f"{pin}{row.file_id[:9]:9} {one_line(row.display_title, 42):42} {row.turns:5} {status:14} "
              f"{relative_time(now - activity_time(row)):>9} {human_size(row.size):>8} {context:>8} {cost:>8}")
    shown = f"{len(listing.rows)} of {listing.total}" if len(listing.rows) < listing.total else f"{listing.total}"
    print(f"{shown} sessions shown, {listing.scope}, sorted by {listing.sort}")
    return 0


def cmd_show(service: Service, args, as_json: bool) -> int:
    detail = service.show(service.resolve(args.id))
    if args.summary:
        if as_json:
            _emit({"session_id": detail.ref.session_id, "summary": detail.summary_text})
        else:
            sys.stdout.write(detail.summary_text if not sys.stdout.isatty() else safe_text(detail.summary_text))
            sys.stdout.write("\n")
        return 0
    if as_json:
        _emit(detail.as_dict())
        return 0
    title = detail.meta.title or "(untitled)"
    print(f"Session {detail.ref.session_id}  {safe_text(title)}{'  [pinned]' if detail.meta.pinned else ''}")
    print(f"Workspace {detail.workspace_path or detail.ref.workspace_key}")
    print(f"File {detail.path} ({human_size(detail.size)}), {len(detail.state.turns)} turns")
    for warning in detail.warnings:
        print(f"Warning: {safe_text(warning.message)}")
    print()
    print(safe_text(detail.summary_text))
    print()
    print(f"History (last {len(detail.state.history)} turns kept in the file):")
    for entry in detail.state.history:
        print(f"- {entry.turn_id} [{entry.status}] {entry.updated_at}")
        print(f"  user: {one_line(entry.user_message, 100)}")
        for label, items in (("read", entry.files_read), ("modified", entry.files_modified),
                             ("commands", entry.commands_run)):
            if items:
                print(f"  {label}: {one_line(', '.join(items), 100)}")
        if entry.error:
            print(f"  error: {one_line(entry.error, 100)}")
    t = detail.totals
    print()
    print(f"Usage: {t.input_tokens:,} input, {t.output_tokens:,} output tokens, cost {t.cost:.4f}, "
          f"{t.iterations} iterations, {t.duration_ms / 1000:.1f} s; last context {t.context_tokens:,} tokens")
    return 0


def cmd_new(service: Service, args, as_json: bool) -> int:
    ref = service.new_session(args.title)
    if as_json:
        _emit({"session_id": ref.session_id, "workspace_key": ref.workspace_key,
               "workspace_path": str(service.workspace)})
    else:
        print(ref.session_id)
    return 0


def cmd_resume(service: Service, args, as_json: bool) -> int:
    if args.last and args.id:
        raise UsageError("Give a session id or --last, not both.")
    if not args.last and not args.id:
        raise UsageError("Which session? Give an id (or a prefix) or --last.")
    ref = service.last_ref() if args.last else service.resolve(args.id)
    plan = service.resume_plan(ref)
    for note in plan.notes:
        print(f"reprise: {note}", file=sys.stderr)
    if plan.over_window and not args.yes and not args.print:
        if not sys.stdin.isatty():
            raise RepriseError(f"Session {ref.session_id} is over the model's context window.",
                               hint="pass --yes to resume anyway, or trim it first")
        answer = input("Resume anyway? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("Not resumed.", file=sys.stderr)
            return 1
    if args.print:
        if as_json:
            _emit(plan.as_dict())
        else:
            print(shlex.join(plan.argv))
        return 0
    exec_handoff(plan.argv, plan.cwd)
    return 0


def exec_handoff(argv: list[str], cwd: str) -> None:
    """Replace this process with the agent, in the session's workspace."""
    os.chdir(cwd)
    os.execvp(argv[0], argv)


def _message(args) -> str:
    if args.message_file == "-":
        return sys.stdin.read()
    if args.message_file:
        try:
            return Path(args.message_file).read_text(encoding="utf-8", errors="surrogateescape")
        except OSError as exc:
            raise UsageError(f"{args.message_file}: cannot read the message file: {exc.strerror or exc}.",
                             path=args.message_file) from None
    return args.message or ""


def cmd_send(service: Service, args, as_json: bool) -> int:
    import threading

    message = _message(args)
    ref = service.resolve(args.id)
    cancel = threading.Event()
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = service.send_turn(ref, message, agent=args.agent, confirm_over=args.yes,
                                                  cancel=cancel)
        except BaseException as exc:  # handed to the main thread, which raises it
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except KeyboardInterrupt:
        cancel.set()
        print("reprise: interrupting the turn…", file=sys.stderr)
        worker.join()
    if "error" in outcome:
        raise outcome["error"]
    result = outcome["result"]
    if as_json:
        _emit(result.as_dict())
    else:
        o = result.outcome
        print(f"[{o.status}] turn {result.turn_id or '?'} via {result.backend}")
        if o.response:
            print(safe_text(o.response))
        if o.error:
            print(f"Error: {safe_text(o.error)}", file=sys.stderr)
    return 0 if result.outcome.status == "succeeded" else 1


def cmd_recover(service: Service, args, as_json: bool) -> int:
    ref = service.resolve(args.id)
    marked = service.mark_stale_interrupted(ref)
    if as_json:
        _emit({"session_id": ref.session_id, "interrupted": marked})
    else:
        print(f"Marked {len(marked)} stale pending turn(s) interrupted." if marked else "No stale pending turns.")
    return 0


def cmd_meter(service: Service, args, as_json: bool) -> int:
    message = _message(args)
    ref = service.resolve(args.id)
    result = service.measure(ref, message, model=args.model)
    if as_json:
        _emit({"session_id": ref.session_id, **result.as_dict()})
        return 0
    kind = "exact" if result.exact else "estimate"
    print(f"Next turn of {ref.session_id} with {result.model} ({result.model_source}), "
          f"counted with {result.encoding}: {kind}")
    for part in result.parts:
        figure = f"{part.tokens:>9,}" if part.tokens is not None else "   failed"
        extra = []
        if part.full_chars is not None and part.name in ("history", "message"):
            extra.append(f"{part.full_chars:,} characters in full")
        if part.note:
            extra.append(part.note)
        if part.error:
            extra.append(f"error: {part.error}")
        print(f"  {part.name:10} {figure}  {part.basis:10} {'; '.join(extra)}")
    print(f"  {'total':10} {result.total:>9,}  of {result.window:,} ({result.percent:.1f}%), {result.state}")
    if result.measured:
        print(f"  measured   {result.measured.tokens:>9,}  {result.measured.label} (reported by the provider)")
    return 0


def cmd_search(service: Service, args, as_json: bool) -> int:
    hits = service.search(" ".join(args.query), all_workspaces=args.all, limit=args.limit)
    if as_json:
        _emit({"hits": [hit.as_dict() for hit in hits]})
        return 0
    for hit in hits:
        snippet = one_line(hit.as_dict()["snippet"], 90)
        print(f"{hit.row.file_id[:9]}  turn {hit.turn:<4} {hit.field:9} {snippet}")
    print(f"{len(hits)} matching turns")
    return 0 if hits else 1


def cmd_rename(service: Service, args, as_json: bool) -> int:
    ref = service.resolve(args.id)
    meta = service.rename(ref, args.title)
    if as_json:
        _emit({"session_id": ref.session_id, "title": meta.title})
    else:
        print(f"Renamed {ref.session_id} to {safe_text(meta.title or '(untitled)')}")
    return 0


def _pin(pinned: bool):
    def command(service: Service, args, as_json: bool) -> int:
        ref = service.resolve(args.id)
        service.set_pinned(ref, pinned)
        if as_json:
            _emit({"session_id": ref.session_id, "pinned": pinned})
        else:
            print(f"{'Pinned' if pinned else 'Unpinned'} {ref.session_id}")
        return 0
    return command


def cmd_workspaces(service: Service, args, as_json: bool) -> int:
    infos = service.workspaces()
    if as_json:
        _emit({"workspaces": [info.as_dict() for info in infos]})
        return 0
    if not infos:
        print(f"No workspaces under {service.state_root}")
    for info in infos:
        where = safe_text(info.path) if info.path else f"(folder unknown: {info.key})"
        print(f"{info.sessions:6} sessions  {info.last_activity or '-':20}  {where}")
    return 0


def cmd_config(service: Service, args, as_json: bool) -> int:
    rows = service.config_report()
    if as_json:
        _emit({"config_file": str(service.loaded.config_path),
               "values": {key: {"value": value, "source": source} for key, value, source in rows}})
        return 0
    print(f"Config file: {service.loaded.config_path}")
    for key, value, source in rows:
        print(f"{key} = {json.dumps(value)}    # {source}")
    return 0


def cmd_doctor(service: Service, args, as_json: bool) -> int:
    report = service.doctor(clean=args.clean)
    if as_json:
        _emit(report.as_dict())
        return 0 if report.ok else 1
    for problem in report.problems:
        print(f"problem  {safe_text(problem.path)}: {problem.code}: {safe_text(problem.message)}")
    for warning in report.warnings:
        print(f"warning  {safe_text(warning.path)}: {safe_text(warning.message)}")
    for temp in report.temp_files:
        print(f"tempfile {safe_text(temp)} (left by an interrupted write; `reprise doctor --clean` removes it)")
    for temp in report.cleaned:
        print(f"removed  {safe_text(temp)}")
    for note in report.notes:
        print(f"note     {note}")
    if report.ok and not report.warnings:
        print(f"No problems under {service.state_root}")
    return 0 if report.ok else 1




def _open_tui(args) -> int:
    from .app import make_app
    from .screens.main import Handoff

    state_dir = getattr(args, "state_dir", None)
    workspace = getattr(args, "workspace", None)
    if args.demo:
        import tempfile

        from .demo import build_demo

        root = Path(tempfile.mkdtemp(prefix="reprise-demo-"))
        workspace = str(build_demo(root))
        state_dir = str(root / "state")
        os.environ["REPRISE_CACHE_DIR"] = str(root / "cache")
        print(f"reprise: demo store in {root}", file=sys.stderr)
    agent = args.agent or ("echo" if args.demo else None)
    service = Service.from_environment(state_dir=state_dir, workspace=workspace)
    result = make_app(service, agent=agent).run()
    if isinstance(result, Handoff):
        for note in result.notes:
            print(f"reprise: {note}", file=sys.stderr)
        exec_handoff(result.argv, result.cwd)
    return 0


def cmd_pick(service: Service, args, as_json: bool) -> int:
    from .app import make_app
    from .screens.main import Picked

    result = make_app(service, mode="pick").run()
    if not isinstance(result, Picked):
        return 1
    if args.args:
        if result.workspace is None:
            raise RepriseError(f"The folder of workspace {result.ref.workspace_key} is unknown.",
                               hint="run reprise once inside it, or relink it")
        print(shlex.join(["--workspace", result.workspace, "--resume", result.ref.session_id]))
    elif as_json:
        _emit({"session_id": result.ref.session_id, "workspace_key": result.ref.workspace_key,
               "workspace_path": result.workspace})
    else:
        print(result.ref.session_id)
    return 0


COMMANDS: dict[str, Callable] = {
    "list": cmd_list, "show": cmd_show, "new": cmd_new, "resume": cmd_resume, "rename": cmd_rename,
    "pin": _pin(True), "unpin": _pin(False), "workspaces": cmd_workspaces, "meter": cmd_meter,
    "pick": cmd_pick, "search": cmd_search, "send": cmd_send, "recover": cmd_recover, "config": cmd_config,
    "doctor": cmd_doctor,
}


if __name__ == "__main__":
    raise SystemExit(main())
