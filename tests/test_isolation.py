"""The test isolation comes from the registry: every registered source's store variables (its spec's
`isolate`) point into the test's own folder and its `unset` ones are gone, and tests/conftest.py
names no agent's variable itself."""

from __future__ import annotations

import os
from pathlib import Path

from reprise.core.sources.registry import registry


def test_every_sources_variables_point_into_the_tests_folder(tmp_path):
    specs = registry().specs
    assert any(spec.isolate for spec in specs)
    for spec in specs:
        for variable in spec.isolate:
            assert Path(os.environ[variable]).is_relative_to(tmp_path), (spec.name, variable)
        for variable in spec.unset:
            assert variable not in os.environ, (spec.name, variable)


def test_the_conftest_names_no_agents_variable():
    text = (Path(__file__).parent / "conftest.py").read_text(encoding="utf-8")
    for spec in registry().specs:
        for variable in (*spec.isolate, *spec.unset):
            assert variable not in text, (spec.name, variable)
