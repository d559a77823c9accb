"""Drive the real Fractal (`fractal.session`) for the compatibility tests.

Run by the Fractal side venv's python, never imported by the tests. Each line on stdin is a
JSON list of commands; for each line one JSON line of results (same order) is printed on
stdout. A single list on stdin followed by EOF works as a one-shot batch too. Importing
fractal takes seconds, so one process serves a whole test module.

Every command is an object with "op" and, optionally, "state_home" (FRACTAL_STATE_HOME for
it). Ops:
  load            workspace, session_id -> warnings, turns, session_id, dump (the bytes its save would write)
  save            workspace, session_id -> load, then save; warnings, turns, data (the file's bytes after)
  summary         workspace, session_id -> warnings, summary (FractalSession.summary())
  write_turns     workspace, session_id?, turns[{message, status|null, response, changed_files,
                  files_read, commands_run, error, trace}] -> session_id, path, data
  workspace_key   path -> key
  list_sessions   workspace -> sessions [{session_id, turn_count, first_message}]
  turn_usage      trace -> usage (turn_usage_from_trace of the validated RunTrace)
  trace_dump      trace -> dump (RunTrace.model_validate(trace).model_dump(mode="json"))
  context         workspace, session_id, message, pending? -> messages [{role, content}] of the next turn's
                  first call; with pending, after `add_user_message(message)`, as Fractal's runtime does
A command that raises reports {"raised": "<Type>: <message>"}. Bytes travel as latin-1 text.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import warnings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from fractal import session as fs  # noqa: E402
from predict_rlm import RunTrace  # noqa: E402


def _bytes_text(data: bytes) -> str:
    return data.decode("latin-1")


def _dump_bytes(state) -> bytes:
    return (json.dumps(state.model_dump(mode="json"), indent=2) + "\n").encode("utf-8")


def _load(command: dict) -> tuple[fs.FractalSession, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session = fs.FractalSession.load(command["workspace"], session_id=command["session_id"])
    return session, [str(w.message) for w in caught]


def op_load(command: dict) -> dict:
    session, caught = _load(command)
    return {"warnings": caught, "turns": len(session.turns), "session_id": session.session_id,
            "history": len(session.history), "dump": _bytes_text(_dump_bytes(session.state))}


def op_save(command: dict) -> dict:
    session, caught = _load(command)
    session.save(command["workspace"])
    path = fs.session_path(command["workspace"], session.session_id)
    return {"warnings": caught, "turns": len(session.turns), "history": len(session.history),
            "data": _bytes_text(path.read_bytes())}


def op_summary(command: dict) -> dict:
    session, caught = _load(command)
    return {"warnings": caught, "summary": session.summary()}


def op_write_turns(command: dict) -> dict:
    workspace = command["workspace"]
    if command.get("session_id"):
        session, _ = _load(command)
    else:
        session = fs.FractalSession()
    for turn in command["turns"]:
        turn_id = session.add_user_message(turn["message"])
        session.save(workspace)
        if turn.get("status") is None:
            continue
        trace = turn.get("trace")
        session.add_agent_turn(
            status=turn["status"],
            response=turn.get("response", ""),
            changed_files=turn.get("changed_files"),
            files_read=turn.get("files_read"),
            commands_run=turn.get("commands_run"),
            error=turn.get("error"),
            trace=RunTrace.model_validate(trace) if trace is not None else None,
            turn_id=turn_id,
        )
        session.save(workspace)
    path = fs.session_path(workspace, session.session_id)
    return {"session_id": session.session_id, "path": str(path), "data": _bytes_text(path.read_bytes())}


def op_workspace_key(command: dict) -> dict:
    return {"key": fs.workspace_key(command["path"])}


def op_list_sessions(command: dict) -> dict:
    infos = fs.list_sessions(command["workspace"])
    return {"sessions": [{"session_id": i.session_id, "turn_count": i.turn_count,
                          "first_message": i.first_message} for i in infos]}


def op_turn_usage(command: dict) -> dict:
    usage = fs.turn_usage_from_trace(RunTrace.model_validate(command["trace"]))
    return {"usage": usage.model_dump(mode="json") if usage is not None else None}


def op_trace_dump(command: dict) -> dict:
    return {"dump": RunTrace.model_validate(command["trace"]).model_dump(mode="json")}


def op_context(command: dict) -> dict:
    """The messages of the next turn's first model call, as Fractal's own context meter builds them."""
    from types import SimpleNamespace

    from fractal import context_meter

    session, caught = _load(command)
    pending = None
    if command.get("pending"):
        turn_id = session.add_user_message(command.get("message", ""))
        pending = {"turn_id": turn_id, "created_at": session.history[-1].created_at}
    runtime = SimpleNamespace(workspace_path=command["workspace"], included_paths=[], session=session,
                              model_label="gpt-5", agent=SimpleNamespace(max_iterations=30))
    messages = context_meter.build_next_context_messages(runtime, user_message=command.get("message", ""))
    return {"warnings": caught, "pending": pending, "messages": [
        {"role": m["role"], "content": context_meter._message_content_text(m["content"])} for m in messages]}


OPS = {name[3:]: fn for name, fn in globals().items() if name.startswith("op_")}


def run(command: dict) -> dict:
    if command.get("state_home"):
        os.environ["FRACTAL_STATE_HOME"] = command["state_home"]
    try:
        return OPS[command["op"]](command)
    except Exception as exc:  # reported, not fatal: the tests decide what a raise means
        return {"raised": f"{type(exc).__name__}: {exc}"[:2000],
                "traceback": traceback.format_exc(limit=3)[-2000:]}


def main() -> None:
    out = sys.stdout
    print(json.dumps({"ready": True}), file=out, flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        commands = json.loads(line)
        results = [run(command) for command in commands]
        print(json.dumps(results), file=out, flush=True)


if __name__ == "__main__":
    main()
