"""The `--demo` store: the sample sessions of every registered source (each source's `samples`
module writes its own, in its agent's byte form and its own folder under the demo's root), made in
three shared project folders, so one project shows every agent's sessions side by side.
Deterministic for a given clock, so snapshot tests can use it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from reprise.core.sources.registry import load_object, registry
from reprise.core.sources.samples import PROJECTS, SampleEnv, SampleSet, write_project

SampleWriter = Callable[[SampleEnv], SampleSet]


def sample_writers() -> list[SampleWriter]:
    """The `write_samples` of every registered source that has samples (`SourceSpec.samples`), in
    listing order."""
    return [cast(SampleWriter, load_object(spec.samples)) for spec in registry().specs if spec.samples]


def build_demo(root: Path, *, now: datetime | None = None, seed: int = 7) -> Path:
    """Write the demo store under `root` and return the folder of its main project."""
    return build_demo_store(root, now=now, seed=seed)[0]


def build_demo_store(root: Path, *, now: datetime | None = None, seed: int = 7) -> tuple[Path, dict[str, str]]:
    """Write the demo store under `root`: the folder of its main project, and the variables that
    point each source at its own store there (never the user's)."""
    env = SampleEnv(root, root / "projects", now or datetime.now(UTC), seed)
    for name in PROJECTS:
        write_project(env.projects, name)
    environment: dict[str, str] = {}
    for write in sample_writers():
        environment.update(write(env).environment)
    return env.project("webapp"), environment

