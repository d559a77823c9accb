"""Every config value is validated at load: a wrong value anywhere is one line naming the file, the
key and what is wrong, exit 2, before any command runs; a valid config never crashes a command."""

from __future__ import annotations

import typing
from pathlib import Path

import annotated_types
import pytest
from pydantic import BaseModel

from reprise.core import config
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.sources.fractal.codec import encode
from reprise.core.sources.fractal.store import Store
from reprise.tui import cli

from ..core.test_store import make_state

SESSION = "a" * 32
ONE_MODEL = '[[meter.models]]\npattern = "*"\nwindow = 200000\n'

# (config text, the key the message names, words the message must hold)
WRONG = [
    (ONE_MODEL + 'encoding = "bogus"\n', "meter.models[0].encoding", ["bogus", "o200k_base"]),
    ('[agent]\ntimeout = inf\n', "agent.timeout", ["finite", "inf"]),
    ('[agent]\ntimeout = nan\n', "agent.timeout", ["finite", "nan"]),
    ('[agent]\ntimeout = -1\n', "agent.timeout", ["greater than 0", "-1"]),
    ('[agent]\ntimeout = 0\n', "agent.timeout", ["greater than 0"]),
    ('[agent]\ntimeout = 1e12\n', "agent.timeout", ["at most"]),
    ('[agent]\ntimeout = "600"\n', "agent.timeout", ["number", '"600"']),
    ('[agent]\nbackend = "fractall"\n', "agent.backend", ["fractall", "echo"]),
    ('[agent]\nresume = "fractal --resume {session_id}"\n', "agent.resume", ["array"]),
    ('[agent]\nresume = []\n', "agent.resume", ["at least 1"]),
    ('[agent]\nresume = ["fractal", 7]\n', "agent.resume[1]", ["string", "7"]),
    ('[agent]\nturn = ["run\\u0000me"]\n', "agent.turn[0]", ["NUL"]),
    ('agent = 5\n', "agent", ["table"]),
    ('[agent]\ntimout = 30\n', "agent.timout", ["unknown key", "timeout"]),
    ('[agnet]\ntimeout = 30\n', "agnet", ["unknown key", "agent"]),
    ('[meter]\nwarn = 1.5\n', "meter.warn", ["at most 1"]),
    ('[meter]\nwarn = true\n', "meter.warn", ["number", "true"]),
    ('[meter]\nmodel = 5\n', "meter.model", ["string"]),
    ('[meter]\nmodels = {pattern = "*", window = 1}\n', "meter.models", ["array"]),
    (ONE_MODEL + 'exact = 1\n', "meter.models[0].exact", ["true or false"]),
    (ONE_MODEL + 'windw = 100\n', "meter.models[0].windw", ["unknown key", "window"]),
    ('[[meter.models]]\npattern = "*"\nwindow = 1.5\n', "meter.models[0].window", ["integer", "1.5"]),
    ('[[meter.models]]\npattern = "*"\nwindow = 1000000000000\n', "meter.models[0].window", ["at most"]),
    ('[[meter.models]]\nwindow = 1000\n', "meter.models[0].pattern", ["required"]),
    (ONE_MODEL + 'overhead = -5\n', "meter.models[0].overhead", ["at least 0"]),
    ('[history]\nmax_turns = true\n', "history.max_turns", ["integer", "true"]),
    ('[history]\nmax_turns = 0\n', "history.max_turns", ["at least 1"]),
    ('[history]\nmax_turns = 100000\n', "history.max_turns", ["at most"]),
    ('[store]\nstate_dir = 1979-05-27\n', "store.state_dir", ["string"]),
]


@pytest.fixture
def project(tmp_path, monkeypatch, isolated_paths):
    """A workspace with one session, the current directory."""
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    ref = SessionRef(workspace_key(folder), SESSION, "fractal")
    path = Store(isolated_paths).paths.session_file(ref)
    path.parent.mkdir(parents=True)
    path.write_bytes(encode(make_state(3, SESSION)))
    return folder


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("text, key, words", WRONG, ids=[case[1] + ":" + case[0].splitlines()[-1] for case in WRONG])
@pytest.mark.parametrize("command", [["list", "--sort", "cost"], ["trim", SESSION, "--fit", "1000", "--dry-run"]],
                         ids=["list-sort-cost", "trim-fit"])
def test_a_wrong_config_value_is_one_line_naming_file_key_and_what_is_wrong_exit_2(
        capsys, project, tmp_path, text, key, words, command):
    config_file = tmp_path / "config.toml"
    config_file.write_text(text)
    status, out, err = run(capsys, *command)
    assert status == 2 and out == "", err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"reprise: {config_file}: {key}: "), err
    assert all(word in err for word in words), err


def test_json_output_names_the_config_error_too(capsys, project, tmp_path):
    (tmp_path / "config.toml").write_text('[agent]\ntimeout = inf\n')
    status, out, _ = run(capsys, "list", "--json")
    assert status == 2 and '"code": "config"' in out and "agent.timeout" in out


