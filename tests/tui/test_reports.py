"""The reports the CLI prints and the TUI shows (show's history, doctor, audit, meter): the CLI's
text pinned byte for byte, and the TUI showing the same lines."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest

from reprise.core import config
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.sources.fractal.codec import encode
from reprise.core.sources.fractal.meter import Measured, MeterResult, Part
from reprise.core.sources.fractal.models import TurnUsage
from reprise.core.sources.fractal.store import Store
from reprise.core.transcript import Command, FileTouch, Transcript, Turn, Usage
from reprise.tui.cli import listing
from reprise.tui.reports import audit as audit_report
from reprise.tui.reports import plain_text
from reprise.tui.reports.history import history_lines
from reprise.tui.reports.meter import context_lines, meter_lines

from ..core.test_store import make_state
from . import test_cli
from .conftest import build_app, settle
from .test_cli import run

SESSION_ID = "a" * 32
workspace = test_cli.workspace  # the fixture: a project folder, the current directory
LONG_MESSAGE = "line one\nline two " + "long " * 40


def put_worked_session(state_root, folder) -> SessionRef:
    """Three turns: one plain, one that read, modified and ran something (with usage), one failed."""
    state = make_state(3, SESSION_ID)
    state.turns[1].agent.usage = TurnUsage(input_tokens=12_345, output_tokens=678, cost=0.0123, duration_ms=4_500,
                                           iterations=3, context_tokens=9_876)
    state.turns[2].agent.status = state.history[2].status = "failed"
    state.turns[2].agent.error = state.history[2].error = "the model gave up"
    state.turns[2].user.message = state.history[2].user_message = LONG_MESSAGE
    worked = state.history[1]
    worked.files_read, worked.files_modified, worked.commands_run = ["src/app.py", "README.md"], ["src/app.py"], ["pytest -q"]
    ref = SessionRef(workspace_key(folder), SESSION_ID, "fractal")
    path = Store(state_root).paths.session_file(ref)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(state))
    return ref


SUMMARY = """## Session Summary

Turn 1 (turn-00000000000000000000000000000000)
User: message 0
Agent status: succeeded
Agent response: reply 0
files_read_count: 0
files_changed_count: 0
commands_run_count: 0

Turn 2 (turn-00000000000000000000000000000001)
User: message 1
Agent status: succeeded
Agent response: reply 1
files_read_count: 0
files_changed_count: 0
commands_run_count: 0

Turn 3 (turn-00000000000000000000000000000002)
User: line one
line two long long long long long long long long long long long long long long long long long long long long long \
long long long long long long long long long long long long long long long long long long long""" + " " + """
Agent status: failed
Agent response: reply 2
files_read_count: 0
files_changed_count: 0
commands_run_count: 0
Error: the model gave up
"""

SHOW_HISTORY = """History (last 3 turns kept in the file):
- turn-00000000000000000000000000000000 [succeeded] 2026-01-01T00:00:00+00:00
  user: message 0
- turn-00000000000000000000000000000001 [succeeded] 2026-01-01T00:01:00+00:00
  user: message 1
  read: src/app.py, README.md
  modified: src/app.py
  commands: pytest -q
- turn-00000000000000000000000000000002 [failed] 2026-01-01T00:02:00+00:00
  user: line one line two long long long long long long long long long long long long long long long long l…
  error: the model gave up

Usage: 12,345 input, 678 output tokens, cost $0.01, 3 iterations, 4.5 s; last context 9,876 tokens
"""

CONVERSATION = """Turn 1 · succeeded · yesterday 00:00
You: message 0
Fractal: reply 0

Turn 2 · succeeded · yesterday 00:00 · 13k tokens · $0.01 · 4 s
You: message 1
Fractal: reply 1
Read 2 files, changed 1, ran 1 command
  $ pytest -q

Turn 3 · failed · yesterday 00:00
You: line one
line two """ + "long " * 40 + """
Fractal: reply 2
Error: the model gave up

