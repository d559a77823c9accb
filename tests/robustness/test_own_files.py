"""Reprise's own files may be hostile too: an audit log, archive index, trash record, metadata
file or a workspace's AGENTS.md that is a FIFO, a directory, huge, torn, or holds lines of the
wrong JSON type never hangs Reprise nor makes it traceback; bad lines are skipped and named,
and restore refuses a damaged index."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reprise.core.archive import Archive
from reprise.core.audit import AuditLog
from reprise.core.errors import ArchiveError, RepriseError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.session_meta import SessionMeta
from reprise.core.sources.fractal.meter import agents_md_section
from reprise.core.sources.fractal.restore import restore_session
from reprise.core.sources.fractal.store import Store
from reprise.core.sources.fractal.trash import Trash
from reprise.core.sources.fractal.trim import TrimOptions, trim_session

from ..core.test_trim import OLD_NOW, build_state, write

KEY = workspace_key("/home/dev/project")
LINE_CAP = 1024 * 1024  # core.audit.MAX_AUDIT_LINE_BYTES
HANG_S = 10


def without_hanging(call, *fifos: Path):
    """Run `call` in a thread; if it blocks (on a FIFO), unblock it by opening the FIFO's other end and fail."""
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test below
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_S)
    if thread.is_alive():
        for fifo in fifos:
            for flags in (os.O_WRONLY | os.O_NONBLOCK, os.O_RDONLY | os.O_NONBLOCK):
                try:
                    os.close(os.open(fifo, flags))
                except OSError:
                    continue
        thread.join(HANG_S)
        pytest.fail(f"blocked on {', '.join(map(str, fifos))}")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "state")


def session(store: Store, session_id: str = "s1") -> SessionRef:
    ref = SessionRef(KEY, session_id, "fractal")
    write(store, ref, build_state(4, session_id=session_id))
    return ref


def good_audit_line(op: str = "rm", session_id: str = "s1") -> str:
    return json.dumps({"time": "2026-01-01T00:00:00+00:00", "op": op, "workspace_key": KEY, "session_id": session_id,
                       "options": {}, "digests": [], "counts": {}, "result": "ok", "sessions": []})


# --- audit.jsonl -------------------------------------------------------------------------------------------

def test_audit_lines_of_the_wrong_json_type_or_too_long_are_skipped_and_named(store):
    path = store.paths.audit_file(KEY)
    path.parent.mkdir(parents=True)
    lines = [good_audit_line(), "[1, 2]", '"text"', "{not json", json.dumps({"time": 5, "op": "rm"}),
             json.dumps({"time": "t", "op": "rm", "options": [1]}), "x" * (LINE_CAP + 10),
             good_audit_line("purge", "s2")]
    path.write_text("\n".join(lines) + "\n")
    log = AuditLog(store.paths)
    records = log.read([KEY])
    assert [(r.op, r.session_id) for r in records] == [("rm", "s1"), ("purge", "s2")]
    named = [problem.message for problem in log.problems]
    assert len(named) == 6 and all(str(path) in message for message in named)
    assert [f"line {n}:" in message for n, message in zip(range(2, 8), named, strict=True)] == [True] * 6


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_an_audit_log_that_is_a_fifo_or_a_directory_is_named_not_read(store, kind):
    path = store.paths.audit_file(KEY)
    path.parent.mkdir(parents=True)
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    log = AuditLog(store.paths)
    assert without_hanging(lambda: log.read([KEY]), path) == []
    assert len(log.problems) == 1 and str(path) in log.problems[0].message
    with pytest.raises(RepriseError) as raised:
        without_hanging(lambda: log.append(KEY, "rm", session_id="s1"), path)
    assert str(path) in raised.value.message


def test_a_torn_last_audit_line_is_ended_before_the_next_append(store):
    path = store.paths.audit_file(KEY)
    path.parent.mkdir(parents=True)
    path.write_text(good_audit_line() + "\n" + good_audit_line()[:40])
    log = AuditLog(store.paths)
    log.append(KEY, "purge", sessions=["s9"])
    records = log.read([KEY])
    assert [r.op for r in records] == ["rm", "purge"] and records[-1].sessions == ["s9"]
    assert len(log.problems) == 1 and "line 2" in log.problems[0].message


# --- archive index.jsonl -----------------------------------------------------------------------------------

