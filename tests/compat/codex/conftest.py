"""Fixtures of the Codex compat tests: the real client's binary (`$REPRISE_CODEX_BIN`) and one store
of real sessions made by it per test run (`codex_store`, sessions.py). Without the binary or
namespaces the tests skip with the reason, and fail instead when REPRISE_REQUIRE_COMPAT is set (as
for Fractal and Claude Code)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..live.batch import ClientUnavailable
from .sessions import CodexStore, make_root, make_store, prepare, remove_root


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    try:
        return prepare()
    except ClientUnavailable as exc:
        if os.environ.get("REPRISE_REQUIRE_COMPAT"):
            pytest.fail(f"Codex compat tests cannot run: {exc}; REPRISE_REQUIRE_COMPAT is set, so this is a failure")
        pytest.skip(f"Codex compat tests cannot run: {exc}")


@pytest.fixture(scope="session")
def codex_store(codex_bin) -> Iterator[CodexStore]:
    """The scenario's store, made once per test run by the real client (about 15 s)."""
    root = make_root()
    try:
        yield make_store(codex_bin, root)
    finally:
        remove_root(root)
