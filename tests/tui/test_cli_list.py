"""`reprise list` for people at 80 and 120 columns: the title keeps its width, a folder column
with --all, the NEXT column, --sort next|cost and --reverse; the JSON keeps resume_cost."""

from __future__ import annotations

import json

import pytest

from reprise.tui import cli

from .test_cli import put, run, run_json, workspace  # noqa: F401  (workspace is a fixture)

LONG = "Make the settings page follow the system theme, with a toggle to override it"


@pytest.fixture
def listed(capsys, workspace, isolated_paths, tmp_path):  # noqa: F811
    """Three sessions here (one a fork of another, by its title) and one in another folder."""
    here = [put(isolated_paths, workspace, c * 32, turns) for c, turns in (("a", 1), ("b", 5), ("c", 3))]
    put(isolated_paths, tmp_path / "elsewhere" / "tools", "d" * 32, 9)
    for ref, title in zip(here, [LONG, f"{LONG} (trimmed)", "Short one"], strict=True):
        assert cli.main(["rename", ref.session_id, title]) == 0
    capsys.readouterr()
    return here


def table(capsys, monkeypatch, columns: int, *argv: str) -> list[str]:
    monkeypatch.setenv("COLUMNS", str(columns))
    status, out, err = run(capsys, "list", *argv)
    assert status == 0, err
    return out.splitlines()


def title_cell(header: str, line: str) -> str:
    """The title's cell of a line: from TITLE up to the space before the next column's title."""
    start = header.index("TITLE")
    after = header[start + len("TITLE"):]
    return line[start: start + len("TITLE") + len(after) - len(after.lstrip(" ")) - 1]


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("everywhere", [False, True])
def test_the_table_fits_the_width_and_the_title_keeps_40_characters(capsys, monkeypatch, listed, columns,
                                                                      everywhere):
    lines = table(capsys, monkeypatch, columns, *(["--all"] if everywhere else []))
    header, rows = lines[0], [line for line in lines[1:] if line[1:9] in {c * 8 for c in "abcd"}]
    assert len(rows) == (4 if everywhere else 3)
    assert all(len(line) <= columns for line in lines[: len(rows) + 1])
    assert len(title_cell(header, rows[0])) >= 40
    assert ("FOLDER" in header) is everywhere
    if everywhere:
        assert any("tools" in line for line in rows) and any("project" in line for line in rows)
        assert not any("--" in line for line in rows)   # a folder, never a workspace key
    if columns == 120 and not everywhere:   # with a folder column, CONTEXT gives way first
        for title in ("STATUS", "ACTIVE", "TURNS", "SIZE", "CONTEXT", "NEXT"):
            assert title in header


def test_a_fork_and_its_original_differ_when_their_titles_are_cut(capsys, monkeypatch, listed):
    lines = table(capsys, monkeypatch, 80)
    original = next(line for line in lines if line.startswith(" aaaaaaaa"))
    fork = next(line for line in lines if line.startswith(" bbbbbbbb"))
    assert "(trimmed)" in fork and "(trimmed)" not in original


@pytest.mark.parametrize("sort", ["next", "cost"])
def test_sort_next_or_its_old_name_orders_by_the_next_turn_and_reverses(capsys, monkeypatch, listed, sort):
    status, listing = run_json(capsys, "list", "--sort", sort)
    assert status == 0 and listing["sort"] == sort
    costs = [row["resume_cost"] for row in listing["sessions"]]
    assert None not in costs and costs == sorted(costs, reverse=True)
    _, reversed_listing = run_json(capsys, "list", "--sort", sort, "--reverse")
    assert [row["resume_cost"] for row in reversed_listing["sessions"]] == sorted(costs)
    lines = table(capsys, monkeypatch, 80, "--sort", sort, "--reverse")
    assert "NEXT▲" in lines[0] and f"sorted by {sort} ▲ smallest or oldest first" in "\n".join(lines)
    ids = [row["session_id"][:8] for row in reversed_listing["sessions"]]
    assert [line[1:9] for line in lines[1:4]] == ids
    assert all(line.split()[-1].endswith("%") and line.split()[-2].endswith("k") for line in lines[1:4])


def test_the_json_keeps_resume_cost_and_its_fields(capsys, listed):
    _, listing = run_json(capsys, "list", "--sort", "cost")
    row = listing["sessions"][0]
    assert "resume_cost" in row and "next" not in row and set(listing) == {"sessions", "shown", "total", "scope",
                                                                            "sort"}
    assert json.dumps(listing)   # plain JSON


def test_an_unknown_sort_is_a_usage_error(capsys, listed):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["list", "--sort", "price"])
    assert exit_info.value.code == 2


def test_messages_name_a_workspace_by_its_folder_never_its_key(capsys, workspace, isolated_paths,  # noqa: F811
                                                              tmp_path):
    from reprise.core.errors import NotFoundError
    from reprise.core.paths import SessionRef, workspace_key
    from reprise.core.service import Service

    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):   # the same id in two other folders: ambiguous from here
        put(isolated_paths, folder, "abcd1111" + "0" * 24, 1)
    status, error = run_json(capsys, "show", "abcd1111" + "0" * 24)
    candidates = error["error"]["candidates"]
    assert status == 3 and len(candidates) == 2, error
    assert any(str(one) in c for c in candidates) and any(str(two) in c for c in candidates)
    assert not any(workspace_key(one) in c or workspace_key(two) in c for c in candidates)
    service = Service.from_environment(workspace=str(workspace))
    gone = SessionRef(workspace_key(workspace), "e" * 32, "fractal")
    with pytest.raises(NotFoundError) as missing:
        service.resume_plan(gone, for_exec=False)
    assert str(workspace) in str(missing.value) and workspace_key(workspace) not in str(missing.value)
    with pytest.raises(NotFoundError) as unpinned:
        service.set_pinned(gone, True)   # the store itself says which workspace
    assert str(workspace) in str(unpinned.value) and workspace_key(workspace) not in str(unpinned.value)
