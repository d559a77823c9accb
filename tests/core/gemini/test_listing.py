"""Gemini CLI's listing against the real 0.61.0 stores in tests/fixtures/gemini/: a row per session
(its resume's stub joined to it), the mapped folders, titles, turns, context, a rewound session, the
whole-file `.json` sessions of 0.38.2, and a grown file read on from where the last read ended."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from reprise.core.catalog import Catalog
from reprise.core.paths import OwnPaths, SessionRef, workspace_key
from reprise.core.rows import SessionRow
from reprise.core.sources.gemini.listing import GeminiListing
from reprise.core.sources.gemini.source import GeminiSource
from reprise.core.sources.workspaces import UNMAPPED_PREFIX

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "gemini"
ALPHA = "/tmp/reprise-gemini-fixture/work/alpha"
BETA = "/tmp/reprise-gemini-fixture/work/beta"
RESUMED = "e9b105e8-2eb0-4bfb-b1f9-a0e942bfdde1"
ONE_TURN = "0b721226-5368-4866-8a0c-9350b728f142"
SHELL = "d6887d59-8d03-46d5-9d60-545549f8e303"
OTHER = "bd287626"
REWOUND = "db0bcc85-3f94-440a-b21f-37bd301cf79f"


def store_copy(name: str, tmp_path: Path) -> Path:
    """A copy of a fixture's `.gemini` folder (the tests may change it; the fixture never)."""
    target = tmp_path / name
    shutil.copytree(FIXTURES / name / "home" / ".gemini", target)
    return target


def listing_of(root: Path, tmp_path: Path) -> GeminiListing:
    return GeminiListing([root], OwnPaths(tmp_path / "data", "gemini"))


def rows_of(listing: GeminiListing, tmp_path: Path, cache: str = "cache") -> dict[str, SessionRow]:
    catalog = Catalog([listing], tmp_path / cache)
    rows = catalog.refresh()
    catalog.load_details(rows)
    catalog.close()
    return {row.id: row for row in rows}


def test_each_session_of_the_real_store_is_one_row_under_its_mapped_folder(tmp_path):
    rows = rows_of(listing_of(store_copy("store-0.61.0", tmp_path), tmp_path), tmp_path)
    assert {row_id[:8] for row_id in rows} == {RESUMED[:8], ONE_TURN[:8], SHELL[:8], OTHER}
    resumed = rows[RESUMED]
    assert resumed.file_id == "session-2026-12-06T19-46-e9b105e8.jsonl"   # the first file, not the stub
    assert (resumed.workspace_key, resumed.fields.workspace_path) == (workspace_key(ALPHA), ALPHA)
    assert resumed.turns == 3 and resumed.fields.first_message == "Start a plan MARKfirst"
    assert resumed.fields.last_message == "Finish the plan MARKthird"
    assert resumed.fields.last_status == "succeeded" and resumed.fields.model == "gemini-3.8-flash"
    assert resumed.context_tokens == 7882 and not resumed.hidden_by_agent and resumed.fields.warning is None
    assert resumed.context_window == 1_048_576   # Gemini CLI's tokenLimit of gemini-3.8-flash
    assert resumed.fields.last_activity == "2026-12-06T19:48:36.864Z"
    beta = next(row for row_id, row in rows.items() if row_id.startswith(OTHER))
    assert beta.fields.workspace_path == BETA and beta.turns == 1
    shell = rows[SHELL]
    assert shell.turns == 1 and shell.fields.last_message.startswith("Please RUN") and shell.context_tokens == 9501


def test_the_stub_joins_its_session_s_stat(tmp_path):
    root = store_copy("store-0.61.0", tmp_path)
    listing = listing_of(root, tmp_path)
    chats = root / "tmp" / "alpha" / "chats"
    stats = listing.file_stats(str(chats)).stats
    first, stub = chats / "session-2026-12-06T19-46-e9b105e8.jsonl", chats / "session-2026-12-06T19-48-e9b105e8.jsonl"
    assert "session-2026-12-06T19-48-e9b105e8.jsonl" not in stats
    assert stats[first.name] == (first.stat().st_size, max(first.stat().st_mtime_ns, stub.stat().st_mtime_ns))


