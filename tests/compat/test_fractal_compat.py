"""Compatibility with the real Fractal (fractal-rlm, run from its side venv), both directions:
files Reprise writes load in Fractal unchanged, files Fractal writes read cleanly in Reprise,
both compute the same workspace keys and summaries, and both reject the same broken files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprise.core import paths
from reprise.core.paths import SessionRef
from reprise.core.service import Service
from reprise.core.sources.fractal.codec import decode, encode, fractal_would_drop
from reprise.core.sources.fractal.models import SessionState
from reprise.core.sources.fractal.store import Store
from reprise.core.sources.fractal.summary import render_summary
from tests import factories

pytestmark = pytest.mark.compat

CORPUS = factories.corpus()
ERROR_CASES = ("empty", "whitespace_only", "bom", "invalid_utf8", "truncated_json", "nan", "infinity",
               "negative_infinity", "top_level_array", "top_level_string", "top_level_number", "schema_version_2",
               "schema_version_string", "schema_version_missing", "summary_not_object", "turns_not_list",
               "turn_missing_turn_id", "user_message_int", "agent_status_unknown", "negative_count",
               "negative_cost", "history_status_unknown", "files_read_with_int", "created_at_missing",
               "id_mismatch", "too_deep")
WARNING_CASES = ("schema_version_true", "schema_version_float", "duplicate_keys")


@pytest.fixture
def workspace(tmp_path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def fractal_bytes(result: dict, field: str = "data") -> bytes:
    assert "raised" not in result, result.get("traceback")
    return result[field].encode("latin-1")


def rejected_by_fractal(result: dict) -> bool:
    """Fractal raised out of the loader, or warned and fell back to an empty session."""
    return "raised" in result or (len(result["warnings"]) == 1 and result["turns"] == 0)


# --- Reprise -> Fractal -----------------------------------------------------------------------

def test_new_session_from_reprise_loads_in_fractal_without_warning_and_resaves_identically(fractal, workspace,
                                                                                          isolated_paths):
    service = Service.from_environment(workspace=str(workspace))
    ref = service.new_session(title="compat")
    written = service.sources["fractal"].store.paths.session_file(ref).read_bytes()
    result = fractal.one("save", workspace=str(workspace), session_id=ref.session_id)
    assert result["warnings"] == [] and result["turns"] == 0
    assert fractal_bytes(result) == written
    listed = fractal.one("list_sessions", workspace=str(workspace))["sessions"]
    assert [(s["session_id"], s["turn_count"]) for s in listed] == [(ref.session_id, 0)]


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_state_saved_by_reprise_loads_in_fractal_without_warning(fractal, workspace, isolated_paths, name):
    session_id, data = CORPUS[name]
    state = decode(data, path="x.json", expected_id=session_id).state
    store = Store(isolated_paths)
    ref = SessionRef(paths.workspace_key(workspace), session_id, "fractal")
    store.save(ref, state, expected=None)
    written = store.paths.session_file(ref).read_bytes()
    result = fractal.one("save", workspace=str(workspace), session_id=session_id)
    assert result["warnings"] == []
    assert result["turns"] == len(state.turns)
    if name in factories.CORPUS_WITH_UNKNOWN_FIELDS:
        # Fractal drops exactly the unknown fields, as fractal_would_drop predicted
        assert fractal_would_drop(state) == ["fields Fractal does not know"]
        spec = {**factories.CORPUS_SPECS[name], "unknown_fields": False}
        assert fractal_bytes(result) == factories.session_bytes(session_id, **spec)
    else:
        assert fractal_bytes(result) == written


def test_history_beyond_twenty_saved_by_reprise_loads_and_fractal_keeps_the_last_twenty(fractal, workspace,
                                                                                     isolated_paths):
    session_id = factories.session_id_for("long-history")
    state = SessionState.model_validate(factories.session_dict(session_id, turns=25, history_limit=None, seed=30))
    assert fractal_would_drop(state) == ["5 history turns beyond Fractal's 20"]
    Store(isolated_paths).save(SessionRef(paths.workspace_key(workspace), session_id, "fractal"), state, expected=None)
    result = fractal.one("save", workspace=str(workspace), session_id=session_id)
    assert result["warnings"] == [] and result["turns"] == 25 and result["history"] == 20
    assert fractal_bytes(result) == factories.session_bytes(session_id, turns=25, history_limit=20, seed=30)


def test_fractal_drops_unknown_fields_inside_a_trace(fractal, workspace, isolated_paths):
    session_id = factories.session_id_for("trace-extra")
    data = factories.session_dict(session_id, turns=1, statuses=("succeeded",), seed=31)
    clean = factories.dumps(data)
    data["history"][0]["trace"]["steps"][0]["thinking_tokens"] = 812
    factories.write_session(isolated_paths, workspace, factories.dumps(data))
    result = fractal.one("save", workspace=str(workspace), session_id=session_id)
    assert result["warnings"] == []
    assert fractal_bytes(result) == clean
    state = decode(factories.dumps(data), path="x.json", expected_id=session_id).state
    assert fractal_would_drop(state) == ["fields Fractal does not know"]  # so Reprise archives first
    assert fractal_would_drop(decode(clean, path="x.json", expected_id=session_id).state) == []


def test_the_trace_mirror_accepts_every_trace_fractal_writes(fractal, fractal_sessions):
    for session_id, raw, _turns in fractal_sessions.values():
        state = decode(raw, path="x.json", expected_id=session_id).state
        assert fractal_would_drop(state) == []


def test_fractal_rejects_a_trace_that_is_not_a_run_trace_which_reprise_accepts(fractal, workspace, isolated_paths):
    session_id = factories.session_id_for("odd-trace")
    data = factories.session_dict(session_id, turns=1, statuses=("succeeded",), seed=32)
    data["history"][0]["trace"] = {"note": "not a RunTrace"}
    raw = factories.dumps(data)
    factories.write_session(isolated_paths, workspace, raw)
    assert rejected_by_fractal(fractal.one("load", workspace=str(workspace), session_id=session_id))
    decoded = decode(raw, path="x.json", expected_id=session_id)
    assert decoded.problem is None and decoded.rewrite_safe  # Reprise treats trace as opaque JSON
    reasons = fractal_would_drop(decoded.state)  # so it archives the file before handing it over
    assert any("whole session" in reason for reason in reasons)


# --- Fractal -> Reprise -----------------------------------------------------------------------

def fractal_turn(status: str | None, index: int, unicode: bool = False) -> dict:
    """One add_user_message (+ add_agent_turn unless pending) with the fields Fractal's runtime passes."""
    message = f"turn {index}: " + (factories.UNICODE_WORDS[index % len(factories.UNICODE_WORDS)] * 3 if unicode
                                  else "please fix the failing test")
    if status is None:
        return {"message": message, "status": None}
    answered = status in ("succeeded", "max_iterations")
    error = {"succeeded": None, "max_iterations": factories.MAX_ITERATIONS_ERROR,
             "interrupted": factories.INTERRUPTED_ERROR, "failed": factories.FAILED_ERRORS[0]}[status]
    return {
        "message": message,
        "status": status,
        "response": (f"réponse {index} — 完成 🚀 \u200fשלום\u200f" if unicode else f"done {index}") if answered else "",
        "changed_files": [f"src/m{index}.py"] if answered else None,
        "files_read": [f"src/r{index}_{n}.py" for n in range(index % 3)],
        "commands_run": ["pytest -q"] * (index % 2),
        "error": error,
        "trace": factories.run_trace(700 + index, steps=1 + index % 3, status=factories.TRACE_STATUS[status],
                                     last_step_unmetered=status == "interrupted") if index % 4 != 3 else None,
    }


