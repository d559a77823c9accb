"""The conformance suite: every registered source, with the sample store its `samples` module writes,
through the commands people run (`tui.cli.main`) and the service the TUI uses. A source lists,
opens, searches and resumes each of its samples; each optional role it has goes round trip (a fork
is listed and found by its id, trash and restore give the same bytes back, keep's digest is the
file's), and each role it lacks is refused with a sentence naming it. The property test of hostile
values and the one-folder reads run over every source too (`hostile.py`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings

from reprise.core.catalog import Catalog
from reprise.core.paths import workspace_key
from reprise.core.service import Service
from reprise.core.sources.samples import Sample, SampleSet

from . import hostile
from .captured import CAPTURED
from .conftest import RegisteredSource, isolate, run, run_json, sha256, write_samples

REPRISE = Path(sys.executable).with_name("reprise")


def service() -> Service:
    """The service as the command line builds it, in the (empty) current folder."""
    return Service.from_environment()


def able(source: RegisteredSource, capability: str) -> bool:
    """Whether the source offers `capability` (the TUI's and the service's question)."""
    return bool(getattr(service().sources[source.name].capabilities, capability))


def sample_file(samples: SampleSet, sample: Sample) -> Path:
    """The agent's file that holds `sample` (its first, for an agent that spreads one over several)."""
    return samples.store / sample.files[0]


def file_digests(samples: SampleSet) -> dict[str, str]:
    """{path: SHA-256} of every file of the store: what a refused or read-only command may not change."""
    return {str(path): sha256(path) for path in sorted(samples.store.rglob("*")) if path.is_file()}


def with_turns(samples: SampleSet, least: int = 2) -> Sample:
    """The first sample with at least `least` turns."""
    return next(sample for sample in samples.sessions if len(sample.prompts) >= least)


def a_word_of(sample: Sample) -> str:
    """The longest word of its first prompt: what a search for it must find."""
    return max(re.findall(r"[A-Za-z]{4,}", sample.prompts[0]), key=len)


def listed(capsys, source: RegisteredSource) -> dict[str, dict]:
    """{session id: row} of the source's rows in `list --all --json`."""
    rows = run_json(capsys, "list", "--all")["sessions"]
    return {row["session_id"]: row for row in rows if row["source"] == source.name}


# --- what every source does --------------------------------------------------------------------


def test_the_spec_loads_and_its_store_is_found(source, samples):
    """The registry loaded the spec (no failure), its name and mark are its own, and the store the
    samples wrote is detected, with the reason said."""
    from reprise.core import config
    from reprise.core.sources.registry import registry

    found = registry()
    spec = found.get(source.name)
    assert spec is not None and found.failure(source.name) is None
    assert [other.mark for other in found.specs].count(spec.mark) == 1 and spec.mark.isupper()
    assert all(spec.matches_id(sample.session_id) for sample in samples.sessions)
    choice = config.load().choices[source.name]
    assert choice.enabled and choice.why.startswith(("on", "always on")), choice


def test_the_declared_roles_are_the_implemented_ones(source, samples):
    """A role is declared (a base class) exactly when the source has its methods (the protocol's
    structural check agrees), and the required ones are there."""
    from reprise.core.sources.roles import REQUIRED, ROLES, roles_of

    built = service().sources[source.name]
    declared = roles_of(type(built))
    assert set(REQUIRED) <= declared
    assert {role for role in ROLES if isinstance(built, role)} == declared


def test_the_samples_say_what_they_wrote(source, samples):
    assert samples.source == source.name and samples.sessions
    for sample in samples.sessions:
        assert sample.folder.is_dir() and sample.folder.is_absolute()
        assert sample.files and all((samples.store / name).is_file() for name in sample.files)
    assert any(len(sample.prompts) >= 2 for sample in samples.sessions)