def test_while_the_folder_holds_its_files_only_the_rows_files_are_stat_ed(tmp_path, monkeypatch):
    """The next scan of an unchanged folder stats each row's file (an append is seen) and takes its
    stubs' stats from the names stored; a file added or removed changes the folder: read again."""
    import os

    from reprise.core import folder_scan

    monkeypatch.setattr(folder_scan, "_RACY_NS", 0)   # the folder counts as settled at once
    root = store_copy("store-0.61.0", tmp_path)
    listing = listing_of(root, tmp_path)
    chats = root / "tmp" / "alpha" / "chats"
    first, stub = chats / "session-2026-12-06T19-46-e9b105e8.jsonl", chats / "session-2026-12-06T19-48-e9b105e8.jsonl"
    scanned = listing.file_stats(str(chats))
    assert scanned.names is not None and scanned.names.stamp is not None
    assert scanned.names.names["\0\0stubs"] == f"{first.name}\0{stub.stat().st_mtime_ns}"   # its stub's mtime
    assert stub.name not in scanned.names.names
    stat_ed: list[str] = []
    real_stat = os.stat

    def counted(path, *args, **kwargs):
        stat_ed.append(str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counted)
    with first.open("a") as handle:
        handle.write(json.dumps({"$set": {"lastUpdated": "2026-12-06T20:00:00.000Z"}}) + "\n")
    held = listing.file_stats(str(chats), scanned.names)
    assert held.names is scanned.names and stub.name not in stat_ed and first.name in stat_ed
    assert held.stats == listing.file_stats(str(chats)).stats   # what a whole scan gives
    assert held.stats[first.name][0] == first.stat().st_size
    stub.unlink()
    again = listing.file_stats(str(chats), scanned.names)
    assert again.names is not scanned.names and first.name in again.stats
    assert again.stats[first.name] == (first.stat().st_size, first.stat().st_mtime_ns)


def test_a_warm_listing_s_rows_name_their_files(tmp_path, monkeypatch):
    """The catalog builds a row's path from the names stored with its folder: each is its file's."""
    from reprise.core import folder_scan

    monkeypatch.setattr(folder_scan, "_RACY_NS", 0)
    root = store_copy("store-0.61.0", tmp_path)
    catalog = Catalog([listing_of(root, tmp_path)], tmp_path / "cache")
    cold = {row.id: row.path for row in catalog.refresh()}
    catalog.close()
    catalog = Catalog([listing_of(root, tmp_path)], tmp_path / "cache")
    warm = {row.id: row.path for row in catalog.refresh()}
    catalog.close()
    assert warm == cold
    assert all(Path(path).is_file() and Path(path).name.startswith("session-") for path in warm.values())


def test_the_source_opens_reads_and_resumes_a_session_by_its_id(tmp_path, settings_for):
    root = store_copy("store-0.61.0", tmp_path)
    source = GeminiSource([root], settings_for(), tmp_path / "data")
    ref = SessionRef(workspace_key(ALPHA), RESUMED, "gemini")
    opened = source.open(ref)
    assert [turn.user_message for turn in opened.transcript.turns] == [
        "Start a plan MARKfirst", "Continue the plan MARKsecond", "Finish the plan MARKthird"]
    assert [turn.reply for turn in opened.transcript.turns][-1] == "Noted MARKthird; my answer word is REPLYthird."
    assert opened.path.name == "session-2026-12-06T19-46-e9b105e8.jsonl" and opened.warnings == []
    assert source.resume_argv(ref, ALPHA) == ["gemini", "--resume", RESUMED]
    shell = source.open(SessionRef(workspace_key(ALPHA), SHELL, "gemini")).transcript.turns[0]
    assert [call.name for call in shell.tool_calls] == ["run_shell_command"]
    assert shell.commands[0].command == "printf 'OUTWORD%s\\n' 42 && echo second line"
    assert "OUTWORD42" in (shell.tool_calls[0].result or "") and shell.reply.endswith("REPLYtoolresult.")
    assert shell.usage is not None and shell.usage.iterations == 2 and shell.usage.context_tokens == 9501