def test_several_wrong_values_name_the_first_and_count_the_rest(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[agent]\ntimeout = inf\nbackend = 3\n[meter]\nwarn = 9\n')
    with pytest.raises(config.ConfigError) as caught:
        config.load(config_path=path)
    assert caught.value.message.startswith(f"{path}: agent.") and "and 2 more problems" in caught.value.message
    assert caught.value.exit_status == 2


FULL = """
[store]
state_dir = "{state}"

[agent]
backend = "echo"
resume = ["fractal", "--workspace", "{workspace}", "--resume", "{session_id}"]
turn = ["my-agent", "--session", "{session_id}"]
timeout = 600

[meter]
model = "openai/gpt-4.1"
warn = 0.9

[[meter.models]]
pattern = "gpt-4.1*"
encoding = "o200k_base"
window = 1047576
overhead = 13700
exact = true

[[meter.models]]
pattern = "*"
encoding = "cl100k_base"
window = 2000000
overhead = 0

[history]
max_turns = 20
"""


def test_a_full_valid_config_loads_and_list_sort_cost_and_trim_fit_work(capsys, project, tmp_path, isolated_paths):
    (tmp_path / "config.toml").write_text(FULL.replace("{state}", str(isolated_paths)))
    loaded = config.load()
    assert loaded.settings.agent.timeout == 600.0 and loaded.settings.meter.models[1].encoding == "cl100k_base"
    status, out, err = run(capsys, "list", "--sort", "cost")
    assert status == 0 and SESSION[:8] in out, err
    status, out, err = run(capsys, "trim", SESSION, "--fit", "100000", "--dry-run")
    assert status == 0 and "Traceback" not in err, err


def _models(model: type[BaseModel]):
    """Every settings model reachable from `model`, and it."""
    yield model
    for info in model.model_fields.values():
        for arg in (info.annotation, *typing.get_args(info.annotation)):
            for inner in (arg, *typing.get_args(arg)):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    yield from _models(inner)


def _numeric(annotation) -> bool:
    return annotation in (int, float) or any(arg in (int, float) for arg in typing.get_args(annotation))


def test_every_settings_model_is_strict_and_every_number_has_a_lower_and_an_upper_bound():
    """The rule any new setting must follow to fit in: strict TOML types, unknown keys refused, no
    infinities or NaN, and a range on every number (so no absurd value reaches the code)."""
    models = set(_models(config.Settings))
    assert {config.AgentSettings, config.ModelSpec, config.HistorySettings} <= models
    for model in models:
        assert model.model_config.get("extra") == "forbid", model
        assert model.model_config.get("strict") is True, model
        assert model.model_config.get("allow_inf_nan") is False, model
        for name, info in model.model_fields.items():
            if not _numeric(info.annotation):
                continue
            lower = [m for m in info.metadata if isinstance(m, (annotated_types.Gt, annotated_types.Ge))]
            upper = [m for m in info.metadata if isinstance(m, (annotated_types.Lt, annotated_types.Le))]
            assert lower and upper, f"{model.__name__}.{name} needs both bounds"


def test_the_config_file_path_in_the_message_is_the_one_read(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere" / "reprise.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text('[meter]\nwarn = -0.5\n')
    monkeypatch.setenv("REPRISE_CONFIG", str(elsewhere))
    with pytest.raises(config.ConfigError) as caught:
        config.load()
    assert caught.value.message.startswith(f"{Path(elsewhere)}: meter.warn: ")


def test_without_a_config_file_the_settings_are_the_validated_defaults(tmp_path, monkeypatch):
    """The defaults are taken as they are when no config file exists (no validator built): they are
    exactly what validating an empty file gives, the built-in models included, every key "default"."""
    monkeypatch.setenv("REPRISE_CONFIG", str(tmp_path / "absent.toml"))
    loaded = config.load()
    validated = config.Settings.model_validate({})
    assert loaded.settings == validated
    assert loaded.settings.model_dump() == validated.model_dump()
    assert [spec.input_budget for spec in loaded.settings.meter.models][:2] == [272_000, 1_014_808]
    for spec in config.DEFAULT_MODELS:
        assert config.ModelSpec.model_validate(spec.model_dump(exclude={"window"})) == spec
    flat = config._flatten(validated.model_dump())
    assert set(loaded.sources) == set(flat) and {loaded.sources[key] for key in flat if key != "store.state_dir"} \
        == {"default"}
    (tmp_path / "absent.toml").write_text("")
    assert config.load().settings == validated


def test_without_a_config_file_the_catalog_keeps_its_own_search_defaults(tmp_path, monkeypatch):
    """A service started without a config file leaves the catalog's `[search]` defaults as they are
    (reading the settings would build their models): they must be the settings' own."""
    from reprise.core.service import Service

    monkeypatch.setenv("REPRISE_CONFIG", str(tmp_path / "absent.toml"))
    service = Service(config.load(), workspace=tmp_path)
    defaults = config.Settings.model_validate({}).search
    assert (service.catalog.index_enabled, service.catalog.index_cap) == (defaults.index, defaults.max_bytes)
    service.catalog.close()
