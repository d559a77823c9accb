"""The agent backends by name: Reprise's own `command` and `echo`, and those the registered sources
offer in their specs (Fractal's `fractal`). `[agent] backend`, `--agent` and the default choice all
read them from the registry; core/agents.py names no source."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from reprise.core import backend_names as names_module
from reprise.core import config
from reprise.core.agents import TurnRequest, choose_backend
from reprise.core.config import AgentSettings
from reprise.core.errors import AgentError, ConfigError, UsageError
from reprise.core.outcome import TurnOutcome
from reprise.core.sources.registry import Registry, registry
from reprise.core.sources.spec import SourceSpec
from reprise.tui.cli.parser import build_parser


class ToyBackend:
    """A backend a test source offers: it runs the program `toy-agent`."""

    name = "toy"
    writes_session = True
    program = "toy-agent"
    install_hint = "install toy-agent"

    def run(self, request: TurnRequest, cancel: threading.Event) -> TurnOutcome:
        return TurnOutcome("succeeded", "toy")


def toy_spec(name: str, backends: dict[str, str], order: int) -> SourceSpec:
    return SourceSpec(name=name, label=name.title(), mark=name[0].upper(), order=order, id_pattern=r"[0-9a-f]{8}",
                      factory="toy.source:Toy", listing_module="toy.listing", backends=backends)


@pytest.fixture
def toy_registry(monkeypatch):
    """The registered sources plus one offering `toy`, one offering `echo` (Reprise's own name, not
    offered again) and a second `toy` (taken by the first)."""
    here = f"{__name__}:ToyBackend"
    specs = (*registry().specs, toy_spec("toybox", {"toy": here, "echo": "nowhere:Echo"}, 90),
             toy_spec("yard", {"toy": "nowhere:Other"}, 95))
    monkeypatch.setattr(names_module, "registry", lambda: Registry(specs, (), {}))


def test_the_names_are_reprises_own_then_those_the_sources_offer():
    assert names_module.backend_names() == ("command", "echo", "fractal")
    assert names_module.offered_backends() == {"fractal": "reprise.core.sources.fractal.turns:FractalBackend"}


def test_a_backend_a_source_offers_is_accepted_by_the_config_and_the_command_line(toy_registry, tmp_path):
    assert names_module.backend_names() == ("command", "echo", "fractal", "toy")
    path = tmp_path / "config.toml"
    path.write_text('[agent]\nbackend = "toy"\n', encoding="utf-8")
    assert config.load(config_path=path).settings.agent.backend == "toy"
    path.write_text('[agent]\nbackend = "nope"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown backend 'nope'; choose one of command, echo, fractal, toy"):
        config.load(config_path=path)
    assert build_parser().parse_args(["--agent", "toy", "list"]).agent == "toy"


def test_a_named_backend_runs_its_program_and_says_how_to_install_it(toy_registry, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AgentError, match="The toy-agent program was not found on PATH.") as refused:
        choose_backend("toy", AgentSettings())
    assert refused.value.hint == "install toy-agent, or choose another backend with --agent or [agent] backend"
    with pytest.raises(UsageError, match="Unknown agent backend 'nope'; choose one of command, echo, fractal, toy."):
        choose_backend("nope", AgentSettings())
    assert choose_backend(None, AgentSettings()) is None   # neither fractal nor toy-agent installed
    program = Path(tmp_path / "toy-agent")
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert isinstance(choose_backend("toy", AgentSettings()), ToyBackend)
    assert isinstance(choose_backend(None, AgentSettings()), ToyBackend)   # the first offered one installed
    assert choose_backend("echo", AgentSettings()).name == "echo"   # Reprise's own, not the source's


def test_a_backend_whose_code_does_not_load_is_an_agent_error(monkeypatch):
    specs = (toy_spec("toybox", {"toy": "reprise_no_such_module:Toy"}, 90),)
    monkeypatch.setattr(names_module, "registry", lambda: Registry(specs, (), {}))
    with pytest.raises(AgentError, match="The agent backend reprise_no_such_module:Toy did not load: "
                                         "ModuleNotFoundError"):
        choose_backend("toy", AgentSettings())
