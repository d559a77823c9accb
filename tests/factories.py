"""Fractal-format session data, built exactly as Fractal (fractal-rlm 0.1.x) writes it.

Every function is deterministic from its seed. Dicts keep Fractal's model-field order, so
`session_bytes` gives the bytes Fractal itself saves (`json.dumps(state, indent=2) + "\\n"`).
Traces follow predict_rlm's `RunTrace` dump field for field, defaults included, so the real
Fractal validates them and re-saves them byte-identically.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
import time
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

AGENT_STATUSES = ("succeeded", "failed", "max_iterations", "interrupted")
MAX_ITERATIONS_ERROR = "Reached max iterations before SUBMIT; response came from fallback extraction."
INTERRUPTED_ERROR = "Turn interrupted by user."
FAILED_ERRORS = ("RuntimeError: sandbox exited with code 137",
                 "litellm.RateLimitError: rate limit reached, retry later",
                 "TimeoutError: the model call took longer than 600 s")
TRACE_STATUS = {"succeeded": "completed", "max_iterations": "max_iterations",
                "failed": "error", "interrupted": "error"}
BASE_TIME = datetime(2025, 3, 14, 9, 26, 53, tzinfo=UTC)
MODEL = "openai/gpt-5"
SUB_MODEL = "openai/gpt-5-mini"

ASCII_WORDS = ("fix", "the", "login", "page", "refactor", "tests", "module", "error", "handler",
               "cache", "parse", "config", "docs", "update", "retry", "path", "session", "build")
UNICODE_WORDS = ("修复登录页面的错误", "日本語のテキスト", "한국어", "🚀", "✨deploy✨", "👩\u200d👩\u200d👧",
                 "مرحبا بالعالم", "שלום עולם", "\u200fRTL\u200f", "café", "naïve", "e\u0301", "Ωμέγα", "𝔘𝔫𝔦")

_KEY_SHAPE = re.compile(r"^[A-Za-z0-9._-]{1,80}--[0-9a-f]{16}$")


# --- small pieces ---------------------------------------------------------------------------

def text(rng: random.Random, chars: int, unicode: bool = False) -> str:
    """`chars` characters of word salad (mixed scripts, emoji and RTL when `unicode`)."""
    if chars <= 0:
        return ""
    words = ASCII_WORDS + UNICODE_WORDS if unicode else ASCII_WORDS
    block = " ".join(rng.choice(words) for _ in range(min(chars, 400)))
    return (block * (chars // len(block) + 1))[:chars]


def hex_id(rng: random.Random) -> str:
    """A uuid4().hex look-alike."""
    return f"{rng.getrandbits(128):032x}"


def session_id_for(name: str) -> str:
    """A stable 32-hex session id for a named fixture."""
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:32]


def timestamp(seed: int, index: int, micro: int) -> str:
    """`datetime.now(timezone.utc).isoformat()` at a fixed moment (no fraction when micro is 0)."""
    moment = BASE_TIME + timedelta(days=seed % 1000, seconds=index * 97, microseconds=micro)
    return moment.isoformat()


def token_usage(input_tokens: int = 0, output_tokens: int = 0, cost: float = 0.0, cache_hits: int = 0) -> dict:
    """predict_rlm TokenUsage."""
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "cost": cost, "cache_hits": cache_hits}


def _add_usage(total: dict, part: dict) -> None:
    for key in total:
        total[key] += part[key]


# --- traces (predict_rlm RunTrace) ----------------------------------------------------------

def tool_call(rng: random.Random, payload_chars: int) -> dict:
    path = f"src/{rng.choice(ASCII_WORDS)}/{rng.choice(ASCII_WORDS)}.py"
    return {
        "name": rng.choice(("read_file", "grep", "run_command", "list_dir")),
        "args": [path, {"context": rng.randrange(0, 5), "flags": ["-n", "-i"]}],
        "kwargs": {"limit": rng.randrange(1, 500), "options": {"follow": True, "depth": [1, [2, [3]]]}},
        "result": {"matches": [{"path": path, "line": rng.randrange(1, 900), "text": text(rng, 40)}],
                   "truncated": False, "body": text(rng, payload_chars // 2), "score": 0.5, "none": None},
        "error": None if rng.random() < 0.8 else "FileNotFoundError: no such file",
        "duration_ms": rng.randrange(1, 2000),
    }


def predict_call_group(rng: random.Random, payload_chars: int) -> dict:
    calls = []
    total = token_usage()
    for _ in range(rng.randrange(1, 3)):
        usage = token_usage(rng.randrange(100, 5000), rng.randrange(10, 900), rng.randrange(1, 900) / 10**5)
        _add_usage(total, usage)
        calls.append({
            "duration_ms": rng.randrange(50, 9000),
            "usage": usage,
            "input": {"question": text(rng, 60), "context": [text(rng, payload_chars // 4)]},
            "output": {"answer": text(rng, 80), "confidence": {"value": 0.75, "why": ["short", "clear"]}},
            "error": None,
            "lm": {"finish_reason": "stop"},
        })
    return {"signature": "question, context -> answer", "instructions": "Answer from the context only.",
            "model": SUB_MODEL, "total_usage": total, "calls": calls}


def iteration_step(rng: random.Random, iteration: int, payload_chars: int, main_input: int) -> dict:
    """One predict_rlm IterationStep; `main_input` 0 models a step without a recorded LM call."""
    output = text(rng, payload_chars)
    predict_calls = [predict_call_group(rng, payload_chars) for _ in range(rng.randrange(0, 2))]
    sub = token_usage()
    for group in predict_calls:
        _add_usage(sub, group["total_usage"])
    main = token_usage(main_input, rng.randrange(20, 1500) if main_input else 0,
                       rng.randrange(1, 5000) / 10**5 if main_input else 0.0)
    return {
        "iteration": iteration,
        "reasoning": text(rng, 120),
        "code": f"print(read_file({rng.choice(ASCII_WORDS)!r}))\nx = [i * 2 for i in range(3)]",
        "output": output[:5000],
        "untruncated_output": output,
        "error": rng.random() < 0.2,
        "duration_ms": rng.randrange(100, 60000),
        "tool_calls": [tool_call(rng, payload_chars) for _ in range(rng.randrange(0, 3))],
        "predict_calls": predict_calls,
        "lm": {"finish_reason": rng.choice(("stop", "length"))} if main_input else None,
        "usage": {"main": main, "sub": sub},
    }


def run_trace(seed: int, steps: int = 2, payload_chars: int = 120, status: str = "completed",
              last_step_unmetered: bool = False) -> dict:
    """A RunTrace dump (every field in model order, defaults included).

    `status` is the RunTrace status (completed, max_iterations, error, in_progress). With
    `last_step_unmetered` the last step has no main-LM usage, as when a turn is cut mid-step.
    """
    rng = random.Random(f"trace-{seed}")
    step_list = []
    for iteration in range(1, steps + 1):
        unmetered = last_step_unmetered and iteration == steps
        step_list.append(iteration_step(rng, iteration, payload_chars,
                                        0 if unmetered else 12_000 + iteration * rng.randrange(200, 3000)))
    main, sub = token_usage(), token_usage()
    for step in step_list:
        _add_usage(main, step["usage"]["main"])
        _add_usage(sub, step["usage"]["sub"])
    return {
        "status": status,
        "model": MODEL,
        "sub_model": SUB_MODEL if seed % 2 else None,
        "iterations": steps,
        "max_iterations": steps if status == "max_iterations" else 30,
        "duration_ms": sum(step["duration_ms"] for step in step_list) + rng.randrange(0, 500),
        "usage": {"main": main, "sub": sub},
        "telemetry_ref": {"run_id": hex_id(rng), "events": rng.randrange(1, 99)} if seed % 3 else None,
        "steps": step_list,
    }


def turn_usage(trace: dict | None) -> dict | None:
    """fractal.session.turn_usage_from_trace on a trace dump."""
    if trace is None:
        return None
    context_tokens = 0
    for step in reversed(trace["steps"]):
        prompt_tokens = step["usage"]["main"]["input_tokens"]
        if isinstance(prompt_tokens, int) and prompt_tokens > 0:
            context_tokens = prompt_tokens
            break
    main, sub = trace["usage"]["main"], trace["usage"]["sub"]
    return {
        "input_tokens": main["input_tokens"] + sub["input_tokens"],
        "output_tokens": main["output_tokens"] + sub["output_tokens"],
        "cost": main["cost"] + sub["cost"],
        "duration_ms": trace["duration_ms"],
        "iterations": trace["iterations"],
        "context_tokens": context_tokens,
    }


# --- sessions -------------------------------------------------------------------------------

def turn_pair(rng: random.Random, seed: int, index: int, status: str, *, response_chars: int = 80,
              unicode: bool = False, trace: bool = True) -> tuple[dict, dict]:
    """(summary turn, history turn) of one turn as Fractal leaves it; status "pending" = no agent yet."""
    turn_id = f"turn-{hex_id(rng)}"
    message = text(rng, rng.randrange(10, 200), unicode)
    created_at = timestamp(seed, index, 0 if index % 5 == 0 else rng.randrange(1, 10**6))
    if status == "pending":
        summary = {"turn_id": turn_id, "user": {"message": message}, "agent": None}
        history = {"turn_id": turn_id, "user_message": message, "status": "pending", "files_read": [],
                   "files_modified": [], "commands_run": [], "trace": None, "error": None,
                   "created_at": created_at, "updated_at": created_at}
        return summary, history
    answered = status in ("succeeded", "max_iterations")
    files_read = [f"src/{rng.choice(ASCII_WORDS)}_{n}.py" for n in range(rng.randrange(0, 5))]
    files_modified = [f"src/{rng.choice(ASCII_WORDS)}_{n}.py" for n in range(rng.randrange(0, 4))] if answered else []
    commands_run = [f"pytest -q tests/test_{rng.choice(ASCII_WORDS)}.py" for _ in range(rng.randrange(0, 4))]
    error = {"succeeded": None, "max_iterations": MAX_ITERATIONS_ERROR, "interrupted": INTERRUPTED_ERROR,
             "failed": rng.choice(FAILED_ERRORS)}[status]
    trace_data = run_trace(seed * 1000 + index, steps=1 + index % 3, status=TRACE_STATUS[status],
                           last_step_unmetered=status == "interrupted") if trace else None
    agent = {
        "status": status,
        "response": text(rng, response_chars, unicode) if answered else "",
        "files_read_count": len(files_read),
        "files_changed_count": len(files_modified),
        "commands_run_count": len(commands_run),
        "error": error,
        "usage": turn_usage(trace_data),
    }
    updated_at = timestamp(seed, index, 0 if index % 7 == 3 else rng.randrange(1, 10**6))
    summary = {"turn_id": turn_id, "user": {"message": message}, "agent": agent}
    history = {"turn_id": turn_id, "user_message": message, "status": status, "files_read": files_read,
               "files_modified": files_modified, "commands_run": commands_run, "trace": trace_data,
               "error": error, "created_at": created_at, "updated_at": updated_at}
    return summary, history


def session_dict(session_id: str, turns: int = 3, statuses: tuple[str, ...] = AGENT_STATUSES,
                 pending_last: bool = False, response_chars: int = 80, unicode: bool = False,
                 trace: bool = True, history_limit: int | None = 20, unknown_fields: bool = False,
                 seed: int = 0) -> dict:
    """A session's JSON data. Turn i gets statuses[i % len(statuses)]; the last is pending
    with `pending_last`. History keeps the last `history_limit` turns (None: all)."""
    rng = random.Random(f"session-{seed}")
    summary_turns, history = [], []
    for index in range(turns):
        status = "pending" if pending_last and index == turns - 1 else statuses[index % len(statuses)]
        summary_turn, history_turn = turn_pair(rng, seed, index, status, response_chars=response_chars,
                                               unicode=unicode, trace=trace)
        summary_turns.append(summary_turn)
        history.append(history_turn)
    if history_limit is not None:
        history = history[-history_limit:] if history_limit else []
    data = {"schema_version": 1, "session_id": session_id, "summary": {"turns": summary_turns}, "history": history}
    return add_unknown_fields(data) if unknown_fields else data


def add_unknown_fields(data: dict) -> dict:
    """The data with fields Fractal does not know: at the top level (one in the middle, one at
    the end), in the first summary turn, in the first agent usage and in the first history turn."""
    result = {}
    for key, value in data.items():
        result[key] = value
        if key == "session_id":
            result["client"] = {"name": "fractal-next", "version": [0, 2, 0]}
    result["x_future"] = [1, "two", {"three": None}]
    turns = result["summary"]["turns"]
    if turns:
        turns[0]["pinned"] = True
    for turn in turns:
        if turn["agent"] is not None and turn["agent"]["usage"] is not None:
            turn["agent"]["usage"]["cached_input_tokens"] = 4096
            break
    if result["history"]:
        result["history"][0]["model"] = {"name": MODEL, "reasoning_effort": "high"}
    return result


def dumps(data: Any) -> bytes:
    """Fractal's bytes for a JSON value."""
    return (json.dumps(data, indent=2) + "\n").encode("ascii")


