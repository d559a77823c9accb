"""A search's title hits: the rows picked in SQL by the agent's title (only their fields loaded) give
the same hits as every row's fields loaded and each title checked in Python, titles that are not
ASCII among them (the Kelvin sign lowers to an ASCII k, which SQLite's LIKE does not know)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reprise.core import catalog as catalog_module
from reprise.core.search_engine import title_hits as _title_hits
from reprise.core.service import Service

from .claude.builder import ClaudeFile

TITLES = {
    "01": ("Fix the PARSER", "ai"),
    "02": ("\u212aelvin parser notes", "ai"),          # KELVIN SIGN: lower() gives an ASCII "k"
    "03": ("İmport of the data", "custom"),
    "04": ("100%_done: parser", "custom"),
    "05": (None, None),                                   # the words in its prompt only
    "06": ("Unrelated work", "ai"),
    "07": ("parser", "ai"),
}
QUERIES = ["parser", "PARSER fix", "kelvin", "KELVIN parser", "mport", "i", "100%", "_done", "done:", "parse",
           "prompt", "unrelated", "work", "nothing", "renamed parser"]


@pytest.fixture
def service(tmp_path: Path, isolated_paths: Path) -> Service:
    """Claude Code sessions with the titles above, each prompt naming the parser and Kelvin, and
    one session renamed in Reprise."""
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-work-proj"
    for suffix, (title, kind) in TITLES.items():
        session = ClaudeFile(f"5e551011-0000-4000-8000-0000000000{suffix}", cwd="/work/proj")
        session.turn("the parser prompt about kelvin and 100%_done", "A reply.")
        if kind == "ai":
            session.ai_title(title)
        elif kind == "custom":
            session.custom_title(title)
        session.write(projects / f"{session.session_id}.jsonl")
    service = Service.from_environment(workspace="/work/proj")
    service.rename(service.resolve("5e551011-0000-4000-8000-00000000000" + "6"), "Renamed parser")
    return service


def _every_row_checked(service: Service, query: str) -> list[tuple[str, int, str, str]]:
    rows = service.catalog.refresh(None)
    service.catalog.load_details(rows)
    return [(hit.row.path, hit.turn, hit.field, hit.snippet) for hit in _title_hits(query, rows)]


def _picked_in_sql(service: Service, query: str) -> tuple[list[tuple[str, int, str, str]], int]:
    rows = service.catalog.refresh(None)
    picked = service.catalog._titled_rows(query, rows)
    loaded = sum(row.details is not None for row in rows)
    return [(hit.row.path, hit.turn, hit.field, hit.snippet) for hit in _title_hits(query, picked)], loaded


def test_the_title_hits_picked_in_sql_are_those_of_every_row_checked(service: Service) -> None:
    for query in QUERIES:
        assert _picked_in_sql(service, query)[0] == _every_row_checked(service, query), query
    assert len(_picked_in_sql(service, "kelvin")[0]) == 1   # the Kelvin sign's title: not ASCII, still found
    assert len(_picked_in_sql(service, "renamed parser")[0]) == 1   # Reprise's own title


def test_only_the_rows_whose_title_may_hold_the_words_are_loaded(service: Service) -> None:
    hits, loaded = _picked_in_sql(service, "parser")
    assert len(hits) == 5 and loaded < len(TITLES) - 1   # every prompt says "parser": not every row is loaded


def test_without_sqlite_s_json_functions_the_fields_are_matched_whole(service: Service,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_module, "_has_json_functions", lambda: False)
    for query in QUERIES:
        assert _picked_in_sql(service, query)[0] == _every_row_checked(service, query), query
    assert _picked_in_sql(service, "parser")[1] == len(TITLES) - 1   # every row's prompt holds it: all loaded
