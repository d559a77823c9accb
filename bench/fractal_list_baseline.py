"""The baseline: Fractal's own `fractal.session.list_sessions`, timed over every workspace.

Run it with the side venv's Python (it imports the real Fractal); bench/listing.py does so:

    FRACTAL_STATE_HOME=<root> .fractal-venv/bin/python bench/fractal_list_baseline.py \
        --root <root> --repeat 3 --verify 50 /home/dev/project-00 /home/dev/project-01 ...

It prints one JSON object. When `fractal` cannot be imported (no side venv) it falls back to
a faithful re-implementation: pydantic models mirroring fractal-rlm 0.1.1's session models
and predict-rlm 0.7.0's RunTrace, and the same list_sessions loop (read, json.loads, validate
every file in full, stat, sort by mtime). The output then says `"impl": "re-implementation"`.
This file must stay importable without Reprise (it runs in the side venv).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
import warnings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


# --- the re-implementation (only used when the real Fractal is absent) ----------------------

def _mirror():
    """A module-like namespace with list_sessions / workspace_key / SessionState, mirroring Fractal."""
    import hashlib
    import re
    import types
    from datetime import datetime, timezone
    from pathlib import Path
    from typing import Any, Literal

    from pydantic import BaseModel, Field

    class TokenUsage(BaseModel):
        input_tokens: int = 0
        output_tokens: int = 0
        cost: float = 0.0
        cache_hits: int = 0

    class LMFinishMetadata(BaseModel):
        finish_reason: str | None = None

    class PredictCallDetail(BaseModel):
        duration_ms: int
        usage: TokenUsage = Field(default_factory=TokenUsage)
        input: dict[str, Any] = Field(default_factory=dict)
        output: dict[str, Any] = Field(default_factory=dict)
        error: str | None = None
        lm: LMFinishMetadata | None = None

    class PredictCallGroup(BaseModel):
        signature: str
        instructions: str | None = None
        model: str
        total_usage: TokenUsage = Field(default_factory=TokenUsage)
        calls: list[PredictCallDetail]

    class ToolCall(BaseModel):
        name: str
        args: list[Any] = Field(default_factory=list)
        kwargs: dict[str, Any] = Field(default_factory=dict)
        result: Any = None
        error: str | None = None
        duration_ms: int

    class LMUsage(BaseModel):
        main: TokenUsage = Field(default_factory=TokenUsage)
        sub: TokenUsage = Field(default_factory=TokenUsage)

    class IterationStep(BaseModel):
        iteration: int
        reasoning: str
        code: str
        output: str
        untruncated_output: str
        error: bool = False
        duration_ms: int
        tool_calls: list[ToolCall] = Field(default_factory=list)
        predict_calls: list[PredictCallGroup] = Field(default_factory=list)
        lm: LMFinishMetadata | None = None
        usage: LMUsage = Field(default_factory=LMUsage)

    class RunTrace(BaseModel):
        status: Literal["in_progress", "completed", "max_iterations", "error"]
        model: str
        sub_model: str | None = None
        iterations: int
        max_iterations: int
        duration_ms: int
        usage: LMUsage = Field(default_factory=LMUsage)
        telemetry_ref: dict[str, Any] | None = None
        steps: list[IterationStep] = Field(default_factory=list)

    class UserTurn(BaseModel):
        message: str

    class TurnUsage(BaseModel):
        input_tokens: int = Field(default=0, ge=0)
        output_tokens: int = Field(default=0, ge=0)
        cost: float = Field(default=0.0, ge=0.0)
        duration_ms: int = Field(default=0, ge=0)
        iterations: int = Field(default=0, ge=0)
        context_tokens: int = Field(default=0, ge=0)

    class AgentTurn(BaseModel):
        status: Literal["succeeded", "failed", "max_iterations", "interrupted"]
        response: str = ""
        files_read_count: int = Field(default=0, ge=0)
        files_changed_count: int = Field(default=0, ge=0)
        commands_run_count: int = Field(default=0, ge=0)
        error: str | None = None
        usage: TurnUsage | None = None

    class SummaryTurn(BaseModel):
        turn_id: str
        user: UserTurn
        agent: AgentTurn | None = None

    class SessionSummary(BaseModel):
        turns: list[SummaryTurn] = Field(default_factory=list)

    class SessionHistoryTurn(BaseModel):
        turn_id: str
        user_message: str
        status: Literal["pending", "succeeded", "failed", "max_iterations", "interrupted"]
        files_read: list[str] = Field(default_factory=list)
        files_modified: list[str] = Field(default_factory=list)
        commands_run: list[str] = Field(default_factory=list)
        trace: RunTrace | None = None
        error: str | None = None
        created_at: str
        updated_at: str

    class SessionState(BaseModel):
        schema_version: Literal[1] = 1
        session_id: str
        summary: SessionSummary = Field(default_factory=SessionSummary)
        history: list[SessionHistoryTurn] = Field(default_factory=list)

    class SessionInfo(BaseModel):
        session_id: str
        updated_at: str
        turn_count: int
        first_message: str

    def workspace_key(workspace_path):
        resolved = Path(workspace_path).expanduser().resolve()
        slug_source = "-".join(part for part in resolved.parts if part != resolved.anchor)
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", slug_source).strip("-._") or "workspace"
        digest = hashlib.sha256(str(resolved).encode("utf-8")).hexdigest()[:16]
        return f"{slug[:80]}--{digest}"

    def default_state_dir():
        if os.environ.get("FRACTAL_STATE_HOME"):
            return Path(os.environ["FRACTAL_STATE_HOME"]).expanduser()
        if os.environ.get("XDG_STATE_HOME"):
            return Path(os.environ["XDG_STATE_HOME"]).expanduser() / "fractal"
        return Path.home() / ".local" / "state" / "fractal"

    def sessions_dir_path(workspace_path):
        return default_state_dir() / "workspaces" / workspace_key(workspace_path) / "sessions"

    def list_sessions(workspace_path):
        sessions_dir = sessions_dir_path(workspace_path)
        if not sessions_dir.is_dir():
            return []
        entries = []
        for path in sessions_dir.glob("*.json"):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                state = SessionState.model_validate(data)
                mtime = path.stat().st_mtime
            except (OSError, json.JSONDecodeError, ValueError):
                continue
            turns = state.summary.turns
            entries.append((mtime, SessionInfo(
                session_id=state.session_id,
                updated_at=datetime.fromtimestamp(mtime, timezone.utc).isoformat(),
                turn_count=len(turns),
                first_message=turns[0].user.message if turns else "")))
        entries.sort(key=lambda item: item[0], reverse=True)
        return [info for _, info in entries]

    def load_state(workspace_path, session_id):
        """Fractal's FractalSession.load for a valid file: the state, or None when rejected."""
        path = sessions_dir_path(workspace_path) / f"{session_id}.json"
        try:
            state = SessionState.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return None
        return state if state.session_id == session_id else None

    return types.SimpleNamespace(list_sessions=list_sessions, workspace_key=workspace_key,
                                 sessions_dir_path=sessions_dir_path, load_state=load_state)


