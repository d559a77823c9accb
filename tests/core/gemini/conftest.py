"""Fixtures of the Gemini CLI source's tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reprise.core.config import Settings, load


@pytest.fixture
def settings_for() -> Callable[[], Settings]:
    """The settings as loaded in the test's isolated environment (no config file: the defaults)."""
    return lambda: load().settings