def session_bytes(session_id: str, **kwargs: Any) -> bytes:
    """`session_dict(...)` as the bytes Fractal writes."""
    return dumps(session_dict(session_id, **kwargs))


# --- on disk --------------------------------------------------------------------------------

def workspace_key(path: str | Path) -> str:
    """Fractal's workspace key, written from the format reference (independent of core)."""
    resolved = Path(path).expanduser().resolve()
    slug_source = "-".join(part for part in resolved.parts if part != resolved.anchor)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", slug_source).strip("-._") or "workspace"
    digest = hashlib.sha256(str(resolved).encode("utf-8")).hexdigest()[:16]
    return f"{slug[:80]}--{digest}"


def write_session(state_root: str | Path, workspace_path_or_key: str | Path, data_bytes: bytes,
                  session_id: str | None = None) -> Path:
    """Write bytes as `<root>/workspaces/<key>/sessions/<id>.json` and return the path.

    A str shaped like a key (`slug--16hex`) is used as the key, anything else as a workspace
    folder. The id defaults to the `session_id` inside the data.
    """
    target = workspace_path_or_key
    key = target if isinstance(target, str) and _KEY_SHAPE.match(target) else workspace_key(target)
    if session_id is None:
        session_id = json.loads(data_bytes)["session_id"]
    path = Path(state_root) / "workspaces" / key / "sessions" / f"{session_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data_bytes)
    return path


