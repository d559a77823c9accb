"""`[sources]` is built from the registry: each registered source's table is validated by its spec's
settings model (unknown keys and wrong types named with the file), its store found by the generic
detection, `new_agent` checked against the registered names; a source that did not load keeps its
table unchecked."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprise.core import config
from reprise.core.errors import ConfigError

from .plug_ins import plug_in, spec_module

SETTINGS = """
from reprise.core.config import Text
from reprise.core.sources.settings import SourceSettings

class PlugSettings(SourceSettings):
    colour: Text = "red"
"""


@pytest.fixture
def plug(tmp_path, monkeypatch):
    """A registered source "plug" with its own settings model and a store under $PLUG_HOME/.plug."""
    folder = tmp_path / "dist"
    spec = spec_module(detect=None, settings="reprise_plug_settings:PlugSettings",
                       location='StoreLocation("PLUG_HOME", variable_is_home=True, default=".plug", marker="db")')
    plug_in(folder, {"plug": "reprise_plug_spec:SPEC"},
            {"reprise_plug_spec": spec, "reprise_plug_settings": SETTINGS})
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PLUG_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / ".plug"


def _config(text: str) -> Path:
    import os

    path = Path(os.environ["REPRISE_CONFIG"])
    path.write_text(text)
    return path


def test_a_registered_source_has_its_table_and_its_store_found_by_the_generic_detection(plug):
    choice = config.load().choices["plug"]
    assert not choice.enabled and choice.why.startswith("off: no Plug Agent store (no db/ folder) at ")
    (plug / "db").mkdir(parents=True)
    loaded = config.load()
    assert loaded.choices["plug"].enabled and loaded.choices["plug"].roots == (plug,)
    assert "(roots from PLUG_HOME)" in loaded.choices["plug"].why
    assert loaded.settings.sources.plug.colour == "red"
    _config('[sources.plug]\ncolour = "blue"\nenabled = false\n')
    loaded = config.load()
    assert loaded.settings.sources.plug.colour == "blue" and not loaded.choices["plug"].enabled
    assert loaded.sources["sources.plug.colour"].startswith("config file ")
    assert loaded.settings.sources.claude.resume == ["claude", "--resume", "{session_id}"]


def test_a_wrong_key_or_type_in_a_registered_sources_table_is_named_with_the_file(plug):
    path = _config('[sources.plug]\ncolor = "blue"\n')
    with pytest.raises(ConfigError) as caught:
        config.load()
    assert caught.value.message == f"{path}: sources.plug.color: unknown key; the keys here are enabled, roots, colour"
    _config("[sources.plug]\ncolour = 3\n")
    with pytest.raises(ConfigError) as caught:
        config.load()
    assert caught.value.message.endswith("sources.plug.colour: must be a string (got 3)")
    _config('[sources.nobody]\nroots = ["/x"]\n')
    with pytest.raises(ConfigError) as caught:
        config.load()
    assert ("sources.nobody: unknown key; the keys here are new_agent, claude, codex, gemini, plug"
            in caught.value.message)


def test_new_agent_is_checked_against_the_registered_sources(plug):
    path = _config('[sources]\nnew_agent = "opencode"\n')
    with pytest.raises(ConfigError) as caught:
        config.load()
    assert caught.value.message == (f'{path}: sources.new_agent: unknown agent "opencode"; the sources are '
                                    "fractal, claude, codex, gemini, plug")
    _config('[sources]\nnew_agent = "plug"\n')
    assert config.load().settings.sources.new_agent == "plug"


def test_the_table_of_a_source_that_did_not_load_is_kept_unchecked(tmp_path, monkeypatch):
    plug_in(tmp_path, {"gone": "reprise_gone_nowhere:SPEC"}, {})
    monkeypatch.syspath_prepend(str(tmp_path))
    _config('[sources.gone]\nanything = 1\n')
    loaded = config.load()
    assert "gone" not in loaded.choices and loaded.settings.sources.gone == {"anything": 1}


def test_a_settings_model_that_does_not_load_turns_its_source_off_and_says_why(tmp_path, monkeypatch):
    spec = spec_module(detect=None, settings="reprise_plug_nomodel:Nothing",
                       location='StoreLocation("PLUG_HOME", default=".plug", marker="db")')
    plug_in(tmp_path, {"plug": "reprise_plug_nomodel_spec:SPEC"}, {"reprise_plug_nomodel_spec": spec})
    monkeypatch.syspath_prepend(str(tmp_path))
    choice = config.load().choices["plug"]
    assert not choice.enabled
    assert choice.why.startswith("off: its settings model did not load: ModuleNotFoundError")
    assert config.load().choices["claude"].why.startswith("off: no Claude Code store")


def test_reprises_own_settings_models_load():
    """A run without a config file does not import the settings models of Reprise's own sources (nor
    pydantic): it takes them as loading, which this holds."""
    from reprise.core.sources.registry import load_object, registry
    from reprise.core.sources.settings import SourceSettings

    found = registry()
    own = [spec for spec in found.specs if spec.name in found.own and spec.settings is not None]
    assert {spec.name for spec in own} >= {"claude", "codex", "gemini"}
    for spec in own:
        model = load_object(spec.settings)
        assert isinstance(model, type) and issubclass(model, SourceSettings)


def test_without_a_config_file_a_plug_ins_settings_model_is_still_checked(plug, tmp_path, monkeypatch):
    """Only Reprise's own models are taken as loading: a plug-in's is loaded at start, config file or not."""
    loaded = config.load()
    assert not loaded.from_file and loaded.choices["plug"].why.startswith("off: no ")
    monkeypatch.setattr("reprise.core.settings_models.broken_models", lambda: {"plug": "its settings model broke"})
    assert config.load().choices["plug"].why == "off: its settings model broke"