def test_listing_lists_every_sample_with_its_folder_title_and_turns(source, samples, capsys):
    rows = listed(capsys, source)
    assert set(rows) == {sample.session_id for sample in samples.sessions} | set(samples.problems)
    for sample in samples.sessions:
        row = rows[sample.session_id]
        assert row["problem"] is None, row
        assert (row["workspace_key"], row["workspace_path"]) == (workspace_key(sample.folder), str(sample.folder))
        assert row["turns"] == len(sample.prompts)
        if sample.prompts:
            assert row["first_message"] == sample.prompts[0] and row["last_message"] == sample.prompts[-1]
        if sample.title is not None:
            assert row["title"] == sample.title
        assert row["path"].startswith(f"{samples.store}{os.sep}")   # a file of its store, or a place in one
    for file_id in samples.problems:
        assert rows[file_id]["problem"], rows[file_id]
    # The service's rows, the TUI's: the same sessions, each under its own source.
    rows_of_service = service().list_sessions(all_workspaces=True, sources=[source.name]).rows
    assert {row.id for row in rows_of_service} == set(rows)


def test_one_folder_lists_the_rows_of_that_folder_only(source, samples, capsys, monkeypatch):
    """From inside a project folder, `list` gives that folder's rows, the same as the whole listing's."""
    everything = listed(capsys, source)
    for folder in sorted({sample.folder for sample in samples.sessions}):
        monkeypatch.chdir(folder)
        here = {row["session_id"]: row for row in run_json(capsys, "list")["sessions"]
                if row["source"] == source.name}
        assert here == {session_id: row for session_id, row in everything.items()
                        if row["workspace_key"] == workspace_key(folder)}
        assert set(here) - set(samples.problems) == {sample.session_id for sample in samples.sessions
                                                     if sample.folder == folder}


def test_one_folder_cold_reads_only_that_folders_files(source, samples, tmp_path, monkeypatch):
    """A cold listing of one folder reads only the files of that folder's sessions (and the ones whose
    folder cannot be told without a read), whatever the store's workspace rule; a listing of
    everything then reads the rest, once, and the next one nothing."""
    listing = service().sources[source.name].listing
    read: list[str] = []
    plain = type(listing).read_listing

    def counted(self, file, now_ns):
        read.append(file.path)
        return plain(self, file, now_ns)

    monkeypatch.setattr(type(listing), "read_listing", counted)
    hostile.settled([samples.store])   # files at rest: one written within the clock's racy window is read again
    paths = {row.id: row.path for row in service().list_sessions(all_workspaces=True, sources=[source.name]).rows}
    of_folder: dict[Path, set[str]] = {}
    for sample in samples.sessions:
        of_folder.setdefault(sample.folder, set()).add(paths[sample.session_id])
    problems = {paths[file_id] for file_id in samples.problems}
    everything = set().union(*of_folder.values()) | problems
    for number, (folder, files) in enumerate(sorted(of_folder.items())):
        read.clear()
        catalog = Catalog([listing], tmp_path / f"cache-{number}")
        rows = catalog.refresh([workspace_key(folder)])
        assert files <= set(read) <= files | problems, (folder, read)
        assert {row.id for row in rows} - set(samples.problems) == {
            sample.session_id for sample in samples.sessions if sample.folder == folder}
        first = set(read)
        read.clear()
        catalog.refresh(None)
        assert sorted(read) == sorted(everything - first)
        read.clear()
        catalog.refresh(None)
        assert read == []


def test_show_gives_the_neutral_transcript(source, samples, capsys):
    rows = listed(capsys, source)
    for sample in samples.sessions:
        shown = run_json(capsys, "show", sample.session_id)
        transcript = shown["transcript"]
        assert (transcript["source"], transcript["session_id"]) == (source.name, sample.session_id)
        assert [turn["user_message"] for turn in transcript["turns"]] == list(sample.prompts)
        assert shown["turns"] == len(sample.prompts) and shown["warnings"] == []
        assert shown["workspace_path"] == str(sample.folder)
        assert (shown["path"], shown["size"]) == (rows[sample.session_id]["path"], rows[sample.session_id]["size"])
        if sample.tool_call:
            assert any(turn["tool_calls"] or turn["commands"] for turn in transcript["turns"])
        status, out, err = run(capsys, "show", sample.session_id)
        assert status == 0, err
        assert all(prompt.splitlines()[0] in out for prompt in sample.prompts[-3:])


def test_search_finds_a_word_of_each_sample(source, samples, capsys):
    searcher = service()
    for sample in samples.sessions:
        if not sample.prompts:
            continue
        word = a_word_of(sample)
        hits = run_json(capsys, "search", "--all", word)["hits"]
        assert any(hit["session_id"] == sample.session_id and hit["field"] == "user" for hit in hits), (word, hits)
        found = searcher.search(word, all_workspaces=True)
        assert any(hit.row.source == source.name and hit.row.id == sample.session_id for hit in found)


