"""The baseline: Fractal's own `fractal.session.list_sessions`, timed over every workspace.

Run it with the side venv's Python (it imports the real Fractal); bench/listing.py does so:

    FRACTAL_STATE_HOME=<root> .fractal-venv/bin/python bench/fractal_list_baseline.py \
        --root <root> --repeat 3 --verify 50 /home/dev/project-00 /home/dev/project-01 ...

It prints one JSON object. When `fractal` cannot be imported (no side venv) it falls back to
a faithful re-implementation: pydantic models of fractal-rlm 0.1.1's session file and
predict-rlm 0.7.0's RunTrace (Reprise's), and the same list_sessions loop (read, json.loads, validate
every file in full, stat, sort by mtime). The output then says `"impl": "re-implementation"`.
This file imports Reprise only in that fallback: in the side venv it needs Fractal alone.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
import warnings
from datetime import UTC

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


# --- the re-implementation (only used when the real Fractal is absent) ----------------------

def _mirror():
    """A module-like namespace with list_sessions / workspace_key / load_state, mirroring Fractal.

    It validates with Reprise's models of the session file, whose acceptance the compat tests
    check against Fractal's, with `trace` typed as predict-rlm's RunTrace the way Fractal types
    it (Reprise's mirror of it). Reprise is imported only here: the side venv never calls this."""
    import types
    from datetime import datetime

    from pydantic import BaseModel, Field

    from reprise.core.paths import fractal_state_root, workspace_key
    from reprise.core.sources.fractal.models import HistoryTurn
    from reprise.core.sources.fractal.models import SessionState as ReprisesState
    from reprise.core.sources.fractal.trace import RunTrace

    class SessionHistoryTurn(HistoryTurn):
        trace: RunTrace | None = None

    class SessionState(ReprisesState):
        history: list[SessionHistoryTurn] = Field(default_factory=list)

    class SessionInfo(BaseModel):
        session_id: str
        updated_at: str
        turn_count: int
        first_message: str

    def default_state_dir():
        return fractal_state_root()

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
                updated_at=datetime.fromtimestamp(mtime, UTC).isoformat(),
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
