"""Fractal's sample sessions: three project folders with sessions of every status, short and long,
pinned and titled, plus one file cut short by a crash, all written through Fractal's own store (the
`--demo` store and the conformance suite both use them)."""

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, datetime, timedelta

from ...paths import SessionRef, workspace_key
from ...session_meta import SessionMeta
from ..samples import Sample, SampleEnv, SampleSet
from .models import (
    INTERRUPTED_ERROR,
    MAX_ITERATIONS_ERROR,
    AgentTurn,
    HistoryStatus,
    HistoryTurn,
    SessionState,
    SummaryTurn,
    TurnUsage,
    UserTurn,
)
from .spec import SPEC
from .store import Store

TOPICS = [
    ("Add a dark mode toggle to the settings page", "Added a ThemeToggle component and wired it to the store."),
    ("Why does the login test fail on CI?", "The test relied on local time; it now freezes the clock."),
    ("Refactor the date parsing into its own module", "Moved parsing into `dates.py` with tests for every format."),
    ("Speed up the CSV import", "Switched to a streaming reader; 4x faster on the 2 GB sample."),
    ("Fix the flaky websocket reconnect", "Reconnect now backs off exponentially and resets on success."),
    ("Document the release process", "Wrote RELEASING.md with the checklist and the tag format."),
    ("Add retries to the S3 uploader", "Retries on 5xx with jitter; idempotent keys prevent duplicates."),
    ("Explain the caching layer to me", "Requests hit an LRU in front of Redis; keys include the schema version."),
]


def _session_id(rng: random.Random) -> str:
    return uuid.UUID(int=rng.getrandbits(128), version=4).hex


def _succeeded(turns: int) -> list[HistoryStatus]:
    return ["succeeded"] * turns


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


# Per project, its sessions: (turns, each turn's status, age, title, pinned, long replies).
Plan = tuple[int, list[HistoryStatus], timedelta, str | None, bool, bool]


def _state(session_id: str, turns: int, statuses: list[HistoryStatus], start: datetime, rng: random.Random,
           long_replies: bool = False) -> SessionState:
    state = SessionState(session_id=session_id)
    moment = start
    for index in range(turns):
        turn_id = f"turn-{_session_id(rng)}"
        message, reply = TOPICS[(index + rng.randrange(len(TOPICS))) % len(TOPICS)]
        status = statuses[index] if index < len(statuses) else "succeeded"
        if long_replies:
            steps = (f"Step {n}: checked module_{n}.py and updated its tests." for n in range(120))
            reply = reply + " " + " ".join(steps)
        files_read = [f"src/module_{rng.randrange(40)}.py" for _ in range(rng.randrange(1, 5))]
        files_modified = files_read[: rng.randrange(0, 3)]
        commands = ["pytest -q"] if rng.random() < 0.6 else []
        created = moment
        moment = moment + timedelta(minutes=rng.randrange(2, 40))
        error = {"failed": "Tool call failed: permission denied writing dist/", "max_iterations": MAX_ITERATIONS_ERROR,
                 "interrupted": INTERRUPTED_ERROR}.get(status)
        if status == "pending":
            agent = None
        else:
            usage = TurnUsage(input_tokens=rng.randrange(20_000, 90_000), output_tokens=rng.randrange(500, 4_000),
                              cost=round(rng.uniform(0.01, 0.4), 4), duration_ms=rng.randrange(5_000, 90_000),
                              iterations=rng.randrange(2, 12), context_tokens=15_000 + 900 * index)
            agent = AgentTurn(status=status, response="" if status == "failed" else reply,
                              files_read_count=len(files_read), files_changed_count=len(files_modified),
                              commands_run_count=len(commands), error=error, usage=usage)
        state.summary.turns.append(SummaryTurn(turn_id=turn_id, user=UserTurn(message=message), agent=agent))
        state.history.append(HistoryTurn(
            turn_id=turn_id, user_message=message, status=status, files_read=files_read,
            files_modified=files_modified, commands_run=commands, trace=None, error=error,
            created_at=_iso(created), updated_at=_iso(moment if status != "pending" else created)))
    state.history = state.history[-20:]
    return state


def write_samples(env: SampleEnv) -> SampleSet:
    """Fractal's sessions in the state root `env.root/state`: nine in three project folders, and a
    tenth cut short by a crash (a problem row)."""
    rng = random.Random(env.seed)
    state = env.root / "state"
    store = Store(state)
    plans: dict[str, list[Plan]] = {
        "webapp": [
            (3, _succeeded(3), timedelta(hours=2), "Dark mode", True, False),
            (60, _succeeded(55) + ["failed", "succeeded", "max_iterations", "succeeded", "succeeded"],
             timedelta(days=3), "Big refactor (60 turns)", False, True),
            (5, ["succeeded", "succeeded", "failed", "succeeded", "pending"], timedelta(minutes=30), None, False,
             False),
            (2, ["succeeded", "interrupted"], timedelta(days=12), None, False, False),
            (0, [], timedelta(days=1), "Empty session", False, False),
        ],
        "cli-tool": [
            (8, _succeeded(6) + ["max_iterations", "succeeded"], timedelta(days=1), None, False, False),
            (1, ["failed"], timedelta(days=40), None, False, False),
        ],
        "data-pipeline": [
            (25, _succeeded(24) + ["interrupted"], timedelta(hours=6), "Polars migration", True, False),
            (4, _succeeded(4), timedelta(days=90), None, False, False),
        ],
    }
    written = []
    for project, sessions in plans.items():
        folder = env.project(project)
        key = workspace_key(folder)
        store.record_workspace(key, folder)
        for turns, statuses, age, title, pinned, long_replies in sessions:
            ref = SessionRef(key, _session_id(rng), SPEC.name)
            start = env.now - age - timedelta(minutes=25 * turns)
            state_now = _state(ref.session_id, turns, statuses, start, rng, long_replies)
            store.save(ref, state_now, expected=None)
            store.write_meta(ref, SessionMeta(title=title, pinned=pinned, created_at=_iso(start)))
            path = store.paths.sessions(key) / f"{ref.session_id}.json"
            written.append(Sample(ref.session_id, folder, tuple(turn.user.message for turn in state_now.summary.turns),
                                  title=title, files=(str(path.relative_to(state)),)))
    broken_id = _session_id(rng)
    broken = store.paths.sessions(workspace_key(env.project("cli-tool"))) / f"{broken_id}.json"
    broken.write_bytes(b'{"schema_version": 1, "session_id": "truncated by a crash", "summary": {"tu')
    return SampleSet("fractal", state, tuple(written), problems=(broken_id,),
                     dumps=lambda value: json.dumps(value, indent=2), whole_files=True)
