"""Roles: a source has the roles its class inherits, and what it can do follows from them."""

from __future__ import annotations

import pytest

from reprise.core import config
from reprise.core.errors import ForkOnlyError, RoleMissingError
from reprise.core.service import Service
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
    TrimmingInPlace,
    capabilities_of,
    roles_of,
)
from reprise.core.trimming import TrimOptions

from .. import factories
from ..masked import masked

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


# --- the service asks for a role and refuses with a sentence naming the source ---------------------

@pytest.fixture
def service(tmp_path, isolated_paths):
    folder = tmp_path / "project"
    folder.mkdir()
    factories.write_session(isolated_paths, folder, factories.session_bytes("roles-one", turns=3))
    return Service(config.load(state_dir=str(isolated_paths)), workspace=folder)


def refused(call) -> RoleMissingError:
    with pytest.raises(RoleMissingError) as caught:
        call()
    assert caught.value.exit_status == 2 and caught.value.code == "usage"
    return caught.value


def test_every_action_of_an_absent_role_is_refused_with_a_sentence_naming_the_source(service):
    ref = service.resolve("roles-one")
    before = open(service.session_path(ref), "rb").read()
    service.sources["fractal"] = masked(service.sources["fractal"], frozenset(OPTIONAL))
    sentences = {
        "metered": lambda: service.measure(ref),
        "sent a turn": lambda: service.check_sendable(ref, "hello"),
        "trimmed as a fork": lambda: service.trim(ref, TrimOptions(drop=("1",)), fork=True),
        "trimmed": lambda: service.trim(ref, TrimOptions(drop=("1",))),
        "restored": lambda: service.restore(ref),
        "moved to the trash": lambda: service.remove(ref),
        "restored from the trash": lambda: service.trash_restore(ref),
        "kept": lambda: service.keep(ref),
    }
    for phrase, call in sentences.items():
        error = refused(call)
        assert error.message == f"Fractal sessions cannot be {phrase} by Reprise.", phrase
        assert error.hint == "what Reprise does with Fractal sessions: list, search, show, resume"
        assert error.source == "fractal"
    assert refused(lambda: service.new_session("x", source="fractal")).message == \
        "Reprise cannot start Fractal sessions."
    assert refused(lambda: service.relink("a--0123456789abcdef", "/tmp")).role == "Relinking"
    # what needs no role still works, and the queries of an absent role answer "none"
    assert service.show(ref).transcript.turns and not service.can_undo_trim(ref)
    assert service.trash_entries(all_workspaces=True) == [] and service.estimates_vs_measured(ref) == []
    assert service.stale_pending(ref) == [] and service.mark_stale_interrupted(ref) == []
    assert service.resume_plan(ref, for_exec=False).argv
    assert service.list_sessions().rows and service.doctor().search_index is not None
    assert open(service.session_path(ref), "rb").read() == before


def test_a_source_that_forks_only_refuses_a_trim_in_place_with_the_fork_only_error(service):
    ref = service.resolve("roles-one")
    service.sources["fractal"] = masked(service.sources["fractal"], frozenset({TrimmingInPlace}))
    with pytest.raises(ForkOnlyError, match="Fractal's own files are never rewritten: use --fork."):
        service.trim(ref, TrimOptions(drop=("1",)))
    assert service.trim(ref, TrimOptions(drop=("1",)), fork=True, dry_run=True).plan is not None
    # a preview writes nothing either way: it shows the fork such a source would write
    assert service.trim(ref, TrimOptions(drop=("1",)), dry_run=True).plan.counts()["dropped"] == 1


def test_the_service_names_the_sources_with_a_role(service):
    assert [type(source).__name__ for source in service.sources_with(Metered)] == ["FractalSource"]
    assert service.can("fractal", Metered) and not service.can("fractal", Keeping)
    assert not service.can("no-such-source", Metered)
    service.sources["fractal"] = masked(service.sources["fractal"], frozenset({Metered}))
    assert service.sources_with(Metered) == [] and not service.can("fractal", Metered)
    assert service.refusal("fractal", Metered) == "Fractal sessions cannot be metered by Reprise."