def _real():
    import types

    import fractal
    import fractal.session as fs

    def load_state(workspace_path, session_id):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            session = fs.FractalSession.load(workspace_path, session_id=session_id)
        if caught:   # Fractal warns whenever it rejects a file and starts an empty session instead
            return None
        return session.state

    version = getattr(fractal, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version
        version = dist_version("fractal-rlm")
    return version, types.SimpleNamespace(list_sessions=fs.list_sessions, workspace_key=fs.workspace_key,
                                          sessions_dir_path=fs.sessions_dir_path, load_state=load_state)


# --- the run ------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspaces", nargs="+", help="workspace paths, as given to list_sessions")
    parser.add_argument("--root", required=True, help="the state root (FRACTAL_STATE_HOME)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--verify", type=int, default=0,
                        help="also load this many files (spread over the store) the way Fractal does "
                             "and check that re-dumping them gives back the same bytes")
    parser.add_argument("--impl", choices=("auto", "fractal", "mirror"), default="auto")
    args = parser.parse_args(argv)
    os.environ["FRACTAL_STATE_HOME"] = args.root

    started = time.perf_counter()
    impl, version, api = "fractal", None, None
    if args.impl in ("auto", "fractal"):
        try:
            version, api = _real()
        except ImportError as exc:
            if args.impl == "fractal":
                raise
            impl_note = f"fractal not importable ({exc})"
            api = None
    if api is None:
        impl, api = "re-implementation", _mirror()
    import_s = time.perf_counter() - started

    runs = []
    listed = 0
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        listed = sum(len(api.list_sessions(path)) for path in args.workspaces)
        runs.append(time.perf_counter() - t0)

    files = []
    for path in args.workspaces:
        files.extend(sorted(glob.glob(os.path.join(str(api.sessions_dir_path(path)), "*.json"))))
    on_disk = len(files)

    verified, mismatched = 0, []
    if args.verify and files:
        owner = {}
        for path in args.workspaces:
            for name in glob.glob(os.path.join(str(api.sessions_dir_path(path)), "*.json")):
                owner[name] = path
        step = max(1, len(files) // args.verify)
        for name in files[::step][: args.verify]:
            session_id = os.path.basename(name)[:-5]
            state = api.load_state(owner[name], session_id)
            with open(name, "rb") as handle:
                data = handle.read()
            ok = state is not None and (json.dumps(state.model_dump(mode="json"), indent=2) + "\n").encode() == data
            verified += 1
            if not ok:
                mismatched.append(name)

    result = {
        "impl": impl,
        "label": (f"fractal-rlm {version} fractal.session.list_sessions" if impl == "fractal"
                  else "re-implementation of fractal.session.list_sessions (real Fractal absent)"),
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "import_s": import_s,
        "workspaces": len(args.workspaces),
        "runs_s": runs,
        "best_s": min(runs) if runs else None,
        "listed": listed,
        "files_on_disk": on_disk,
        "verified": verified,
        "verify_mismatches": mismatched[:10],
        "verify_mismatch_count": len(mismatched),
    }
    if impl != "fractal" and args.impl == "auto":
        result["note"] = impl_note
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
