"""Fixtures of the live-Fractal tests: the sandbox venv, the namespace check, a LiveFractal
with its fixed-length root. Without the means to run (no Fractal, no namespaces, no sandbox
venv) the tests skip with the reason, and fail instead when REPRISE_REQUIRE_COMPAT is set."""

from __future__ import annotations

import os

import pytest

from .harness import LiveFractal, LiveUnavailable, make_root, prepare, remove_root


@pytest.fixture(scope="session")
def sandbox_python(fractal_python):
    try:
        return prepare(fractal_python)
    except LiveUnavailable as exc:
        if os.environ.get("REPRISE_REQUIRE_COMPAT"):
            pytest.fail(f"live Fractal tests cannot run: {exc}")
        pytest.skip(f"live Fractal tests cannot run: {exc}")


@pytest.fixture
def live(fractal_python, sandbox_python, isolated_paths):
    root = make_root()
    try:
        yield LiveFractal(fractal_python, sandbox_python, isolated_paths, root)
    finally:
        remove_root(root)