def test_a_rewound_session_shows_what_the_client_would_send_and_says_it_was_rewound(tmp_path, settings_for):
    root = store_copy("rewind-0.61.0", tmp_path)
    [row] = rows_of(listing_of(root, tmp_path), tmp_path).values()
    assert row.id == REWOUND and row.turns == 2
    assert (row.fields.first_message, row.fields.last_message) == ("First step MARKkeep", "After the rewind MARKafter")
    source = GeminiSource([root], settings_for(), tmp_path / "data")
    opened = source.open(SessionRef(row.workspace_key, REWOUND, "gemini"))
    assert [turn.user_message for turn in opened.transcript.turns] == ["First step MARKkeep",
                                                                      "After the rewind MARKafter"]
    assert any("Rewound" in note for note in opened.transcript.notes)


def test_whole_file_sessions_of_an_older_client_are_listed_and_read(tmp_path, settings_for):
    root = store_copy("legacy-0.38.2", tmp_path)
    rows = rows_of(listing_of(root, tmp_path), tmp_path)
    assert len(rows) == 2 and all(row.problem_code is None for row in rows.values())
    by_turns = sorted(rows.values(), key=lambda row: row.turns)
    assert [row.turns for row in by_turns] == [1, 2]
    assert by_turns[1].fields.first_message == "Legacy start MARKold"
    assert by_turns[1].fields.last_message == "Legacy again MARKolder"
    source = GeminiSource([root], settings_for(), tmp_path / "data")
    shell = source.open(SessionRef(by_turns[0].workspace_key, by_turns[0].id, "gemini")).transcript.turns[0]
    assert shell.commands and "OUTWORD42" in (shell.tool_calls[0].result or "")


def test_a_project_the_map_does_not_name_is_listed_under_an_unknown_folder_with_its_slug(tmp_path):
    root = store_copy("store-0.61.0", tmp_path)
    (root / "tmp" / "beta" / ".project_root").unlink()
    (root / "projects.json").write_text(json.dumps({"projects": {ALPHA: "alpha"}}), encoding="utf-8")
    rows = rows_of(listing_of(root, tmp_path), tmp_path)
    beta = next(row for row_id, row in rows.items() if row_id.startswith(OTHER))
    assert beta.workspace_key.startswith(f"{UNMAPPED_PREFIX}beta-in-") and beta.turns == 1
    assert beta.fields.workspace_path is None and "names no folder" in (beta.fields.warning or "")


@pytest.mark.parametrize("registry", [
    {"projects": {"relative/folder": "beta"}},
    {"projects": {"/x/../../etc": "beta"}},
    {"projects": {"/ok": "../alpha"}},
    {"projects": {"/ok\u0000no": "beta"}},
    {"projects": ["not", "an", "object"]},
    "not json at all",
])
def test_a_hostile_registry_maps_nothing_outside_and_drops_no_session(tmp_path, registry):
    root = store_copy("store-0.61.0", tmp_path)
    (root / "tmp" / "beta" / ".project_root").unlink()
    text = registry if isinstance(registry, str) else json.dumps(registry)
    (root / "projects.json").write_text(text, encoding="utf-8")
    rows = rows_of(listing_of(root, tmp_path), tmp_path)
    assert len(rows) == 4
    beta = next(row for row_id, row in rows.items() if row_id.startswith(OTHER))
    assert beta.workspace_key.startswith(UNMAPPED_PREFIX) and beta.fields.workspace_path is None
    assert rows[RESUMED].fields.workspace_path == ALPHA   # its marker still names it