def test_resume_names_the_session_and_runs_in_its_folder(source, samples, capsys):
    for sample in samples.sessions:
        plan = run_json(capsys, "resume", "--print", sample.session_id)
        assert plan["session_id"] == sample.session_id
        assert any(sample.session_id in part for part in plan["argv"]), plan
        assert plan["cwd"] == str(sample.folder)


def test_a_session_whose_folder_is_gone_resumes_as_the_spec_says(source, samples, capsys):
    """`resume_folder`: an agent that finds a session by id from any folder runs it from the current one
    and says so; one that runs it in its recorded folder, or only in that very folder, refuses, naming
    the folder (and, for the latter, how to recreate it), and runs nothing."""
    from reprise.core.sources.registry import registry

    spec = registry().get(source.name)
    assert spec is not None
    sample = samples.sessions[0]
    shutil.rmtree(sample.folder)
    status, out, err = run(capsys, "resume", "--print", sample.session_id, "--json")
    if spec.resume_folder == "any":
        assert status == 0, (out, err)
        plan = json.loads(out)
        assert plan["cwd"] == str(Path.cwd()) and any("no longer exists" in note for note in plan["notes"]), plan
        return
    assert status != 0 and str(sample.folder) in out, (status, out, err)
    if spec.resume_folder == "exact":
        assert f"mkdir -p {sample.folder}" in out and "only in the folder it ran in" in out, out


def test_the_listing_agrees_with_the_spec_and_names_each_sessions_file(source, samples, capsys):
    """The listing's `file_is_session` is the spec's (the catalog stores a session id apart from the file
    id only when it is False), and the path the source gives a session is its row's (what the TUI selects
    a session by after a fork, a rename or a new session)."""
    from reprise.core.sources.registry import registry

    spec = registry().get(source.name)
    built = service()
    assert spec is not None and built.sources[source.name].listing.file_is_session is spec.file_is_session
    rows = {row.id: row for row in built.list_sessions(all_workspaces=True, sources=[source.name]).rows}
    for sample in samples.sessions:
        row = rows[sample.session_id]
        assert row.ref is not None and row.ref.session_id == sample.session_id
        assert built.session_path(row.ref) == row.path
        assert built.resolve(sample.session_id) == row.ref
        if spec.file_is_session:
            assert row.file_id == sample.session_id and row.session_id is None


# --- the optional roles: a round trip when the source has it, a sentence naming it when it has not -----


def refused(capsys, source: RegisteredSource, samples: SampleSet, *argv: str) -> None:
    """The command is refused, naming the source, with and without --json, and changes no file."""
    before = file_digests(samples)
    status, out, err = run(capsys, *argv)
    assert status != 0 and source.label in err, (argv, status, out, err)
    status, out, _ = run(capsys, *argv, "--json")
    assert status != 0 and source.label in out, (argv, status, out)
    assert file_digests(samples) == before


def with_role(capsys, source: RegisteredSource, samples: SampleSet, capability: str, *argv: str) -> Sample | None:
    """The sample a role's round trip runs on when the source has the role; else None, the command
    (`{id}`: the sample's id) having been refused with a sentence naming the source."""
    sample = with_turns(samples)
    if able(source, capability):
        return sample
    refused(capsys, source, samples, *(part.replace("{id}", sample.session_id) for part in argv))
    return None


def test_meter_parts_add_up_or_it_is_refused(source, samples, capsys):
    sample = with_role(capsys, source, samples, "meter", "meter", "{id}")
    if sample is None:
        return
    for each in samples.sessions:
        meter = run_json(capsys, "meter", each.session_id)
        assert sum(part["tokens"] for part in meter["parts"]) == meter["total"] and meter["via"] == "send"
        ref = service().resolve(each.session_id)
        assert meter["window"] == service().context_window(ref, meter["model"])


