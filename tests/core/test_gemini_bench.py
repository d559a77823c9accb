"""The Gemini CLI bench store (bench/gemini_store.py) is what the bench says it measures: its files
are in the real client's line form (each record kind with the keys, in the order, of the files Gemini
CLI 0.61.0 wrote in tests/fixtures/gemini/), and the Gemini source lists every generated session as
one row with the turns, title and folder the generator wrote; the appends the bench makes show in the
next listing. So the bench cannot silently measure nothing, or something else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import gemini, gemini_store

FIXTURES = Path(__file__).parent.parent / "fixtures" / "gemini"
SHAPES = [  # the Claude Code store's manifest fields the plan reads
    {"bytes": 40_000, "turns": 1, "cwd": "/home/dev/project-00", "sdk": True, "mtime": 1.76e9},
    {"bytes": 300_000, "turns": 6, "cwd": "/home/dev/project-00", "sdk": True, "mtime": 1.76e9 + 9e4},
    {"bytes": 600_000, "turns": 9, "cwd": "/home/dev/src/web-api-3", "sdk": False, "mtime": 1.761e9},
    {"bytes": 120_000, "turns": 3, "cwd": "/srv/repos/web-api-3", "sdk": False, "mtime": 1.762e9},
    {"bytes": 900_000, "turns": 14, "cwd": "/home/dev/src/café-menu", "sdk": False, "mtime": 1.763e9},
    {"bytes": 200_000, "turns": 4, "cwd": "/home/dev/work/client_portal", "sdk": True, "mtime": 1.764e9},
    {"bytes": 80_000, "turns": 2, "cwd": "/home/dev/oss/bot-sdk-9", "sdk": False, "mtime": 1.765e9},
    {"bytes": 500_000, "turns": 8, "cwd": "/home/dev/oss/bot-sdk-9", "sdk": False, "mtime": 1.766e9},
]
PARAMS = gemini_store.GeminiStoreParams(name="test", sessions=len(SHAPES), rewind_share=0.5, summary_share=0.6,
                                        subagent_share=0.4, legacy_sessions=1, orphan_folders=1, seed=7)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    directory = tmp_path_factory.mktemp("gemini-bench") / "store"
    return directory / "home", gemini_store.build_into(directory, PARAMS, SHAPES, processes=1, log=lambda _: None)


def listed(home: Path, scratch: Path, workspace: str = "/") -> dict[str, Any]:
    """The Gemini rows of one listing of this home, by session id."""
    (scratch / "state").mkdir(parents=True, exist_ok=True)
    service = gemini.service(scratch / "state", scratch / "cache", workspace, gemini_home=home)
    rows = [row for row in service.list_sessions(all_workspaces=True).rows if row.source == "gemini"]
    service.load_details(rows)
    by_id = {row.session_id or row.file_id: row for row in rows}
    assert len(by_id) == len(rows), "one row a session"
    return by_id


def test_the_store_has_what_the_bench_describes(built: tuple[Path, dict[str, Any]]) -> None:
    _, data = built
    counts = data["counts"]
    assert data["sessions"] == len(SHAPES)
    assert counts["legacy"] == 1 and counts["orphans"] == 1
    assert counts["stubs"] > 0 and counts["subagents"] > 0 and counts["rewound"] > 0 and counts["summary"] > 0
    assert counts["tool_calls"] > 0 and 0 < counts["headless"] <= sum(s["sdk"] for s in SHAPES)
    assert counts["slugs"] == counts["folders"] == len({s["cwd"] for s in SHAPES})
    assert counts["lines_checked"] > 0


def test_every_generated_session_is_one_row_with_its_turns_and_title(built: tuple[Path, dict[str, Any]],
                                                                     tmp_path: Path) -> None:
    home, data = built
    rows = listed(home, tmp_path)
    assert set(rows) == {f["session_id"] for f in data["files"]}
    for facts in data["files"]:
        row = rows[facts["session_id"]]
        assert row.problem_code is None, (facts["path"], row.problem_message)
        assert row.turns == facts["turns"], facts["path"]
        if facts["summary"] is not None:
            assert row.fields.agent_title == facts["summary"], facts["path"]
        orphan = Path(facts["path"]).parent.parent.name in data["orphan_slugs"]
        assert (row.folder == facts["cwd"]) is not orphan, facts["path"]


def test_the_appends_the_bench_makes_show_in_the_next_listing(built: tuple[Path, dict[str, Any]],
                                                              tmp_path: Path) -> None:
    home, data = built
    facts = max((f for f in data["files"] if not f["legacy"] and not f["headless"]), key=lambda f: f["bytes"])
    path = Path(facts["path"])
    copy = tmp_path / "home"
    target = copy / path.relative_to(home)
    target.parent.mkdir(parents=True)
    target.write_bytes(path.read_bytes())
    (copy / ".gemini" / "projects.json").write_bytes((home / ".gemini" / "projects.json").read_bytes())
    (target.parent.parent / ".project_root").write_bytes((path.parent.parent / ".project_root").read_bytes())
    before = listed(copy, tmp_path)[facts["session_id"]].turns
    gemini_store.append_turn(target, seed=1)
    assert listed(copy, tmp_path)[facts["session_id"]].turns == before + 1
    gemini_store.append_rewind_line(target)
    assert listed(copy, tmp_path)[facts["session_id"]].turns == before
    gemini_store.append_after_rewind(target)
    assert listed(copy, tmp_path)[facts["session_id"]].turns == before + 1
    gemini_store.append_summary(target, "set later")
    assert listed(copy, tmp_path)[facts["session_id"]].fields.agent_title == "set later"


def _key_orders(paths: list[Path]) -> dict[str, set[tuple[str, ...]]]:
    found: dict[str, set[tuple[str, ...]]] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            for where, keys in gemini_store.key_orders(record, gemini_store.kind_of(record)):
                found.setdefault(where, set()).add(keys)
    return found


# What the fixtures have no example of (headless runs write no summary and make no subagent), as the
# client's source writes it: `saveSummary` (a `$set` of `summary`) and a subagent's `initialMetadata`
# (kind, then directories). A resumed model message whose calls become `functionCall` parts is in
# tests/fixtures/gemini/resumed-tool-0.61.0.
FROM_SOURCE: dict[str, set[tuple[str, ...]]] = {
    "$set summary": {("$set",)},
    "$set summary.$set": {("summary",)},
    "header subagent": {("sessionId", "projectHash", "startTime", "lastUpdated", "kind", "directories")},
}


def test_records_have_the_real_clients_keys_in_its_order(built: tuple[Path, dict[str, Any]]) -> None:
    home, _ = built
    real = _key_orders(sorted(FIXTURES.rglob("session-*.jsonl")))
    assert "message gemini with toolCalls.toolCalls[]" in real, f"no real tool call under {FIXTURES}"
    ours = _key_orders(sorted(home.rglob("*.jsonl")))
    assert set(ours) >= set(real) - {"header None"}, "every kind of line the client wrote is generated"
    for where, orders in ours.items():
        known = real.get(where) or FROM_SOURCE.get(where)
        assert known is not None, f"the generator writes {where}, the client did not"
        assert orders <= known, (where, orders - known)