def test_one_slug_the_client_would_not_write_makes_the_whole_registry_empty_as_for_the_client(tmp_path):
    """Gemini CLI checks projects.json against its schema (every slug `^[a-z0-9-]+$`) and reads a file
    that fails as empty: a project the file names is then unmapped for Reprise too."""
    root = store_copy("store-0.61.0", tmp_path)
    (root / "tmp" / "beta" / ".project_root").unlink()
    (root / "projects.json").write_text(json.dumps({"projects": {BETA: "beta", "/elsewhere": "Not A Slug"}}))
    listing = listing_of(root, tmp_path)
    assert listing.folder_of_group(str(root / "tmp" / "beta" / "chats")) is None
    assert "reads the whole file as empty" in (listing.registry(listing.roots[0]).problem or "")
    (root / "projects.json").write_text(json.dumps({"projects": {BETA: "beta"}}))
    assert listing_of(root, tmp_path).folder_of_group(str(root / "tmp" / "beta" / "chats")) == BETA


def test_a_slug_folder_with_dots_or_a_link_is_not_a_project(tmp_path):
    root = store_copy("store-0.61.0", tmp_path)
    outside = tmp_path / "outside"
    (outside / "chats").mkdir(parents=True)
    (root / "tmp" / "linked").symlink_to(outside)
    listing = listing_of(root, tmp_path)
    assert [Path(group).parent.name for group in listing.groups()] == ["alpha", "beta"]


def test_corrupt_lines_wrong_types_and_odd_ids_are_warned_about_and_the_rest_is_listed(tmp_path):
    root = store_copy("store-0.61.0", tmp_path)
    chats = root / "tmp" / "beta" / "chats"
    path = next(chats.iterdir())
    with path.open("ab") as handle:
        handle.write(b'{"id": 5, "type": "user"}\n{not json\n[1,2]\n"text"\n{"$set": null}\n')
        handle.write(b'{"id":"x","type":"user","content":[{"text":"Later MARKlater"}]}\n')
        handle.write(b'{"id":"y","type":"gemini","content":7,"tokens":{"input":"many"}}\n')
    odd = chats / "session-2026-12-06T20-00-zzzzzzzz.jsonl"
    odd.write_text(json.dumps({"sessionId": "../../etc", "projectHash": "x"}) + "\n"
                   + json.dumps({"id": "p", "type": "user", "content": "hi"}) + "\n", encoding="utf-8")
    rows = rows_of(listing_of(root, tmp_path), tmp_path)
    beta = next(row for row_id, row in rows.items() if row_id.startswith(OTHER))
    assert beta.turns == 2 and beta.fields.last_message == "Later MARKlater"
    warning = beta.fields.warning or ""
    assert "line 7: a line Gemini CLI ignores" in warning and "line 8: not JSON" in warning
    odd_row = next(row for row in rows.values() if row.file_id == odd.name)
    assert odd_row.session_id is None and "not a UUID" in (odd_row.fields.warning or "")   # named by its file


def test_appending_to_a_grown_session_reads_only_what_was_appended(tmp_path):
    root = store_copy("store-0.61.0", tmp_path)
    chats = root / "tmp" / "alpha" / "chats"
    path = chats / "session-2026-12-06T19-48-0b721226.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    filler = [json.dumps({"id": f"m{n}", "type": "user", "content": [{"text": f"prompt {n} " + "x" * 20_000}]},
                         separators=(",", ":")).encode() + b"\n" for n in range(60)]
    path.write_bytes(b"".join(lines + filler))
    listing = listing_of(root, tmp_path)
    catalog = Catalog([listing], tmp_path / "cache")
    catalog.refresh()
    assert listing.bytes_read > 1_000_000
    prompt_ids = ["3c324cdb-265d-464b-b6c6-fe425bfa57e8"] + [f"m{n}" for n in range(60)]

    def appended(*records: object) -> SessionRow:
        with path.open("ab") as handle:
            handle.write(b"".join(json.dumps(record).encode() + b"\n" for record in records))
        listing.bytes_read = 0
        rows = catalog.refresh()
        catalog.load_details(rows)
        assert listing.bytes_read < 10_000
        return next(row for row in rows if row.id == ONE_TURN)

    row = appended({"id": "new", "type": "user", "content": [{"text": "one more MARKmore"}]})
    assert row.turns == 62 and row.fields.last_message == "one more MARKmore"
    row = appended({"$rewindTo": prompt_ids[31]})
    assert row.turns == 31 and row.fields.last_message.startswith("prompt 29 ")
    row = appended({"$set": {"summary": "A title", "messages": [{"id": "only", "type": "user",
                                                                  "content": [{"text": "kept MARKkept"}]}]}})
    assert row.turns == 1 and row.fields.first_message == "kept MARKkept" and row.fields.agent_title == "A title"
    catalog.close()