# --- a shared corpus ------------------------------------------------------------------------

CORPUS_SPECS: dict[str, dict[str, Any]] = {
    "empty": {"turns": 0},
    "one_turn": {"turns": 1, "seed": 1},
    "twenty_five_turns": {"turns": 25, "seed": 2},
    "sixty_turns": {"turns": 60, "seed": 3, "response_chars": 2000},
    "all_succeeded": {"turns": 4, "statuses": ("succeeded",), "seed": 4},
    "all_failed": {"turns": 4, "statuses": ("failed",), "seed": 5},
    "all_max_iterations": {"turns": 4, "statuses": ("max_iterations",), "seed": 6},
    "all_interrupted": {"turns": 4, "statuses": ("interrupted",), "seed": 7},
    "pending_last": {"turns": 5, "pending_last": True, "seed": 8},
    "pending_only": {"turns": 1, "pending_last": True, "seed": 9},
    "unicode": {"turns": 6, "unicode": True, "seed": 10},
    "one_megabyte_response": {"turns": 1, "statuses": ("succeeded",), "response_chars": 1_000_000, "seed": 11},
    "nested_traces": {"turns": 4, "seed": 12},
    "no_traces": {"turns": 5, "trace": False, "seed": 13},
    "unknown_fields": {"turns": 4, "unknown_fields": True, "seed": 14},
}
CORPUS_WITH_UNKNOWN_FIELDS = frozenset({"unknown_fields"})


