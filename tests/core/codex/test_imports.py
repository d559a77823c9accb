"""Codex's ledger of sessions imported from another agent (`core/sources/codex/imports.py`): the
ledger the real client wrote (tests/fixtures/codex-import/) read as (source file, thread) pairs, and
every other file or record turned into a problem naming the file and what is wrong, never an exception."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reprise.core.sources.codex.imports import LEDGER, MAX_LEDGER_BYTES, ImportedSession, imported_sessions
from reprise.core.sources.codex.layout import session_id_of

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "codex-import"
PROJECT = "/tmp/reprise-codex-import-fixture/home/.claude/projects/-tmp-reprise-codex-import-fixture-work"
SOLO, THREE, BASH = ("11111111-1111-4111-8111-111111111111", "33333333-3333-4333-8333-333333333333",
                     "55555555-5555-4555-8555-555555555555")
THREAD = "01a24fc3-00c1-7231-bf7c-46c261aee11e"


def record(**changes) -> dict:
    """A record as Codex writes one, with `changes` (a value of `...` drops the field)."""
    base = {"source_path": f"{PROJECT}/{SOLO}.jsonl", "content_sha256": "0" * 64, "imported_thread_id": THREAD,
            "imported_at": 1796634509, "source_modified_at": 1796634509249934302, "connector_names": [],
            "title": "What is in this folder? MARKsolo"}
    base.update(changes)
    return {key: value for key, value in base.items() if value is not ...}


def write_ledger(root: Path, value: object) -> Path:
    path = root / LEDGER
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def one_warning(root: Path, bad: object) -> str:
    """The message of the one problem a ledger of `bad` and a good record gives (the good one still read)."""
    write_ledger(root, {"records": [bad, record()]})
    found = imported_sessions(root)
    [problem] = found.problems
    assert (problem.code, problem.severity, problem.path) == ("bad_import_record", "warning", str(root / LEDGER))
    assert [session.thread_id for session in found.sessions] == [THREAD]
    return problem.message


def test_the_ledger_the_real_client_wrote_pairs_each_claude_session_with_its_imported_thread(tmp_path):
    shutil.copy2(FIXTURE / LEDGER, tmp_path / LEDGER)
    found = imported_sessions(tmp_path)
    assert not found.problems
    rollouts = {session_id_of(path.name): path for path in (FIXTURE / "sessions").rglob("*.jsonl")}
    assert [s.source_session_id for s in found.sessions] == [THREE, BASH, SOLO]
    for session in found.sessions:
        assert session.source_path == f"{PROJECT}/{session.source_session_id}.jsonl"
        meta = json.loads(rollouts[session.thread_id].read_text(encoding="utf-8").splitlines()[0])
        assert meta["payload"]["id"] == session.thread_id
        assert session.imported_at == datetime(2026, 12, 7, 9, 8, 29, tzinfo=UTC)
        assert session.source_modified_at is not None
        # whole seconds and nanoseconds, each read as such: the source changed just before its import
        assert abs((session.imported_at - session.source_modified_at).total_seconds()) < 1
    solo = found.source_of(THREAD)
    assert solo is not None and solo.title == "What is in this folder? MARKsolo"
    assert found.thread_of(f"{PROJECT}/{SOLO}.jsonl") == THREAD


def test_no_ledger_means_no_imports_and_no_problem(tmp_path):
    found = imported_sessions(tmp_path)
    assert found.sessions == [] and found.problems == []


def test_a_source_imported_twice_links_to_its_newest_thread(tmp_path):
    newer = "01a24fc3-00c3-73f1-95b6-f4e122059963"
    write_ledger(tmp_path, {"records": [record(), record(imported_thread_id=newer, content_sha256="1" * 64)]})
    found = imported_sessions(tmp_path)
    assert [s.thread_id for s in found.sessions] == [THREAD, newer]
    assert found.thread_of(f"{PROJECT}/{SOLO}.jsonl") == newer
    assert found.thread_of("/nowhere.jsonl") is None and found.source_of("0" * 36) is None


def test_optional_fields_may_be_null_or_missing(tmp_path):
    write_ledger(tmp_path, {"records": [record(source_modified_at=None, title=None, connector_names=...,
                                               content_sha256=...)]})
    [session] = imported_sessions(tmp_path).sessions
    assert session.source_modified_at is None and session.title is None
    write_ledger(tmp_path, {"records": [record(source_modified_at=..., title=["not", "text"])]})
    [session] = imported_sessions(tmp_path).sessions
    assert session.source_modified_at is None and session.title is None


@pytest.mark.parametrize(("data", "said"), [
    (b"{\"records\": [", "it is not JSON"),
    (b"\xff\xfe{}", "it is not JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "it is not JSON"),
    (b"[]", "it is a list, not an object"),
    (b"null", "it is null, not an object"),
    (b"{\"records\": {\"a\": 1}}", "`records` is an object, not a list"),
])
def test_a_ledger_that_is_not_one_object_of_records_is_one_problem_naming_the_file(tmp_path, data, said):
    (tmp_path / LEDGER).write_bytes(data)
    found = imported_sessions(tmp_path)
    [problem] = found.problems
    assert found.sessions == []
    assert problem.code == "bad_import_ledger" and problem.path == str(tmp_path / LEDGER)
    assert said in problem.message and problem.message.startswith("Codex's import ledger cannot be read")


def test_a_ledger_without_records_holds_no_imports(tmp_path):
    write_ledger(tmp_path, {"detected_connector_records": []})
    assert imported_sessions(tmp_path).sessions == [] and imported_sessions(tmp_path).problems == []


@pytest.mark.parametrize(("bad", "said"), [
    ("a string", "record 0: it is a string, not an object"),
    (record(source_path=...), "`source_path` is null, not a string"),
    (record(source_path=7), "`source_path` is a number, not a string"),
    (record(imported_thread_id="not-a-uuid"), "`imported_thread_id` is 'not-a-uuid', not a Codex thread id"),
    (record(imported_thread_id=THREAD.upper()), "not a Codex thread id"),
    (record(imported_thread_id=None), "`imported_thread_id` is None"),
    (record(imported_at="2026-12-07T09:08:29Z"), "`imported_at` is '2026-12-07T09:08:29Z', not a time in unix"),
    (record(imported_at=True), "`imported_at` is True"),
    (record(imported_at=1796634509.5), "`imported_at` is 1796634509.5"),
    (record(imported_at=-1), "`imported_at` is -1"),
    (record(imported_at=1 << 70), "not a time in unix seconds"),
    (record(imported_at=...), "`imported_at` is None"),
    (record(source_modified_at="yesterday"), "`source_modified_at` is 'yesterday', not a time in unix nanoseconds"),
    (record(source_modified_at={"ns": 1}), "`source_modified_at` is an object"),
])
def test_a_record_of_the_wrong_shape_is_a_warning_naming_its_index_and_the_rest_are_read(tmp_path, bad, said):
    assert said in one_warning(tmp_path, bad)


@pytest.mark.parametrize(("path", "said"), [
    ("relative/11111111-1111-4111-8111-111111111111.jsonl", "is not an absolute path"),
    ("", "is not an absolute path"),
    (f"{PROJECT}/../../../etc/passwd", "is not a canonical path"),
    (f"{PROJECT}/./{SOLO}.jsonl", "is not a canonical path"),
    (f"{PROJECT}//{SOLO}.jsonl", "is not a canonical path"),
    ("//host/share/x.jsonl", "is not a canonical path"),
    (f"{PROJECT}/", "is not a canonical path"),
    (f"{PROJECT}/{SOLO}.jsonl\0.txt", "holds control characters: '/tmp/"),
    ("/x/\x1b[31mred\x1b[0m.jsonl", "holds control characters: '/x/\\x1b[31mred\\x1b[0m.jsonl'"),
    (f"{PROJECT}/two\nlines.jsonl", "holds control characters"),
    ("/" + "a" * 5000, "is 5,001 characters long"),
])
def test_a_source_path_that_is_not_canonical_and_absolute_is_refused(tmp_path, path, said):
    message = one_warning(tmp_path, record(source_path=path))
    assert "record 0: `source_path` " in message and said in message
    assert "\n" not in message and "\x1b" not in message and "\0" not in message


def test_an_odd_name_is_kept_with_no_source_session_id():
    session = ImportedSession("/home/u/.cursor/chats/abc/store.db", THREAD, datetime(2026, 12, 7, tzinfo=UTC))
    assert session.source_session_id is None
    assert ImportedSession(f"/x/{SOLO}.json", THREAD, session.imported_at).source_session_id is None
    assert ImportedSession(f"/x/{SOLO}.jsonl", THREAD, session.imported_at).source_session_id == SOLO


def test_a_lone_surrogate_in_a_title_is_replaced_not_raised(tmp_path):
    (tmp_path / LEDGER).write_bytes(json.dumps({"records": [record(title="half \ud83d emoji")]}).encode())
    [session] = imported_sessions(tmp_path).sessions
    assert session.title == "half \ufffd emoji"


def test_a_ledger_over_the_size_limit_is_refused_without_being_read(tmp_path):
    path = tmp_path / LEDGER
    with path.open("wb") as handle:
        handle.truncate(MAX_LEDGER_BYTES + 1)            # sparse: nothing is written
    [problem] = imported_sessions(tmp_path).problems
    assert problem.code == "too_large" and problem.path == str(path)
    assert f"{MAX_LEDGER_BYTES + 1:,} bytes" in problem.message and "import ledger" in problem.message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_or_a_folder_named_like_the_ledger_is_a_problem_and_never_blocks(tmp_path):
    os.mkfifo(tmp_path / LEDGER)
    [problem] = imported_sessions(tmp_path).problems
    assert problem.code == "not_regular" and "a FIFO" in problem.message
    (tmp_path / LEDGER).unlink()
    (tmp_path / LEDGER).mkdir()
    [problem] = imported_sessions(tmp_path).problems
    assert problem.code == "not_regular" and "a directory" in problem.message


def test_a_ledger_that_links_out_of_the_codex_root_is_not_read(tmp_path):
    root, outside = tmp_path / "codex", tmp_path / "elsewhere.json"
    root.mkdir()
    outside.write_text(json.dumps({"records": [record()]}))
    (root / LEDGER).symlink_to(outside)
    found = imported_sessions(root)
    [problem] = found.problems
    assert found.sessions == [] and problem.code == "symlink_outside"
    (root / LEDGER).unlink()
    (root / LEDGER).symlink_to(root / "missing.json")
    assert imported_sessions(root).problems[0].code == "dangling_symlink"


SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=20), inner,
                                                                                          max_size=4), max_leaves=20)
FIELDS = st.fixed_dictionaries({}, optional={key: JSON | st.sampled_from([value]) for key, value in record().items()})


@settings(max_examples=200, deadline=None)
@given(ledger=JSON | st.fixed_dictionaries({"records": st.lists(FIELDS | JSON, max_size=5)}))
def test_any_json_gives_sessions_or_problems_never_an_exception(tmp_path_factory, ledger):
    root = tmp_path_factory.mktemp("ledger")
    write_ledger(root, ledger)
    found = imported_sessions(root)
    records = ledger.get("records") if isinstance(ledger, dict) else None
    if isinstance(records, list):
        assert len(found.sessions) + len(found.problems) == len(records)
    for session in found.sessions:
        assert session.source_path.startswith("/") and session.imported_at.tzinfo is UTC


def test_doctor_names_what_is_wrong_with_the_ledger_that_the_listing_passes_over(tmp_path, monkeypatch):
    """The listing and the links pass over a bad ledger record; `doctor` says what is wrong with it."""
    import os

    from reprise.core.service import Service

    home = Path(os.environ["CODEX_HOME"])
    (home / "sessions").mkdir(parents=True)
    (home / LEDGER).write_text('{"records": [{"source_path": 7}], "detected_connector_records": []}')
    report = Service.from_environment(workspace=str(tmp_path)).doctor()
    assert any(problem.path == str(home / LEDGER) for problem in [*report.problems, *report.warnings]), report
