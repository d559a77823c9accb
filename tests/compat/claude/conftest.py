"""Fixtures of the Claude Code compat tests: the real client's binary (`$REPRISE_CLAUDE_BIN`)
and one store of real sessions made by it per test run (`claude_store`, sessions.py). Without
the binary or namespaces the tests skip with the reason, and fail instead when
REPRISE_REQUIRE_COMPAT is set (as for Fractal, tests/compat/conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..live.batch import ClientUnavailable
from .sessions import ClaudeStore, make_root, make_store, prepare, remove_root


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    try:
        return prepare()
    except ClientUnavailable as exc:
        if os.environ.get("REPRISE_REQUIRE_COMPAT"):
            pytest.fail(f"Claude Code compat tests cannot run: {exc}; REPRISE_REQUIRE_COMPAT is set, "
                        "so this is a failure")
        pytest.skip(f"Claude Code compat tests cannot run: {exc}")


@pytest.fixture(scope="session")
def claude_store(claude_bin) -> Iterator[ClaudeStore]:
    """The scenario's store, made once per test run by the real client (about 10 s)."""
    root = make_root()
    try:
        yield make_store(claude_bin, root)
    finally:
        remove_root(root)
