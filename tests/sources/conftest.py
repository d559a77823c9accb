"""The conformance suite's sources and their sample stores: every registered source, each with the
sessions its `samples` module writes, in the folders the test isolation points it at."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from reprise.core.sources.registry import load_object, registry
from reprise.core.sources.samples import PROJECTS, SampleEnv, SampleSet, write_project
from reprise.tui import cli

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)   # the samples' clock: their files at rest, long before the test


@dataclass(frozen=True)
class RegisteredSource:
    """What the suite knows of a source before any of its code runs: its name, the name people read,
    and the dotted path of its samples."""

    name: str
    label: str
    samples: str
    isolate: dict[str, str]


def registered_sources() -> list[RegisteredSource]:
    """Every registered source that writes samples, in listing order."""
    return [RegisteredSource(spec.name, spec.label, spec.samples, dict(spec.isolate))
            for spec in registry().specs if spec.samples]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`source`: every registered source; with `hostile_store`, each source's samples and the store
    captured from its real client when there is one (`captured.py`)."""
    from .captured import CAPTURED

    found = registered_sources()
    if "hostile_store" in metafunc.fixturenames:
        pairs = [(each, kind) for each in found for kind in ("samples", "captured")
                 if kind == "samples" or each.name in CAPTURED]
        metafunc.parametrize(("source", "hostile_store"), pairs, ids=[f"{each.name}-{kind}" for each, kind in pairs])
    elif "source" in metafunc.fixturenames:
        metafunc.parametrize("source", found, ids=[each.name for each in found])


def write_samples(source: RegisteredSource, root: Path, projects: Path | None = None) -> SampleSet:
    """The source's samples under `root` (its store where the test isolation points it)."""
    env = SampleEnv(root, projects or root / "projects", NOW)
    for name in PROJECTS:
        write_project(env.projects, name)
    writer = cast(Callable[[SampleEnv], SampleSet], load_object(source.samples))
    return writer(env)


def isolate(source: RegisteredSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The source's own variables pointed into `tmp_path`, as the test isolation does for every source."""
    for variable, template in source.isolate.items():
        monkeypatch.setenv(variable, template.format(tmp=tmp_path, state=tmp_path / "state"))


@pytest.fixture
def samples(source: RegisteredSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SampleSet:
    """The source's sample store, in the folder the test isolation points the source at; the current
    folder an empty one (no command lists a workspace by accident)."""
    isolate(source, tmp_path, monkeypatch)
    written = write_samples(source, tmp_path)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    return written


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`reprise ARGV` in process: its exit status, stdout and stderr."""
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """`reprise --json ARGV`'s document, the command having worked."""
    status, out, err = run(capsys, *argv, "--json")
    assert status == 0, (argv, out, err)
    return json.loads(out)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