Usage: 12,345 input, 678 output tokens, cost $0.01, 3 iterations, 4.5 s; last context 9,876 tokens
"""


def test_show_prints_the_conversation_with_relative_times_money_and_counts_byte_for_byte(capsys, monkeypatch,
                                                                                          workspace, isolated_paths):
    ref = put_worked_session(isolated_paths, workspace)
    path = Store(isolated_paths).paths.session_file(ref)
    monkeypatch.setattr(listing, "local_now", lambda: datetime(2026, 1, 2, 9, 0, tzinfo=UTC))
    status, out, err = run(capsys, "show", "aaaa")
    assert (status, err) == (0, "")
    assert out == (f"(untitled)\nFractal · {workspace} · yesterday 00:00 · failed · 3 turns\n"
                   f"Session {SESSION_ID}, file {path} ({path.stat().st_size / 1024:.1f} KB)\n\n{CONVERSATION}")
    assert "turn-0000" not in out and "2026-01-01" not in out   # ids and ISO times only on demand


def test_show_raw_prints_fractals_own_render_and_the_kept_history_byte_for_byte(capsys, workspace, isolated_paths):
    ref = put_worked_session(isolated_paths, workspace)
    path = Store(isolated_paths).paths.session_file(ref)
    status, out, err = run(capsys, "show", "aaaa", "--raw")
    assert (status, err) == (0, "")
    assert out == (f"Session {SESSION_ID}  (untitled)\nWorkspace {workspace}\n"
                   f"File {path} ({path.stat().st_size / 1024:.1f} KB), 3 turns\n\n{SUMMARY}\n{SHOW_HISTORY}")


def put_doctor_findings(state_root, folder) -> tuple[str, str, str]:
    """A file with a BOM (a problem), one with a duplicate key (a warning), a stale temp file,
    and a state root others may write (a note)."""
    ref = put_worked_session(state_root, folder)
    sessions = Store(state_root).paths.sessions(ref.workspace_key)
    bad, doubled = sessions / "bad.json", sessions / ("b" * 32 + ".json")
    bad.write_bytes(b"\xef\xbb\xbf{}")
    state = json.loads(encode(make_state(1, "b" * 32)))
    doubled.write_text(json.dumps(state, indent=2)[:-2] + ',\n  "session_id": "' + "b" * 32 + '"\n}\n')
    temp = sessions / f".{SESSION_ID}.tmp-1-abcd"
    temp.write_bytes(b"partial")
    for path in (bad, doubled, temp):
        os.utime(path, (1, 1))
    os.chmod(state_root, 0o777)
    return str(bad), str(doubled), str(temp)


def test_doctor_prints_problems_warnings_temp_files_and_notes_byte_for_byte(capsys, workspace,
                                                                             isolated_paths):
    bad, doubled, temp = put_doctor_findings(isolated_paths, workspace)
    findings = (f"problem  {bad}: bom: the file starts with a UTF-8 byte order mark, which Fractal rejects\n"
                f"         next: open the file: {bad}; or move it to the trash: `reprise rm bad`\n"
                f"warning  {doubled}: duplicate keys (session_id); Fractal keeps the last, a rewrite would drop "
                "the others\n"
                f"         next: look at it before a trim rewrites it: reprise show {'b' * 32}\n")
    note = (f"note     The state root {isolated_paths} is writable by other users (mode 777).\n"
            "index    search index 0 B for 0 sessions, no cap ([search] max_mb)\n")
    assert run(capsys, "doctor") == (1, findings + f"tempfile {temp} (left by an interrupted write)\n"
                                     "         next: `reprise doctor --clean` removes those older than 10 minutes\n"
                                     + note, "")
    assert run(capsys, "doctor", "--clean") == (1, findings + f"removed  {temp}\n" + note, "")


def test_doctor_of_a_sound_store_says_so(capsys, workspace, isolated_paths):
    put_worked_session(isolated_paths, workspace)
    assert run(capsys, "doctor") == (0, "index    search index 0 B for 0 sessions, no cap ([search] max_mb)\n"
                                        f"No problems under {isolated_paths}\n", "")


def put_audit_log(state_root, folder) -> str:
    """Two records and a line that is not JSON."""
    path = Store(state_root).paths.audit_file(workspace_key(folder))
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [{"time": "2026-01-02T03:04:05.123456+00:00", "op": "trim", "session_id": SESSION_ID,
                "counts": {"capped": 2, "dropped": 1}, "digests": ["ab" * 32], "result": "ok"},
               {"time": "2026-01-02T04:00:00+00:00", "op": "prune", "sessions": ["c" * 32, "d" * 32],
                "result": "failed: disk full"}]
    path.write_text(json.dumps(records[0]) + "\n{not json\n" + json.dumps(records[1]) + "\n")
    return str(path)


AUDIT = ("yesterday 03:04   trim          aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa  ok  capped 2, dropped 1\n"
         "yesterday 04:00   prune         ccccccccccccccccccccccccccccccc…  failed: disk full  \n")


@pytest.fixture
def audit_clock(monkeypatch):
    """The audit's times are said from a fixed now, the day after the log's records."""
    monkeypatch.setattr(audit_report, "local_now", lambda: datetime(2026, 1, 3, 9, 0, tzinfo=UTC))


@pytest.mark.usefixtures("audit_clock")
def test_audit_prints_one_line_per_record_and_names_a_bad_line_on_stderr(capsys, workspace,
                                                                          isolated_paths):
    log = put_audit_log(isolated_paths, workspace)
    assert run(capsys, "audit") == (0, AUDIT, f"reprise: {log} line 2: not JSON; skipped\n")


def test_audit_of_an_empty_log_says_so(capsys, workspace):
    assert run(capsys, "audit") == (0, "No destructive operations recorded.\n", "")


METER = """Next turn of aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa with gpt-5 (default), counted with o200k_base: estimate
  overhead      13,631  configured the agent's fixed instructions and tool descriptions, as configured
  agents_md          0  counted    no AGENTS.md in the workspace
  summary          284  counted    ends with the draft in full, as the pending turn Fractal adds before it builds the prompt
  history          444  counted    1,634 characters in full; only a preview enters the prompt, its tail the pending \