def _subagent(root: Path, parent: str, sub: str) -> Path:
    folder = root / "tmp" / "alpha" / "chats" / parent
    folder.mkdir()
    path = folder / f"{sub}.jsonl"
    path.write_text("".join(json.dumps(record, separators=(",", ":")) + "\n" for record in (
        {"sessionId": sub, "projectHash": "ab" * 32, "startTime": "2026-12-06T19:48:33.000Z",
         "lastUpdated": "2026-12-06T19:48:33.000Z", "kind": "subagent", "directories": [ALPHA]},
        {"id": "s1", "timestamp": "2026-12-06T19:48:33.100Z", "type": "user", "content": [{"text": "Look around"}]},
        {"id": "s2", "timestamp": "2026-12-06T19:48:33.200Z", "type": "gemini", "content": "Done.",
         "tokens": {"input": 100, "output": 2, "cached": 0, "thoughts": 0, "tool": 0, "total": 102}})),
        encoding="utf-8")
    return path


def test_a_subagent_session_counts_with_its_parent_and_is_no_row_of_its_own(tmp_path, settings_for):
    root = store_copy("store-0.61.0", tmp_path)
    sub = "11111111-2222-4333-8444-555555555555"
    _subagent(root, RESUMED, sub)
    rows = rows_of(listing_of(root, tmp_path), tmp_path)
    assert len(rows) == 4 and sub not in rows and rows[RESUMED].turns == 3
    opened = GeminiSource([root], settings_for(), tmp_path / "data").open(
        SessionRef(workspace_key(ALPHA), RESUMED, "gemini"))
    assert "1 subagent session of this session is not shown." in opened.transcript.notes


def test_a_subagent_whose_parent_is_gone_is_listed_hidden_as_the_client_hides_it(tmp_path, settings_for):
    root = store_copy("store-0.61.0", tmp_path)
    sub = "11111111-2222-4333-8444-555555555555"
    _subagent(root, RESUMED, sub)
    for stale in (root / "tmp" / "alpha" / "chats").glob("session-*-e9b105e8.jsonl"):
        stale.unlink()
    rows = rows_of(listing_of(root, tmp_path), tmp_path)
    assert rows[sub].hidden_by_agent and rows[sub].turns == 1 and RESUMED not in rows
    source = GeminiSource([root], settings_for(), tmp_path / "data")
    opened = source.open(SessionRef(workspace_key(ALPHA), sub, "gemini"))
    assert [turn.reply for turn in opened.transcript.turns] == ["Done."]


def test_while_the_folder_holds_an_orphan_subagent_s_file_is_stat_ed_and_a_parented_one_s_is_not(
        tmp_path, monkeypatch):
    """The names stored tell which subagents' folders hold rows (their session's file is gone): only
    those are looked into while the folder holds, and an append to such a file is seen."""
    from reprise.core import folder_scan

    monkeypatch.setattr(folder_scan, "_RACY_NS", 0)
    root = store_copy("store-0.61.0", tmp_path)
    chats = root / "tmp" / "alpha" / "chats"
    parented = _subagent(root, RESUMED, "11111111-2222-4333-8444-555555555555")
    orphan = chats / "22222222-3333-4444-8555-666666666666" / "33333333-4444-4555-8666-777777777777.jsonl"
    orphan.parent.mkdir()
    orphan.write_bytes(parented.read_bytes())
    listing = listing_of(root, tmp_path)
    scanned = listing.file_stats(str(chats))
    assert scanned.names is not None and scanned.names.stamp is not None
    key = f"{orphan.parent.name}/{orphan.name}"
    assert key in scanned.stats and not any(name.startswith(parented.parent.name) for name in scanned.stats)
    with orphan.open("a") as handle:
        handle.write("\n")
    looked: list[str] = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path, *a: looked.append(str(path)) or real_scandir(path, *a))
    held = listing.file_stats(str(chats), scanned.names)
    assert held.names is scanned.names and held.stats[key][0] == orphan.stat().st_size
    assert looked == [str(orphan.parent)]


