"""Codex CLI importing Claude Code sessions itself (issue 30, "Links, not duplicates"), checked against
the real client: its app-server offers the fixture's Claude Code sessions (copied under the scratch
HOME's `.claude/projects/`) in `externalAgentConfig/detect` and imports them on
`externalAgentConfig/import` (app_server_drive.py, run inside the namespace), offline and without a
model request; each becomes a new Codex thread, and the ledger `external_agent_session_imports.json`
it writes is what Reprise's reader (`core/sources/codex/imports.py`) turns into (Claude session file,
Codex thread) pairs. The copies' `cwd` is moved to a folder that exists: Codex offers no session whose
folder is missing, and the fixture's folders do not exist here."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reprise.core.sources.codex.imports import LEDGER, imported_sessions

from . import rollouts
from .sessions import LiveCodex, Step, StepResult

pytestmark = pytest.mark.compat

HERE = Path(__file__).resolve().parent
DRIVE = HERE / "app_server_drive.py"
CLAUDE_PROJECT = HERE.parents[1] / "fixtures" / "claude-store" / "projects" / "-tmp-reprise-claude-fixture-work-alpha"
CLAUDE_FOLDER = b"/tmp/reprise-claude-fixture/work/alpha"
SOLO, THREE, BASH = ("11111111-1111-4111-8111-111111111111", "33333333-3333-4333-8333-333333333333",
                     "55555555-5555-4555-8555-555555555555")
PROMPTS = {SOLO: ["What is in this folder? MARKsolo"],
           THREE: ["Start a plan MARKfirst", "Continue the plan MARKsecond", "Finish the plan MARKthird"],
           BASH: ["Please RUN: echo OUTWORD$((6*7)) && echo second line"]}
MARKER = "<EXTERNAL SESSION IMPORTED>"
RECORD_FIELDS = {"source_path", "content_sha256", "imported_thread_id", "imported_at", "source_modified_at",
                 "connector_names", "title"}


def claude_sessions(claude_home: Path, work: Path, session_ids: list[str]) -> dict[str, Path]:
    """Copies of fixture Claude Code sessions in `claude_home/projects/<work's slug>/`, their folder
    (`cwd`) moved to `work`; {session id: copy}."""
    folder = claude_home / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(work))
    folder.mkdir(parents=True)
    copies = {}
    for session_id in session_ids:
        copy = copies[session_id] = folder / f"{session_id}.jsonl"
        copy.write_bytes((CLAUDE_PROJECT / copy.name).read_bytes().replace(CLAUDE_FOLDER, str(work).encode()))
    return copies


@dataclass(slots=True)
class Imports:
    live: LiveCodex
    work: Path
    copies: dict[str, Path]
    runs: list[StepResult]
    started: datetime

    def driven(self, number: int = 0) -> dict:
        """What app_server_drive.py printed in run `number`."""
        run = self.runs[number]
        assert run.returncode == 0, run.describe()
        return json.loads(run.stdout.strip().splitlines()[-1])

    @property
    def successes(self) -> list[dict]:
        return [success for result in self.driven()["completed"]["itemTypeResults"]
                for success in result["successes"]]

    @property
    def ledger(self) -> dict:
        return json.loads((self.live.codex_home / LEDGER).read_text())


def drive(binary: Path, root: Path, work: Path, *options: list[str], env: dict[str, str] | None = None
          ) -> list[StepResult]:
    """app_server_drive.py in one namespace, once per entry of `options`, on the CODEX_HOME under `root`."""
    python = LiveCodex(Path(sys.executable), root)
    python.batches = len(list((root / "batches").glob("*")))
    steps = [Step([str(DRIVE), "--binary", str(binary), "--cwd", str(work), *extra], work) for extra in options]
    return python.run(steps, env=env)


@pytest.fixture(scope="module")
def imports(codex_bin, tmp_path_factory) -> Imports:
    """Three fixture sessions imported by the real app-server, then detected again."""
    root = tmp_path_factory.mktemp("codex-import")
    live = LiveCodex(codex_bin, root)
    work = root / "work"
    work.mkdir()
    copies = claude_sessions(live.home / ".claude", work, [SOLO, THREE, BASH])
    started = datetime.now(UTC).replace(microsecond=0)
    return Imports(live, work, copies, drive(codex_bin, root, work, ["--import"], []), started)


def test_the_app_server_offers_and_imports_the_claude_sessions_without_asking_the_model(imports):
    [item] = imports.driven()["detected"]
    assert item["itemType"] == "SESSIONS"
    offered = {Path(session["path"]): session for session in item["details"]["sessions"]}
    assert set(offered) == set(imports.copies.values())
    assert {session["cwd"] for session in offered.values()} == {str(imports.work)}
    assert {offered[copy]["title"] for copy in imports.copies.values()} == {p[0] for p in PROMPTS.values()}
    assert {Path(s["source"]) for s in imports.successes} == set(imports.copies.values())
    assert not [f for result in imports.driven()["completed"]["itemTypeResults"] for f in result["failures"]]
    assert not imports.runs[0].requests            # nothing was sent to the (fake) model


def test_reprises_reader_finds_each_claude_session_and_the_thread_made_of_it(imports):
    found = imported_sessions(imports.live.codex_home)
    assert not found.problems
    targets = {s["source"]: s["target"] for s in imports.successes}
    assert {s.source_path: s.thread_id for s in found.sessions} == targets
    for session in found.sessions:
        copy = imports.copies[session.source_session_id]
        assert session.source_path == str(copy.resolve())
        assert found.thread_of(session.source_path) == session.thread_id
        assert imports.live.rollout(session.thread_id).is_file()
        assert session.title == PROMPTS[session.source_session_id][0]
        assert imports.started <= session.imported_at <= datetime.now(UTC)
        whole, part = divmod(copy.stat().st_mtime_ns, 10**9)   # the file's mtime, to the microsecond
        assert session.source_modified_at == datetime.fromtimestamp(whole, UTC) + timedelta(microseconds=part // 1000)


def test_the_ledger_is_one_object_of_records_with_seven_fields_and_two_time_units(imports):
    raw = (imports.live.codex_home / LEDGER).read_text()
    assert raw.startswith('{\n  "records": [\n')          # serde_json's pretty form
    assert set(imports.ledger) == {"records", "detected_connector_records"}
    assert imports.ledger["detected_connector_records"] == []
    for record in imports.ledger["records"]:
        assert set(record) == RECORD_FIELDS
        copy = Path(record["source_path"])
        assert re.fullmatch(r"[0-9a-f]{64}", record["content_sha256"])
        assert record["source_modified_at"] == copy.stat().st_mtime_ns        # nanoseconds
        assert abs(record["imported_at"] - imports.started.timestamp()) < 600   # seconds
        assert record["connector_names"] == []


def test_an_imported_rollout_is_a_new_legacy_thread_marked_imported_that_does_not_name_its_source(imports):
    for success in imports.successes:
        source = Path(success["source"])
        path = imports.live.rollout(success["target"])
        records = rollouts.records(path)
        meta = records[0]["payload"]
        assert records[0]["type"] == "session_meta" and meta["id"] == meta["session_id"] == success["target"]
        assert (meta["cwd"], meta["source"], meta["originator"], meta["history_mode"]) == (
            str(imports.work), "vscode", "reprise-compat", "legacy")
        assert not any("ordinal" in record for record in records)
        assert str(source).encode() not in path.read_bytes() and source.stem.encode() not in path.read_bytes()
        events = [r["payload"] for r in records if r["type"] == "event_msg"]
        prompts = [e["message"] for e in events if e["type"] == "user_message"]
        assert prompts == PROMPTS[source.stem]
        turns = [e["turn_id"] for e in events if e["type"] == "task_started"]
        assert turns == [f"external-import-turn-{n}" for n in range(1, len(prompts) + 1)]
        replies = [e["message"] for e in events if e["type"] == "agent_message"]
        assert replies[-1] == MARKER and replies.count(MARKER) == 1
        [count] = [e for e in events if e["type"] == "token_count"]
        assert count["info"]["last_token_usage"]["input_tokens"] == 0
    [bash] = [s for s in imports.successes if Path(s["source"]).stem == BASH]
    texts = [r["payload"]["message"] for r in rollouts.records(imports.live.rollout(bash["target"]))
             if r["type"] == "event_msg" and r["payload"]["type"] == "agent_message"]
    assert any(text.startswith("[external_agent_tool_call: Bash]") for text in texts)
    assert any(text.startswith("[external_agent_tool_result]") and "OUTWORD42" in text for text in texts)


def test_a_session_imported_unchanged_is_not_offered_again(imports):
    assert imports.driven(1)["detected"] == []


def test_sessions_only_under_claude_config_dir_are_not_offered(codex_bin, tmp_path):
    live = LiveCodex(codex_bin, tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    config_dir = tmp_path / "claude-config"
    claude_sessions(config_dir, work, [SOLO])
    env = {"CLAUDE_CONFIG_DIR": str(config_dir)}
    [elsewhere] = drive(codex_bin, tmp_path, work, [], env=env)
    claude_sessions(live.home / ".claude", work, [SOLO])
    [at_home] = drive(codex_bin, tmp_path, work, [], env=env)
    assert elsewhere.returncode == at_home.returncode == 0, elsewhere.describe()
    assert json.loads(elsewhere.stdout.strip().splitlines()[-1])["detected"] == []
    [item] = json.loads(at_home.stdout.strip().splitlines()[-1])["detected"]
    assert [Path(session["path"]).parent.parent for session in item["details"]["sessions"]] == [
        live.home / ".claude" / "projects"]
