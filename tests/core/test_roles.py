"""Roles: a source has the roles its class inherits, and what it can do follows from them."""

from __future__ import annotations

import pytest

from reprise.core.sources.base import SessionSource
from reprise.core.sources.claude.source import ClaudeSource
from reprise.core.sources.codex.source import CodexSource
from reprise.core.sources.fractal.source import FractalSource
from reprise.core.sources.roles import (
    OPTIONAL,
    REQUIRED,
    Capabilities,
    Keeping,
    Metered,
    Reader,
    Resumer,
    capabilities_of,
    roles_of,
)

# The flags the three sources declared beside their methods before roles (issue 28), as they were.
DECLARED_BEFORE = {
    FractalSource: dict(meter=True, resume=True, new=True, send=True, trim_in_place=True, trim_fork=True,
                        trash=True, keep=False),
    ClaudeSource: dict(meter=True, resume=True, keep=True, new=True, send=True, trash=True, trim_fork=True,
                       trim_in_place=False),
    CodexSource: dict(meter=True, resume=True, new=True, send=True, trash=True, trim_fork=True,
                      trim_in_place=False, keep=False),
}


@pytest.mark.parametrize("cls", list(DECLARED_BEFORE), ids=lambda cls: cls.__name__)
def test_the_capabilities_derived_from_roles_are_the_ones_declared_before(cls):
    derived = capabilities_of(roles_of(cls))
    assert {name: getattr(derived, name) for name in DECLARED_BEFORE[cls]} == DECLARED_BEFORE[cls]


@pytest.mark.parametrize("cls", list(DECLARED_BEFORE), ids=lambda cls: cls.__name__)
def test_every_source_reads_and_resumes_and_its_declared_roles_are_its_methods(cls):
    roles = roles_of(cls)
    assert set(REQUIRED) <= roles
    for role in OPTIONAL:   # a declared role is implemented
        if role in roles:
            assert all(not getattr(getattr(cls, name), "__isabstractmethod__", False)
                       for name in role.__abstractmethods__), role


def test_roles_are_nominal_a_method_of_the_same_name_claims_none():
    class Stray(SessionSource):   # has `keep` and `kept_versions` without inheriting Keeping
        name = "stray"
        label = "Stray"

        def keep(self, ref):
            raise AssertionError

        def kept_versions(self):
            return {}

    assert Keeping not in roles_of(Stray)
    assert roles_of(Stray) == frozenset({Reader, Resumer})
    assert capabilities_of(roles_of(Stray)) == Capabilities()


def test_a_source_without_optional_roles_can_do_nothing_optional():
    derived = capabilities_of(frozenset({Reader, Resumer}))
    assert derived.resume and not any(getattr(derived, name) for name in Capabilities.__slots__ if name != "resume")
    assert capabilities_of(frozenset({Reader, Resumer, Metered})).meter