def test_a_fork_is_listed_and_found_by_its_id_or_it_is_refused(source, samples, capsys):
    sample = with_role(capsys, source, samples, "trim_fork", "trim", "{id}", "--fork", "--drop", "1")
    if sample is None:
        return
    original = {name: sha256(samples.store / name) for name in sample.files}
    preview = run_json(capsys, "trim", sample.session_id, "--fork", "--drop", "1", "--dry-run")
    assert preview["changed"] and not preview["applied"]
    fork = run_json(capsys, "trim", sample.session_id, "--fork", "--drop", "1")
    assert fork["forked"] and fork["applied"] and fork["source_session_id"] == sample.session_id
    assert fork["session_id"] != sample.session_id
    assert {name: sha256(samples.store / name) for name in sample.files} == original
    rows = listed(capsys, source)
    assert rows[fork["session_id"]]["turns"] == len(sample.prompts) - 1
    assert rows[fork["session_id"]]["workspace_path"] == str(sample.folder)
    shown = run_json(capsys, "show", fork["session_id"])
    assert [turn["user_message"] for turn in shown["transcript"]["turns"]] == list(sample.prompts[1:])
    plan = run_json(capsys, "resume", "--print", fork["session_id"])   # resumed by its id, as the agent would
    assert any(fork["session_id"] in part for part in plan["argv"])


def test_a_trim_in_place_is_undone_byte_for_byte_or_it_is_refused(source, samples, capsys):
    sample = with_role(capsys, source, samples, "trim_in_place", "trim", "{id}", "--drop", "1")
    if sample is None:
        return
    path = sample_file(samples, sample)
    before = path.read_bytes()
    trimmed = run_json(capsys, "trim", sample.session_id, "--drop", "1")
    assert trimmed["applied"] and not trimmed["forked"] and path.read_bytes() != before
    run_json(capsys, "restore", sample.session_id)
    assert path.read_bytes() == before


def test_trash_and_restore_give_the_same_bytes_back_or_it_is_refused(source, samples, capsys):
    sample = with_role(capsys, source, samples, "trash", "rm", "{id}")
    if sample is None:
        return
    paths = [samples.store / name for name in sample.files]   # every file of it (a stub a resume left too)
    before = [sha256(path) for path in paths]
    trashed = run_json(capsys, "rm", sample.session_id)
    assert trashed["session_id"] == sample.session_id and not any(path.exists() for path in paths)
    assert sample.session_id not in listed(capsys, source)
    trash = run_json(capsys, "trash", "list", "--all")["trash"]
    assert [entry["session_id"] for entry in trash] == [sample.session_id]
    run_json(capsys, "trash", "restore", sample.session_id)
    assert [sha256(path) for path in paths] == before
    assert sample.session_id in listed(capsys, source)


def test_keep_is_digest_verified_or_it_is_refused(source, samples, capsys):
    sample = with_role(capsys, source, samples, "keep", "keep", "{id}")
    if sample is None:
        return
    path = sample_file(samples, sample)
    kept = run_json(capsys, "keep", sample.session_id)
    assert (kept["digest"], kept["size"]) == (sha256(path), path.stat().st_size) and kept["added"]
    again = run_json(capsys, "keep", sample.session_id)
    assert again["digest"] == kept["digest"] and again["added"] == []
    assert listed(capsys, source)[sample.session_id]["kept"]


def test_a_send_is_checked_or_it_is_refused(source, samples, capsys):
    """Sending runs the agent (the compat suite sends for real); here the check before it: a draft within
    the window may go, and its meter counts it."""
    sample = with_role(capsys, source, samples, "send", "send", "{id}", "--message", "one more", "--agent", "echo")
    if sample is None:
        return
    checker = service()
    ref = checker.resolve(sample.session_id)
    empty = checker.measure(ref, "") if able(source, "meter") else None
    result = checker.check_sendable(ref, "one more word to send")
    if empty is not None:
        assert result is not None and result.total > empty.total


def test_a_new_session_is_started_or_it_is_refused(source, samples, capsys):
    if not able(source, "new"):
        refused(capsys, source, samples, "new", "--agent", source.name, "--print")
        return
    started = run_json(capsys, "new", "--agent", source.name, "--print")
    assert started["workspace_path"] == str(Path.cwd())
    if started["command"] is None:   # written by Reprise: there, empty
        assert run_json(capsys, "show", started["session_id"])["turns"] == 0
    else:   # the agent starts on the id Reprise chose
        assert any(started["session_id"] in part for part in started["command"])


