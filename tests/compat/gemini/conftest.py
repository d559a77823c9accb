"""Fixtures of the Gemini CLI compat tests: the real client's entry script (`$REPRISE_GEMINI_BIN`)
and one store of real sessions made by it per test run (`gemini_store`, sessions.py). Without the
client, node or namespaces the tests skip with the reason, and fail instead when
REPRISE_REQUIRE_COMPAT is set (as for the other clients)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..live.batch import ClientUnavailable
from .sessions import GeminiStore, make_store, prepare


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    try:
        return prepare()
    except ClientUnavailable as exc:
        reason = f"Gemini CLI compat tests cannot run: {exc}"
        if os.environ.get("REPRISE_REQUIRE_COMPAT"):
            pytest.fail(f"{reason}; REPRISE_REQUIRE_COMPAT is set, so this is a failure")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def gemini_store(gemini_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> GeminiStore:
    """The scenario's store, made once per test run by the real client (about 15 s), under the
    run's temporary folder (pytest keeps the last few runs' and removes older ones)."""
    return make_store(gemini_bin, tmp_path_factory.mktemp("gemini-store"))