turn; the full history is available to the agent, not in the prompt
  message           55  counted    5 characters in full
  total         14,414  of 272,000 (5.3%), ok; the window is the input budget (model table, pattern gpt-5*)
  via             send  sent by the agent's send command (the composer, `reprise send`)
  draft             +4  the total with this message minus the total with none
  measured       9,876  prompt size of the last model call of turn 2 (reported by the provider)
"""


def test_meter_prints_each_part_the_total_the_draft_and_the_measured_figure_byte_for_byte(
        capsys, workspace, isolated_paths):
    put_worked_session(isolated_paths, workspace)
    assert run(capsys, "meter", "aaaa", "--message", "hello") == (0, METER, "")


# --- the TUI shows the same reports ------------------------------------------------------------

def _service(state_root, folder) -> Service:
    return Service(config.load(state_dir=str(state_root)), workspace=folder)


async def _report_body(app, pilot, action: str) -> str:
    await settle(pilot)
    await app.run_action(action)
    await settle(pilot)
    return str(app.screen.query_one("#report-body").render())


async def test_the_doctor_view_shows_the_lines_reprise_doctor_prints(capsys, workspace, isolated_paths):
    put_doctor_findings(isolated_paths, workspace)
    _, printed, _ = run(capsys, "doctor")
    app = build_app(_service(isolated_paths, workspace))
    async with app.run_test(size=(200, 40)) as pilot:
        assert await _report_body(app, pilot, "show_doctor") == printed.rstrip("\n")


@pytest.mark.usefixtures("audit_clock")
async def test_the_audit_view_shows_the_lines_reprise_audit_prints_and_the_unreadable_line(capsys, workspace,
                                                                                            isolated_paths):
    log = put_audit_log(isolated_paths, workspace)
    app = build_app(_service(isolated_paths, workspace))
    async with app.run_test(size=(200, 40)) as pilot:
        body = await _report_body(app, pilot, "show_audit")
    assert body == f"{log} line 2: not JSON; skipped\n" + AUDIT.rstrip("\n")


async def test_the_history_tab_labels_each_facts_provenance_and_shows_the_transcripts_notes(workspace,
                                                                                           isolated_paths):
    ref = put_worked_session(isolated_paths, workspace)
    store = Store(isolated_paths)
    loaded = store.load(ref)
    del loaded.state.history[0]   # Fractal keeps the details of its newest turns only
    store.save(ref, loaded.state, expected=loaded.version)
    app = build_app(_service(isolated_paths, workspace))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.app.screen.run_action("show_tab('tab-history')")
        await settle(pilot)
        history = app.screen.query_one("#history-view").text
    assert history.startswith("2 turns kept in the file (the summary has 3).\n2 of 3 turns keep their details "
                              "in the file (Fractal keeps the newest 20); the others have their message and reply only.")
    assert ("User: message 1\nReply: reply 1\nFiles read (2, observed):\n  src/app.py\n  README.md\n"
            "Files modified (1, reported by the model):\n  src/app.py\nCommands (1, observed):\n  pytest -q\n"
            "Usage: 12,345 in, 678 out, context 9,876, 3 iterations, 4.5 s, cost $0.01\n") in history
    assert f"User: {LONG_MESSAGE}\nReply: reply 2\nError: the model gave up" in history
    assert "turn-00000000000000000000000000000000" not in history


def test_the_history_of_any_source_groups_facts_by_provenance_and_shows_only_recorded_figures():
    turn = Turn("t1", "fix \x1b[31mit", "succeeded", reply="done\n" * 6, started_at="2026-03-03T10:00:00+00:00",
                ended_at="2026-03-03T10:05:00+00:00",
                files_read=[FileTouch("a.py", "observed")],
                files_modified=[FileTouch("a.py", "observed"), FileTouch("b\n.py", "reported")],
                commands=[Command("make", "reported")],
                usage=Usage(input_tokens=10, output_tokens=2, cache_read_tokens=5, cost=None, context_tokens=None))
    transcript = Transcript("other", "s1", [turn, Turn("t0", "old", "succeeded", detailed=False)],
                            notes=["1 record skipped"])
    now = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
    facts = ("Files read (1, observed):\n  a.py\nFiles modified (1, observed):\n  a.py\n"
             "Files modified (1, reported by the model):\n  b\\n.py\nCommands (1, reported by the model):\n  make\n"
             "Usage: 10 in, 2 out, cache 5 read, 0 written")
    # another agent's file is one conversation (on the Conversation tab): its History is what each turn did
    assert plain_text(history_lines(transcript, now)) == (
        "1 turn kept in the file (the summary has 2).\n1 record skipped\n\n── Turn 1  [succeeded]  "
        "yesterday 10:00, 5 min\nAsked: fix ␛[31mit\n" + facts)
    # Fractal keeps its history apart from the summary: the tab shows it whole
    fractal = Transcript("fractal", "s1", [turn, Turn("t0", "old", "succeeded", detailed=False)],
                         notes=["1 record skipped"])
    assert plain_text(history_lines(fractal, now)) == (
        "1 turn kept in the file (the summary has 2).\n1 record skipped\n\n── Turn 1  [succeeded]  "
        "yesterday 10:00, 5 min\nUser: fix ␛[31mit\nReply: done\ndone\ndone\ndone\n  … 2 more lines\n" + facts)


def test_the_context_tab_says_of_each_part_what_reprise_meter_says():
    parts = (Part("summary", 120, "counted", full_chars=None, note="ends with the draft"),
             Part("history", None, "failed", full_chars=4_000, error="the tokenizer \x1b failed"))
    result = MeterResult("gpt-5", "default", "o200k_base", parts, window=1_000, warn_at=0.8,
                         measured=Measured(2, 300), exact=False)
    printed = plain_text(meter_lines(SESSION_ID, result, with_draft=False)).split("\n")
    assert printed[1:3] == ["  summary          120  counted    ends with the draft",
                            "  history       failed  failed     4,000 characters in full; error: the tokenizer ␛ failed"]
    shown = plain_text(context_lines(result, width=22)).split("\n")
    assert shown[6:12] == ["summary         120 counted", "█" * 2 + "░" * 18, "ends with the draft",
                           "history      failed failed", "░" * 20,
                           "4,000 characters in full; error: the tokenizer ␛ failed"]


def test_the_meter_says_how_the_turn_goes_where_the_agent_compacts_and_its_calibration():
    from reprise.tui.widgets.meter import meter_line

    parts = (Part("measured", 54_375, "measured"), Part("reply", 890, "measured"),
             Part("message", 12, "calibrated estimate", 40, 40))
    result = MeterResult("claude-opus-5-5", "the session's newest reply", "o200k_base", parts, window=1_000_000,
                         warn_at=0.8, measured=None, exact=False, window_source="Claude Code 2.1.332's model table",
                         via="resume", compacts_at=967_000, calibration=1.1508)
    printed = plain_text(meter_lines(SESSION_ID, result, with_draft=False))
    assert "  via           resume  typed into the agent's own terminal UI (Enter, `reprise resume`)" in printed
    assert "  compacts     967,000  the agent compacts the session on its own at this total (97% of the window)" \
        in printed
    assert "  calibrated    ×1.151  the provider's count of a request the session file holds" in printed
    shown = plain_text(context_lines(result, width=40))
    assert "compacts: 967,000" in shown and "calibrated: ×1.151" in shown
    assert "▌░░░░░░░░░ 55,277 / 1M 5.5% ok · compacts at 97% · draft +0" in meter_line(result).plain
    unknown = MeterResult("claude-new-9", "--model", "o200k_base", parts, window=None, warn_at=0.8, measured=None,
                          exact=False, window_source="Claude Code 2.1.332's model table")
    assert meter_line(unknown).plain.startswith("Next turn 55,277 window unknown · draft +0")   # no bar
    assert "window unknown for claude-new-9" in plain_text(meter_lines(SESSION_ID, unknown, with_draft=False))
    assert plain_text(context_lines(unknown)).startswith("Next turn: 55,277 tokens (window unknown)")


def test_counts_say_one_turn_and_many_turns_never_turn_s():
    from reprise.tui.format import counted

    assert [counted(n, "turn") for n in (0, 1, 2, 1_024)] == ["0 turns", "1 turn", "2 turns", "1,024 turns"]


def test_the_meter_line_drops_its_least_important_pieces_first_and_never_cuts_a_figure():
    from reprise.tui.widgets.meter import meter_line

    parts = (Part("measured", 55_265, "measured"), Part("message", 12, "calibrated estimate", 40, 40))
    result = MeterResult("claude-opus-5-5", "recorded", "o200k_base", parts, window=1_000_000, warn_at=0.8,
                         measured=Measured(3, 20_697), exact=False, compacts_at=967_000)
    bar = "▌░░░░░░░░░ "
    full = f"Next turn {bar}55,277 / 1M 5.5% ok · compacts at 97% · draft +0 (40 chars) · last measured 20.7k (turn 3)"
    assert meter_line(result).plain == meter_line(result, width=len(full)).plain == full
    assert meter_line(result, width=len(full) - 1).plain == full.removesuffix(" · last measured 20.7k (turn 3)")
    assert meter_line(result, width=61).plain == f"Next turn {bar}55,277 / 1M 5.5% ok · draft +0"
    assert meter_line(result, width=50).plain == "Next turn 55,277 / 1M 5.5% ok · draft +0"   # the bar gave way
    assert meter_line(result, width=20).plain == "Next turn 55,277 / 1M 5.5% ok"   # what stays, whatever the width
    assert meter_line(result, status="counting…", width=45).plain == "Next turn 55,277 / 1M 5.5% ok · counting…"


def test_the_meter_bar_is_filled_to_the_share_in_the_states_colour():
    from reprise.tui.widgets.meter import meter_line, share_bar

    assert share_bar(0) == ("", "░" * 10)
    assert share_bar(50) == ("█" * 5, "░" * 5)
    assert share_bar(56.25) == ("█" * 5 + "▋", "░" * 4)
    assert share_bar(250) == ("█" * 10, "")   # over the window: full
    for percent in range(0, 120):
        filled, rest = share_bar(percent)
        assert len(filled) + len(rest) == 10
    spans = {}
    for total, state in ((100_000, "ok"), (170_000, "warn"), (210_000, "over")):
        result = MeterResult("m", "recorded", "o200k_base", (Part("measured", total, "measured"), Part("message", 0, "counted")),
                             window=200_000,
                             warn_at=0.8, measured=None, exact=False)
        assert result.state == state
        line = meter_line(result)
        filled = share_bar(result.percent)[0]
        start = line.plain.index(filled)
        spans[state] = next(str(span.style) for span in line.spans if span.start == start)
    assert spans == {"ok": "green", "warn": "yellow", "over": "red"}