FRACTAL_SESSIONS = {
    "each_status_three_times": [fractal_turn(s, i) for i, s in enumerate(factories.AGENT_STATUSES * 3)],
    "pending_last": [fractal_turn(s, i) for i, s in enumerate(factories.AGENT_STATUSES)] + [fractal_turn(None, 4)],
    "pending_only": [fractal_turn(None, 0)],
    "unicode": [fractal_turn(s, i, unicode=True) for i, s in enumerate(factories.AGENT_STATUSES * 2)],
    "twenty_three_turns": [fractal_turn("succeeded", i) for i in range(23)],
}


@pytest.fixture
def fractal_sessions(fractal, workspace, isolated_paths) -> dict[str, tuple[str, bytes, dict]]:
    """name -> (session id, the file Fractal wrote, the turns it was given)."""
    results = fractal.run([{"op": "write_turns", "workspace": str(workspace), "turns": turns}
                           for turns in FRACTAL_SESSIONS.values()])
    return {name: (result["session_id"], fractal_bytes(result), turns)
            for (name, turns), result in zip(FRACTAL_SESSIONS.items(), results, strict=True)}


def test_sessions_fractal_writes_decode_without_problem_or_warning_and_reencode_identically(
        fractal_sessions, workspace, isolated_paths):
    store = Store(isolated_paths)
    for name, (session_id, data, turns) in fractal_sessions.items():
        decoded = decode(data, path=name, expected_id=session_id)
        assert decoded.problem is None, name
        assert decoded.warnings == [], name
        assert encode(decoded.state) == data, name
        assert len(decoded.state.turns) == len(turns)
        assert len(decoded.state.history) == min(len(turns), 20)
        loaded = store.load(SessionRef(paths.workspace_key(workspace), session_id, "fractal"))
        assert loaded.data == data and loaded.warnings == []


