"""Fixtures of the Gemini CLI compat tests: the real client's entry script (`$REPRISE_GEMINI_BIN`)
and one store of real sessions made by it per test run (`gemini_store`, sessions.py). Without the
client or namespaces the tests skip with the reason, and fail instead when REPRISE_REQUIRE_COMPAT is
set (as for the other clients)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..live.batch import ClientUnavailable
from .sessions import GeminiStore, make_root, make_store, prepare, remove_root


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    try:
        return prepare()
    except ClientUnavailable as exc:
        if os.environ.get("REPRISE_REQUIRE_COMPAT"):
            pytest.fail(f"Gemini CLI compat tests cannot run: {exc}; REPRISE_REQUIRE_COMPAT is set, "
                        "so this is a failure")
        pytest.skip(f"Gemini CLI compat tests cannot run: {exc}")


@pytest.fixture(scope="session")
def gemini_store(gemini_bin) -> Iterator[GeminiStore]:
    """The scenario's store, made once per test run by the real client (about 15 s)."""
    root = make_root()
    try:
        yield make_store(gemini_bin, root)
    finally:
        remove_root(root)