# --- hostile values: any one value replaced, or a file cut, in a session of any source ------------------


def hostile_fixture(source: RegisteredSource, kind: str, root: Path, monkeypatch) -> hostile.Fixture:
    """The store the property mutates: the source's samples (a session of several turns and one with a
    tool call, when it has one), or the store captured from its real client."""
    isolate(source, root, monkeypatch)
    if kind == "captured":
        return CAPTURED[source.name](root)
    samples = write_samples(source, root)
    chosen = [with_turns(samples)]
    chosen += [sample for sample in samples.sessions if sample.tool_call and sample not in chosen][:1]
    names = [name for sample in chosen for name in sample.files] + list(samples.shared)
    files = {str((samples.store / name).relative_to(root)): (samples.store / name).read_bytes() for name in names}
    return hostile.Fixture(source.name, root, (str(samples.store.relative_to(root)),), files,
                           tuple(sample.session_id for sample in chosen), a_word_of(chosen[0]), samples.dumps,
                           whole_files=samples.whole_files)


def test_any_one_hostile_value_or_cut_is_one_problem_never_a_crash(capsys, source, hostile_store, tmp_path,
                                                                   monkeypatch):
    fixture = hostile_fixture(source, hostile_store, tmp_path, monkeypatch)

    def every_command_survives(files: dict[str, bytes]) -> None:
        hostile.check_every_command(capsys, fixture, files)

    test = given(files=hostile.hostile_files(fixture))(every_command_survives)
    for files in hostile.pinned_examples(fixture):
        test = example(files=files)(test)
    settings(max_examples=hostile.EXAMPLES, deadline=None, derandomize=not hostile.RANDOM, database=None,
             print_blob=False,
             suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                    HealthCheck.data_too_large, HealthCheck.large_base_example])(test)()


def test_the_installed_command_survives_the_pinned_values_too(source, hostile_store, tmp_path, monkeypatch):
    """A handful through the real console script: its own interpreter, its own stdout encoding, its exit."""
    fixture = hostile_fixture(source, hostile_store, tmp_path, monkeypatch)
    for files in hostile.pinned_examples(fixture)[:2]:
        with hostile.fresh_store(fixture.template) as base:
            roots = hostile.settled(fixture.place(base, files))
            before = hostile.store_digest(*roots)
            session_id = fixture.session_ids[0]
            for argv in (["list", "--all"], ["show", session_id],
                         ["trim", session_id, "--fork", "--dry-run", "--drop", "1"]):
                done = subprocess.run([str(REPRISE), *argv], capture_output=True, text=True, errors="replace",
                                      cwd=base / "here", env=dict(os.environ), timeout=120, check=False)
                assert done.returncode in hostile.STATUSES and "Traceback" not in done.stderr, (
                    argv, done.stderr[-2000:])
            assert hostile.store_digest(*roots) == before


# --- the TUI -------------------------------------------------------------------------------------------


async def test_the_tui_shows_a_detail_and_greys_what_the_source_cannot_do(source, samples):
    """Each sample's row, its detail (the conversation) and the actions its roles allow; the others grey."""
    from reprise.tui.widgets.session_list import SessionList

    from ..tui.conftest import build_app, settle, show_agent_hidden

    show_agent_hidden()   # every sample listed, those the agent's own picker hides too
    sample = with_turns(samples)
    shown = service()
    able = shown.sources[source.name].capabilities
    app = build_app(Service.from_environment(workspace=str(sample.folder)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        session_list = screen.query_one(SessionList)
        mine = [row.id for row in session_list.rows if row.source == source.name]
        assert set(mine) == {each.session_id for each in samples.sessions if each.folder == sample.folder}
        session_list.move_to(next(i for i, row in enumerate(session_list.rows)
                                  if row.id == sample.session_id))
        await settle(pilot)
        assert not screen.detail_failed and screen.detail is not None
        assert screen.detail.ref.session_id == sample.session_id
        assert [turn.user_message for turn in screen.detail.transcript.turns] == list(sample.prompts)
        for action, offered in (("trim", able.trim_in_place or able.trim_fork), ("delete", able.trash),
                                ("keep", able.keep), ("resume", able.resume)):
            assert screen.check_action(action, ()) is (True if offered else None), action
