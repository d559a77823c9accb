"""The conformance suite's sources and their sample stores: every registered source, each with the
sessions its `samples` module writes, in the folders the test isolation points it at.

The test-only distributions under this folder (each a folder with its own `pyproject.toml`, such as
`sqlite_agent/`) are registered the way an installed plug-in is, without pip or a network: a
`<name>-<version>.dist-info` holding its `entry_points.txt` is written from its `pyproject.toml`, and
while a test of a source runs, that and the distribution's folder are first on `sys.path` and in
`PYTHONPATH` (for the commands a test runs as processes). Other tests do not see them."""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from reprise.core.sources.registry import load_object, registry
from reprise.core.sources.samples import PROJECTS, SampleEnv, SampleSet, write_project
from reprise.tui import cli

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)   # the samples' clock: their files at rest, long before the test
HERE = Path(__file__).resolve().parent


def _dist_info(project: Path, into: Path) -> None:
    """The `.dist-info` pip would write for the project's `pyproject.toml`: its name, version and
    entry points."""
    declared = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    name = re.sub(r"[-_.]+", "_", declared["name"])
    info = into / f"{name}-{declared['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {declared['name']}\n"
                                   f"Version: {declared['version']}\n", encoding="utf-8")
    groups = declared.get("entry-points", {})
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items()) + "\n"
        for group, entries in groups.items()), encoding="utf-8")


def _test_distributions() -> list[str]:
    """The folders to put on the path for the test-only distributions: where their `.dist-info` are
    written (once per run), then each distribution's own folder."""
    projects = sorted(path.parent for path in HERE.glob("*/pyproject.toml"))
    if not projects:
        return []
    infos = Path(tempfile.mkdtemp(prefix="reprise-test-distributions-"))
    atexit.register(shutil.rmtree, infos, ignore_errors=True)
    for project in projects:
        _dist_info(project, infos)
    return [str(infos), *(str(project) for project in projects)]


TEST_DISTRIBUTIONS = _test_distributions()


@contextlib.contextmanager
def test_distributions_mounted() -> Iterator[None]:
    """The test-only distributions registered (first on `sys.path` and in `PYTHONPATH`) while inside."""
    saved_path, saved_env = list(sys.path), os.environ.get("PYTHONPATH")
    sys.path[:0] = TEST_DISTRIBUTIONS
    os.environ["PYTHONPATH"] = os.pathsep.join([*TEST_DISTRIBUTIONS, *filter(None, [saved_env])])
    try:
        yield
    finally:
        sys.path[:] = saved_path
        if saved_env is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved_env


@pytest.fixture
def test_distributions() -> Iterator[None]:
    """The test-only distributions registered for the test that asks (a distribution's own tests)."""
    with test_distributions_mounted():
        yield


@pytest.fixture(autouse=True)
def _sources_of_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test of a source runs with the test-only distributions registered."""
    if "source" not in request.fixturenames:
        yield
        return
    with test_distributions_mounted():
        yield


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

    with test_distributions_mounted():
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