def test_what_the_client_s_own_list_hides_is_marked(tmp_path):
    root = store_copy("store-0.61.0", tmp_path)
    chats = root / "tmp" / "alpha" / "chats"
    (chats / "session-2026-12-06T19-46-e9b105e8.jsonl").unlink()   # its stub alone: only the session context
    rows = rows_of(listing_of(root, tmp_path), tmp_path)
    assert rows[RESUMED].hidden_by_agent and rows[RESUMED].turns == 0
    assert not rows[ONE_TURN].hidden_by_agent and not rows[SHELL].hidden_by_agent


def test_a_json_session_a_resume_moved_to_jsonl_is_one_row_read_from_the_jsonl(tmp_path):
    root = store_copy("legacy-0.38.2", tmp_path)
    chats = root / "tmp" / "old" / "chats"
    old = chats / "session-2026-12-06T19-51-d3f70215.json"
    document = json.loads(old.read_text(encoding="utf-8"))
    head = {key: document[key] for key in ("sessionId", "projectHash", "startTime", "lastUpdated")}
    moved = [head, *document["messages"], {"$set": {"sessionId": document["sessionId"]}},
             {"id": "n1", "timestamp": "2026-12-06T20:10:00.000Z", "type": "user",
              "content": [{"text": "After the move MARKmoved"}]}]
    (chats / f"{old.name}l").write_text("".join(json.dumps(record) + "\n" for record in moved), encoding="utf-8")
    rows = rows_of(listing_of(root, tmp_path), tmp_path)
    row = rows[document["sessionId"]]
    assert row.file_id == f"{old.name}l" and row.turns == 3 and row.fields.last_message == "After the move MARKmoved"
    assert len(rows) == 2


def test_a_new_listing_takes_the_project_s_marker_and_key_from_the_names_while_the_marker_holds(tmp_path, monkeypatch):
    """The names stored with a folder give the next listing (a new process) its project's folder and
    key without reading the marker or resolving the folder. The client writes a marker once and never
    again: one rewritten by hand is read again once the folder changes."""
    from reprise.core import folder_scan
    from reprise.core.sources.gemini import layout
    from reprise.core.sources.gemini import listing as listing_module

    monkeypatch.setattr(folder_scan, "_RACY_NS", 0)
    root = store_copy("store-0.61.0", tmp_path)
    chats = root / "tmp" / "alpha" / "chats"
    scanned = listing_of(root, tmp_path).file_stats(str(chats))
    assert scanned.names is not None
    read: list[object] = []
    monkeypatch.setattr(listing_module, "marker_folder",
                        lambda project: read.append(project) or layout.marker_folder(project))
    monkeypatch.setattr(listing_module, "workspace_key", lambda folder: read.append(folder) or workspace_key(folder))
    again = listing_of(root, tmp_path)
    again.file_stats(str(chats), scanned.names)
    assert again.folder_of_group(str(chats)) == ALPHA and again.key_of_folder(ALPHA) == workspace_key(ALPHA)
    assert read == []
    (chats.parent / ".project_root").write_text("/tmp/reprise-gemini-fixture/work/alpha-moved")
    held = listing_of(root, tmp_path)
    held.file_stats(str(chats), scanned.names)
    assert held.folder_of_group(str(chats)) == ALPHA and read == []
    (chats / "session-2026-12-06T21-00-0badf00d.jsonl").write_text("")   # the folder changes
    moved = listing_of(root, tmp_path)
    moved.file_stats(str(chats), scanned.names)
    assert moved.folder_of_group(str(chats)) == "/tmp/reprise-gemini-fixture/work/alpha-moved" and read