def test_fractal_writes_turns_the_way_the_factories_model_them(fractal_sessions):
    """Per-status fields, counts and usage from the trace: what factories.turn_pair assumes."""
    session_id, data, turns = fractal_sessions["each_status_three_times"]
    state = json.loads(data)
    for given, summary_turn, history_turn in zip(turns, state["summary"]["turns"], state["history"], strict=True):
        agent = summary_turn["agent"]
        assert agent["status"] == history_turn["status"] == given["status"]
        assert agent["files_read_count"] == len(history_turn["files_read"])
        assert agent["files_changed_count"] == len(history_turn["files_modified"])
        assert agent["commands_run_count"] == len(history_turn["commands_run"])
        assert agent["usage"] == factories.turn_usage(given["trace"])
        assert history_turn["trace"] == given["trace"]
        assert list(summary_turn) == ["turn_id", "user", "agent"]
        assert list(history_turn) == list(factories.session_dict("x", turns=1)["history"][0])


def test_render_summary_equals_fractals_summary(fractal, fractal_sessions, workspace):
    results = fractal.run([{"op": "summary", "workspace": str(workspace), "session_id": session_id}
                           for session_id, _, _ in fractal_sessions.values()])
    for (name, (session_id, data, _)), result in zip(fractal_sessions.items(), results, strict=True):
        assert result["warnings"] == [], name
        state = decode(data, path=name, expected_id=session_id).state
        assert render_summary(state.summary) == result["summary"], name


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_render_summary_of_corpus_file_equals_fractals_summary(fractal, workspace, isolated_paths, name):
    session_id, data = CORPUS[name]
    factories.write_session(isolated_paths, workspace, data)
    result = fractal.one("summary", workspace=str(workspace), session_id=session_id)
    assert result["warnings"] == []
    assert render_summary(decode(data, path=name, expected_id=session_id).state.summary) == result["summary"]


def test_factory_traces_validate_as_run_trace_and_dump_identically(fractal):
    traces = [factories.run_trace(seed, steps=seed % 4, status=status, last_step_unmetered=bool(seed % 2))
              for seed, status in enumerate(("completed", "max_iterations", "error", "in_progress", "completed"))]
    results = fractal.run([{"op": "trace_dump", "trace": trace} for trace in traces]
                          + [{"op": "turn_usage", "trace": trace} for trace in traces])
    for trace, result in zip(traces, results[:len(traces)], strict=True):
        assert json.dumps(result["dump"]) == json.dumps(trace)
    for trace, result in zip(traces, results[len(traces):], strict=True):
        assert result["usage"] == factories.turn_usage(trace)