def trimmed(store: Store) -> tuple[SessionRef, Archive, Path]:
    ref = session(store)
    archive = Archive(store.paths)
    trim_session(store, archive, ref, TrimOptions(keep_history=1), now=OLD_NOW)
    return ref, archive, store.paths.archive_dir(ref) / "index.jsonl"


@pytest.mark.parametrize("bad", ["[1]", '{"digest": 5, "op": "trim", "time": "t"}', "{torn", '"a string"',
                                 json.dumps({"digest": "a" * 64, "op": "trim", "time": "t", "anchors": "x"})])
def test_restore_refuses_a_damaged_index_naming_the_line_and_changes_nothing(store, bad):
    ref, archive, index = trimmed(store)
    lines = index.read_text().splitlines()
    index.write_text("\n".join([lines[0], bad, *lines[1:]]) + "\n")
    data = store.paths.session_file(ref).read_bytes()
    assert [entry.op for entry in archive.entries(ref)] == ["trim-original", "trim"]
    with pytest.raises(ArchiveError) as raised:
        restore_session(store, archive, ref, now=OLD_NOW)
    assert f"{index} line 2" in raised.value.message and "nothing was restored" in raised.value.message
    assert store.paths.session_file(ref).read_bytes() == data


def test_a_torn_last_index_line_is_a_crash_not_damage(store):
    ref, archive, index = trimmed(store)
    with index.open("a") as handle:
        handle.write('{"digest": "ab')
    restore_session(store, archive, ref, now=OLD_NOW)


@pytest.mark.parametrize("kind", ["fifo", "directory", "huge_line"])
def test_an_index_that_is_a_fifo_a_directory_or_one_huge_line_is_refused_clearly(store, kind):
    ref, archive, index = trimmed(store)
    index.unlink()
    if kind == "fifo":
        os.mkfifo(index)
    elif kind == "directory":
        index.mkdir()
    else:
        index.write_bytes(b"[" * (2 * 1024 * 1024) + b"\n")
    assert without_hanging(lambda: archive.entries(ref), index) == []
    with pytest.raises(ArchiveError) as raised:
        without_hanging(lambda: restore_session(store, archive, ref, now=OLD_NOW), index)
    assert str(index) in raised.value.message


# --- trash records and metadata --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "directory", "wrong_types", "huge"])
def test_trash_listing_survives_a_hostile_record_and_meta_file(store, kind):
    ref = session(store)
    store.write_meta(ref, SessionMeta(title="kept"))
    trash = Trash(store)
    trash.remove(ref, now=OLD_NOW)
    record, meta = store.paths.trash_record_file(ref), store.paths.trash_meta_file(ref)
    for path in (record, meta):
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "directory":
            path.mkdir()
        elif kind == "wrong_types":
            path.write_text(json.dumps({"trashed_ts": "yesterday", "trashed_at": 5, "from": [1], "title": {"a": 1}}))
        else:
            with path.open("wb") as handle:
                handle.truncate(64 * 1024 * 1024)
    entries = without_hanging(lambda: trash.entries([KEY]), record, meta)
    assert [entry.ref for entry in entries] == [ref]
    assert entries[0].title is None and entries[0].trashed_at is None and entries[0].origin is None


@pytest.mark.parametrize("kind", ["fifo", "directory", "wrong_types", "truncated"])
def test_rename_refuses_a_hostile_meta_file_and_leaves_it(store, kind):
    ref = session(store)
    meta = store.paths.meta_file(ref)
    meta.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(meta)
    elif kind == "directory":
        meta.mkdir()
    elif kind == "wrong_types":
        meta.write_text('{"title": ["a"], "pinned": "maybe"}')
    else:
        meta.write_text('{"title": "half')
    assert without_hanging(lambda: store.read_meta(ref), meta) == SessionMeta()
    with pytest.raises(RepriseError) as raised:
        without_hanging(lambda: store.update_meta(ref, lambda m: setattr(m, "title", "new")), meta)
    assert str(meta) in raised.value.message and "left as it is" in raised.value.message
    assert meta.is_fifo() or meta.is_dir() or "new" not in meta.read_text()