@lru_cache(maxsize=1)
def _corpus() -> tuple[tuple[str, str, bytes], ...]:
    cases = []
    for name, spec in CORPUS_SPECS.items():
        session_id = session_id_for(name)
        if name == "nested_traces":
            data = session_dict(session_id, **spec)
            for index, history_turn in enumerate(data["history"]):
                history_turn["trace"] = run_trace(500 + index, steps=6, payload_chars=3000,
                                                  status=TRACE_STATUS[history_turn["status"]])
                data["summary"]["turns"][index]["agent"]["usage"] = turn_usage(history_turn["trace"])
            cases.append((name, session_id, dumps(data)))
        else:
            cases.append((name, session_id, session_bytes(session_id, **spec)))
    return tuple(cases)


def corpus() -> dict[str, tuple[str, bytes]]:
    """name -> (session id, Fractal's bytes) for the standard round-trip corpus."""
    return {name: (session_id, data) for name, session_id, data in _corpus()}


# --- files that are wrong in one way each ---------------------------------------------------

BOM = b"\xef\xbb\xbf"


def base_session(session_id: str, seed: int = 42) -> dict:
    """One succeeded turn with a trace and usage: the base the bad inputs are made from."""
    return session_dict(session_id, turns=1, statuses=("succeeded",), seed=seed)