def workspace_paths(tmp_path: Path) -> dict[str, str]:
    normal = tmp_path / "src" / "my-project_1.2"
    normal.mkdir(parents=True)
    link = tmp_path / "linked"
    link.symlink_to(normal, target_is_directory=True)
    unicode = tmp_path / "Café Ünïcode-ƒ"
    cjk = tmp_path / "项目" / "测试"
    spaces = tmp_path / "my project" / " with  spaces "
    long = tmp_path
    while len(str(long)) < 300:
        long = long / ("segment-" + "x" * 40)
    for folder in (unicode, cjk, spaces, long):
        folder.mkdir(parents=True)
    return {"normal": str(normal), "symlinked": str(link), "symlinked_child": str(link / "sub"),
            "unicode": str(unicode), "cjk_only": str(cjk), "long_300": str(long), "root": "/",
            "spaces": str(spaces), "missing": str(tmp_path / "not" / "there"), "dotdot": str(normal / ".." / "x")}


def test_workspace_key_equals_fractals(fractal, tmp_path):
    cases = workspace_paths(tmp_path)
    assert len(cases["long_300"]) >= 300
    results = fractal.run([{"op": "workspace_key", "path": path} for path in cases.values()])
    for (name, path), result in zip(cases.items(), results, strict=True):
        assert paths.workspace_key(path) == result["key"], name
        assert factories.workspace_key(path) == result["key"], name
        paths.validate_workspace_key(result["key"])
    keys = dict(zip(cases, (r["key"] for r in results), strict=True))
    assert keys["symlinked"] == keys["normal"]
    assert keys["root"].startswith("workspace--")
    assert len(keys["long_300"].rpartition("--")[0]) == 80


def test_fractal_lists_sessions_reprise_wrote(fractal, workspace, isolated_paths):
    service = Service.from_environment(workspace=str(workspace))
    first = service.new_session()
    session_id, data = CORPUS["pending_last"]
    factories.write_session(isolated_paths, paths.workspace_key(workspace), data)
    listed = fractal.one("list_sessions", workspace=str(workspace))["sessions"]
    assert sorted((s["session_id"], s["turn_count"]) for s in listed) == sorted([(first.session_id, 0),
                                                                                  (session_id, 5)])


# --- problems agree ---------------------------------------------------------------------------

@pytest.fixture
def bad_files(fractal, tmp_path, isolated_paths) -> dict[str, tuple[bytes, dict, Path]]:
    """name -> (bytes, Fractal's load result, workspace) for every bad input, each in its own workspace."""
    session_id = factories.session_id_for("codec")
    cases = factories.bad_inputs(session_id)
    commands = []
    folders = {}
    for name, data in cases.items():
        folder = tmp_path / "bad" / name
        folder.mkdir(parents=True)
        factories.write_session(isolated_paths, folder, data, session_id=session_id)
        folders[name] = folder
        commands.append({"op": "load", "workspace": str(folder), "session_id": session_id})
    results = fractal.run(commands)
    return {name: (cases[name], result, folders[name]) for name, result in zip(cases, results, strict=True)}


def test_bad_cases_are_all_classified(bad_files):
    assert set(bad_files) == set(ERROR_CASES) | set(WARNING_CASES)


def test_every_file_fractal_rejects_is_an_error_problem_in_reprise(bad_files):
    session_id = factories.session_id_for("codec")
    for name in ERROR_CASES:
        data, result, _ = bad_files[name]
        assert rejected_by_fractal(result), name
        decoded = decode(data, path=name, expected_id=session_id)
        assert decoded.state is None and decoded.problem.severity == "error", name


def test_files_fractal_loads_as_is_load_in_reprise_with_a_warning(fractal, bad_files, isolated_paths):
    session_id = factories.session_id_for("codec")
    store = Store(isolated_paths)
    for name in WARNING_CASES:
        data, result, folder = bad_files[name]
        assert result["warnings"] == [] and result["turns"] == 1 and result["session_id"] == session_id, name
        loaded = store.load(SessionRef(paths.workspace_key(folder), session_id, "fractal"))
        assert [w.severity for w in loaded.warnings] == ["warning"], name
        assert encode(loaded.state) == fractal_bytes(result, "dump"), name
