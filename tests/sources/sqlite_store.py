"""The test SQLite agent's sample store for tests outside this folder (its session spans records, its
agent runs a session only in its own folder): written where the test isolation points the agent, the
agent registered as an installed plug-in while inside, the current folder an empty one."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reprise.core.sources.samples import SampleEnv, SampleSet

from .conftest import test_distributions_mounted

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@contextlib.contextmanager
def sqlite_samples(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SampleSet]:
    """The samples under `root` (`root/sqlite-agent`, the projects in `root/projects`), the current
    folder `root/here`, while the plug-in is registered."""
    with test_distributions_mounted():
        from reprise_sqlite_agent.samples import write_samples

        monkeypatch.setenv("REPRISE_SQLITE_AGENT_HOME", str(root / "sqlite-agent"))
        written = write_samples(SampleEnv(root, root / "projects", NOW))
        (root / "here").mkdir()
        monkeypatch.chdir(root / "here")
        yield written