# --- AGENTS.md in a hostile repository -----------------------------------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "directory", "huge"])
def test_the_meter_never_blocks_on_nor_swallows_a_hostile_agents_md(tmp_path, kind):
    path = tmp_path / "AGENTS.md"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(b"rule\n" * (3 * 1024 * 1024))
    section, _full, note = without_hanging(lambda: agents_md_section(tmp_path), path)
    if kind == "huge":
        assert note and "cut at 20,000" in note and len(section) < 100_000
    else:
        assert section == "" and note and "cannot be read" in note and "regular file" in note


def test_the_line_cap_of_the_test_is_the_audit_logs():
    from reprise.core.audit import MAX_AUDIT_LINE_BYTES

    assert MAX_AUDIT_LINE_BYTES == LINE_CAP


def test_doctor_names_each_damaged_line_of_the_audit_log_and_the_archive_index(tmp_path):
    from reprise.core import config
    from reprise.core.service import Service

    workspace = tmp_path / "project"
    workspace.mkdir()
    service = Service(config.load(state_dir=str(tmp_path / "state")), workspace=workspace, cache=tmp_path / "cache")
    store = service.sources["fractal"].store
    ref = SessionRef(service.workspace_key, "s1", "fractal")
    write(store, ref, build_state(4, session_id="s1"))
    trim_session(store, service.sources["fractal"].archive, ref, TrimOptions(keep_history=1), now=OLD_NOW)
    audit, index = store.paths.audit_file(ref.workspace_key), store.paths.archive_dir(ref) / "index.jsonl"
    with audit.open("a") as handle:
        handle.write("[1]\n")
    with index.open("a") as handle:
        handle.write('{"digest": 7}\n')
    messages = [problem.message for problem in service.doctor().problems]
    assert any(f"{audit} line 2" in message for message in messages), messages
    assert any(f"{index} line 3" in message for message in messages), messages


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12), st.booleans(),
       st.integers(min_value=1, max_value=30))
def test_streamed_lines_are_the_files_lines_with_each_over_the_cap_blanked(tmp_path_factory, lines, ended, cap):
    from reprise.core import rooted

    folder = tmp_path_factory.mktemp("lines")
    data = b"\n".join(lines) + (b"\n" if ended and lines else b"")
    (folder / "log").write_bytes(data)
    old_chunk, rooted._CHUNK = rooted._CHUNK, 7  # lines spanning reads
    try:
        got = list(rooted.Root(folder).lines(folder / "log", cap))
    finally:
        rooted._CHUNK = old_chunk
    pieces = data.split(b"\n")
    expected = [(n + 1, piece if len(piece) <= cap else None, True) for n, piece in enumerate(pieces[:-1])]
    if pieces[-1]:
        expected.append((len(pieces), pieces[-1] if len(pieces[-1]) <= cap else None, False))
    assert [(line.number, line.data, line.terminated) for line in got] == expected


def test_reprise_audit_names_the_lines_it_skipped_on_stderr_and_in_json(tmp_path, monkeypatch, capsys):
    from reprise.tui import cli

    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    store = Store(tmp_path / "state")
    path = store.paths.audit_file(workspace_key(folder))
    path.parent.mkdir(parents=True)
    path.write_text(good_audit_line() + "\n[1, 2]\n")
    state = ["--state-dir", str(tmp_path / "state")]
    assert cli.main(["audit", *state]) == 0
    out, err = capsys.readouterr()
    assert "rm" in out and f"{path} line 2: " in err
    assert cli.main(["audit", "--json", *state]) == 0
    document = json.loads(capsys.readouterr().out)
    assert len(document["audit"]) == 1
    assert [problem["code"] for problem in document["problems"]] == ["bad_audit_line"]
    assert f"{path} line 2: " in document["problems"][0]["message"]


def test_the_meter_never_blocks_on_a_workspace_fractal_config_that_is_a_fifo(tmp_path):
    from reprise.core.sources.fractal.meter import fractal_configured_model

    (tmp_path / ".fractal").mkdir()
    fifo = tmp_path / ".fractal" / "config.toml"
    os.mkfifo(fifo)
    env = {"XDG_CONFIG_HOME": str(tmp_path / "no-global-config")}
    assert without_hanging(lambda: fractal_configured_model(tmp_path, env), fifo) is None
    fifo.unlink()
    fifo.write_text('active_model = "gpt-5-mini"\n')
    assert fractal_configured_model(tmp_path, env) == "gpt-5-mini"