def _edited(session_id: str, edit) -> bytes:
    data = base_session(session_id)
    edit(data)
    return dumps(data)


def _agent(data: dict) -> dict:
    return data["summary"]["turns"][0]["agent"]


def bad_inputs(session_id: str) -> dict[str, bytes]:
    """name -> bytes of a session file that is wrong in exactly one way (Reprise's codes in test_codec)."""
    good = dumps(base_session(session_id))
    message = base_session(session_id)["summary"]["turns"][0]["user"]["message"].encode("ascii")
    return {
        "empty": b"",
        "whitespace_only": b" \n\t  \r\n",
        "bom": BOM + good,
        "invalid_utf8": good.replace(message, message[:5] + b"\xff\xfe\xc3(" + message[5:], 1),
        "truncated_json": good[: len(good) // 2],
        "nan": good.replace(b'"cost": ', b'"cost": NaN, "was_cost": ', 1),
        "infinity": good.replace(b'"files_read_count": ', b'"files_read_count": Infinity, "was": ', 1),
        "negative_infinity": good.replace(b'"output_tokens": ', b'"output_tokens": -Infinity, "was": ', 1),
        "top_level_array": dumps([base_session(session_id)]),
        "top_level_string": dumps("schema_version 1"),
        "top_level_number": b"1\n",
        "schema_version_2": good.replace(b'"schema_version": 1', b'"schema_version": 2', 1),
        "schema_version_string": good.replace(b'"schema_version": 1', b'"schema_version": "1"', 1),
        "schema_version_missing": good.replace(b'  "schema_version": 1,\n', b"", 1),
        "schema_version_true": good.replace(b'"schema_version": 1', b'"schema_version": true', 1),
        "schema_version_float": good.replace(b'"schema_version": 1', b'"schema_version": 1.0', 1),
        "duplicate_keys": good.replace(b'  "session_id": ', b'  "session_id": "decoy",\n  "session_id": ', 1),
        "summary_not_object": _edited(session_id, lambda d: d.update(summary=[])),
        "turns_not_list": _edited(session_id, lambda d: d["summary"].update(turns={})),
        "turn_missing_turn_id": _edited(session_id, lambda d: d["summary"]["turns"][0].pop("turn_id")),
        "user_message_int": _edited(session_id, lambda d: d["summary"]["turns"][0]["user"].update(message=5)),
        "agent_status_unknown": _edited(session_id, lambda d: _agent(d).update(status="done")),
        "negative_count": _edited(session_id, lambda d: _agent(d).update(files_read_count=-1)),
        "negative_cost": _edited(session_id, lambda d: _agent(d)["usage"].update(cost=-0.5)),
        "history_status_unknown": _edited(session_id, lambda d: d["history"][0].update(status="running")),
        "files_read_with_int": _edited(session_id, lambda d: d["history"][0].update(files_read=["a.py", 7])),
        "created_at_missing": _edited(session_id, lambda d: d["history"][0].pop("created_at")),
        "id_mismatch": _edited(session_id, lambda d: d.update(session_id="0" * 32)),
        "too_deep": good[:-3] + b',\n  "deep": ' + b"[" * 100_000 + b"]" * 100_000 + b"\n}\n",
    }


GATE_TIMEOUT_S = 60


def wait_for_file(path: Path, process: subprocess.Popen) -> None:
    """Wait until `path` exists (a fault point's `<gate>.reached`, a child's start file): polled, with a
    generous deadline, failing at once when `process` ended first."""
    deadline = time.monotonic() + GATE_TIMEOUT_S
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"the Reprise process ended before {path.name}: {process.communicate()}")
        assert time.monotonic() < deadline, f"Reprise never reached {path.name}"
        time.sleep(0.005)
