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
    Trashing,
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


def _implements(cls: type, role: type) -> bool:
    """Whether the class has every method of the role, none of them abstract (the structural answer)."""
    return all(callable(getattr(cls, name, None)) and not getattr(getattr(cls, name), "__isabstractmethod__", False)
               for name in role.__abstractmethods__)


@pytest.mark.parametrize("cls", list(DECLARED_BEFORE), ids=lambda cls: cls.__name__)
def test_every_source_reads_and_resumes_and_declares_exactly_the_roles_it_implements(cls):
    roles = roles_of(cls)
    assert set(REQUIRED) <= roles
    assert {role.__name__ for role in OPTIONAL if role in roles} == {
        role.__name__ for role in OPTIONAL if _implements(cls, role)}


def test_a_role_declared_and_half_implemented_cannot_be_built():
    class Half(SessionSource, Trashing):   # the trash without its restore, purge and prune
        name = "half"
        label = "Half"

        def remove(self, ref, *, force):
            raise AssertionError

    with pytest.raises(TypeError, match="abstract"):
        Half()
    assert {"trash_entries", "trash_restore", "purge", "prune"} <= Half.__abstractmethods__


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
