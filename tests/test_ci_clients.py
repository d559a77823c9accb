""".ci/clients.py: the real client of every registered source, installed from its spec's `ClientSpec`
the way .ci/run did it by hand (the same pinned packages, npm flags, venvs, globs, size check and
environment), its export lines the only thing on stdout. Nothing here installs anything: the dry run
and a recording runner stand in for npm, pip and apt."""

from __future__ import annotations

import importlib.util
import os
import shlex
import sys
from pathlib import Path

import pytest

from reprise.core.sources.registry import LoadFailure, Registry, registry
from reprise.core.sources.spec import ClientSpec, SourceSpec

CLIENTS = Path(__file__).resolve().parents[1] / ".ci" / "clients.py"


def _load_clients():
    spec = importlib.util.spec_from_file_location("ci_clients", CLIENTS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["ci_clients"] = module
    spec.loader.exec_module(module)
    return module


clients = _load_clients()


def source(name: str = "toy", client: ClientSpec | None = None, label: str = "Toy Agent") -> SourceSpec:
    return SourceSpec(name=name, label=label, mark="T", order=50, id_pattern=r"[0-9a-f]{8}",
                      factory="toy.source:ToySource", listing_module="toy.listing", client=client)


class Recording(clients.Runner):
    """A runner that records each command instead of running it, and plays npm's part: the packages'
    files appear under the prefix as `files` says."""

    def __init__(self, files: dict[str, int] | None = None):
        super().__init__(dry_run=False)
        self.commands: list[list[str]] = []
        self.files = files or {}

    def run(self, argv, *, quiet: bool = False) -> None:
        self.commands.append(list(argv))
        if argv[:2] == ["npm", "install"]:
            prefix = Path(argv[3])
            for relative, size in self.files.items():
                path = prefix / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(b"x" * size)
                path.chmod(0o755)
        if argv[1:3] == ["-m", "venv"]:
            python = Path(argv[3]) / "bin" / "python"
            python.parent.mkdir(parents=True, exist_ok=True)
            python.write_bytes(b"#!python")
            python.chmod(0o755)


def test_the_dry_run_installs_what_ci_run_installed_by_hand(tmp_path, capsys):
    """The built-in specs give .ci/run's own commands and variables (as of the commit that made it
    generic): the same pins, flags, venvs and environment."""
    assert clients.main([str(tmp_path), "--dry-run"]) == 0
    out, err = capsys.readouterr()
    work = tmp_path.resolve()
    said = [line.removeprefix("+ ") for line in err.splitlines() if line.startswith("+ ")]
    said = [line for line in said if not line.startswith("apt-get")]   # tmux: only where it is missing
    assert said == [
        f"python3 -m venv {work}/fractal",
        f"{work}/fractal/bin/python -m pip install --quiet fractal-rlm==0.1.1 'predict-rlm[sbx]==0.7.0' "
        "dspy==3.2.1 litellm==1.84.0",
        f"python3 -m venv {work}/fractal-side-1",
        f"{work}/fractal-side-1/bin/python -m pip install --quiet 'websockets<16' pydantic pandas",
        f"npm install --prefix {work}/claude --no-audit --no-fund --loglevel=error @anthropic-ai/claude-code@2.1.332",
        f"npm install --prefix {work}/codex --no-audit --no-fund --loglevel=error @openai/codex@0.171.0",
        f"npm install --prefix {work}/gemini --no-audit --no-fund --loglevel=error @google/gemini-cli@0.61.0",
    ]
    claude_globs = ("node_modules/@anthropic-ai/claude-code/bin/claude.exe, "
                    "node_modules/@anthropic-ai/claude-code-linux-*/claude")
    assert f"over 1,000,000 bytes among {claude_globs} under {work}/claude" in err
    assert f"node_modules/@openai/codex-linux-*/vendor/*/bin/codex under {work}/codex" in err
    assert all(line.startswith("export ") for line in out.splitlines())
    exports = dict(shlex.split(line.removeprefix("export "))[0].split("=", 1) for line in out.splitlines())
    assert exports == {
        "REPRISE_FRACTAL_PYTHON": f"{work}/fractal/bin/python",
        "REPRISE_SANDBOX_PYTHON": f"{work}/fractal-side-1/bin/python",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "REPRISE_CLAUDE_BIN": f"{work}/claude/node_modules/@anthropic-ai/claude-code/bin/claude.exe",
        "REPRISE_CODEX_BIN": f"{work}/codex/node_modules/@openai/codex-linux-*/vendor/*/bin/codex",
        "REPRISE_GEMINI_BIN": f"{work}/gemini/node_modules/@google/gemini-cli/bundle/gemini.js",
        "GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_TELEMETRY_ENABLED": "false",
    }
    assert not (tmp_path / "claude").exists()   # a dry run changes nothing


def test_every_registered_client_names_the_variable_its_compat_tests_read():
    with_client = [spec for spec in registry().specs if spec.client is not None]
    assert with_client
    for spec in with_client:
        variable = spec.client.binary_env
        assert variable.startswith("REPRISE_") and variable in {
            word for path in (Path(__file__).parent / "compat").rglob("*.py")
            for word in path.read_text(encoding="utf-8").replace('"', " ").replace("'", " ").split()}, spec.name


def test_the_binary_is_the_first_executable_over_the_minimum_size_in_glob_order(tmp_path):
    client = ClientSpec("npm", ("toy@1.0.0",), binary=("pkg/bin/toy.exe", "pkg/toy-linux-*/toy"),
                        binary_env="REPRISE_TOY_BIN", min_size=100)
    runner = Recording({"pkg/bin/toy.exe": 10,          # the placeholder script: too small
                        "pkg/toy-linux-b/toy": 500, "pkg/toy-linux-a/toy": 500})
    exports = clients.install(source(client=client), client, tmp_path, runner)
    assert runner.commands == [["npm", "install", "--prefix", str(tmp_path / "toy"), *clients.NPM_FLAGS, "toy@1.0.0"]]
    assert exports == [("REPRISE_TOY_BIN", str(tmp_path / "toy/pkg/toy-linux-a/toy"))]   # sorted, as a shell expands


def test_a_symlink_or_a_file_that_cannot_run_is_not_the_binary(tmp_path):
    client = ClientSpec("npm", ("toy@1.0.0",), binary=("pkg/*/toy",), binary_env="REPRISE_TOY_BIN", min_size=100)
    prefix = tmp_path / "toy"
    (prefix / "pkg" / "a").mkdir(parents=True)
    (prefix / "pkg" / "a" / "toy").write_bytes(b"x" * 500)   # not executable
    (prefix / "pkg" / "b").mkdir()
    (prefix / "pkg" / "b" / "toy").symlink_to(prefix / "pkg" / "a" / "toy")   # its own size is the link's
    os.chmod(prefix / "pkg" / "a" / "toy", 0o644)
    with pytest.raises(clients.ClientError, match=r"the Toy Agent binary was not found under .*toy \(pkg/\*/toy\)"):
        clients.binary(source(client=client), client, prefix)
    os.chmod(prefix / "pkg" / "a" / "toy", 0o755)
    assert clients.binary(source(client=client), client, prefix) == str(prefix / "pkg" / "a" / "toy")


def test_a_pypi_client_is_a_venv_with_its_side_venvs_and_environment(tmp_path):
    client = ClientSpec("pypi", ("toy-agent==1.0", "extra[x]==2"), binary_env="REPRISE_TOY_PYTHON",
                        env={"TOY_OFFLINE": "1"}, side_venvs={"REPRISE_TOY_SANDBOX": ("a<2", "b")})
    runner = Recording()
    exports = clients.install(source(client=client), client, tmp_path, runner)
    assert runner.commands == [
        ["python3", "-m", "venv", str(tmp_path / "toy")],
        [str(tmp_path / "toy/bin/python"), "-m", "pip", "install", "--quiet", "toy-agent==1.0", "extra[x]==2"],
        ["python3", "-m", "venv", str(tmp_path / "toy-side-1")],
        [str(tmp_path / "toy-side-1/bin/python"), "-m", "pip", "install", "--quiet", "a<2", "b"],
    ]
    assert exports == [("REPRISE_TOY_PYTHON", str(tmp_path / "toy/bin/python")),
                       ("REPRISE_TOY_SANDBOX", str(tmp_path / "toy-side-1/bin/python")), ("TOY_OFFLINE", "1")]


def test_a_missing_system_program_is_installed_with_apt_after_one_update(monkeypatch):
    runner = Recording()
    monkeypatch.setattr(clients.shutil, "which", lambda program: None if program.startswith("absent") else "/bin/x")
    for program in ("absent-one", "present", "absent-two"):
        runner.install_system_program(program)
    assert runner.commands == [["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "absent-one"],
                               ["apt-get", "install", "-y", "-qq", "absent-two"]]


def test_the_exports_are_shell_quoted_and_alone_on_stdout(tmp_path, monkeypatch, capsys):
    client = ClientSpec("npm", ("toy@1.0.0",), binary=("bin/toy",), binary_env="REPRISE_TOY_BIN",
                        env={"TOY_NOTE": "two words; $HOME"})
    loaded = Registry((source(client=client), source("plain", label="Plain")), (), {})
    monkeypatch.setattr(clients, "registry", lambda: loaded)
    monkeypatch.setattr(clients, "Runner", lambda dry_run: Recording({"bin/toy": 1}))
    work = tmp_path / "work space"
    assert clients.main([str(work)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [f"export REPRISE_TOY_BIN={shlex.quote(str(work / 'toy/bin/toy'))}",
                                f"export TOY_NOTE={shlex.quote('two words; $HOME')}"]


def test_a_client_whose_binary_is_not_found_or_a_source_that_did_not_load_fails_the_run(tmp_path, monkeypatch,
                                                                                        capsys):
    client = ClientSpec("npm", ("toy@1.0.0",), binary=("bin/toy",), binary_env="REPRISE_TOY_BIN")
    loaded = Registry((source(client=client),), (), {})
    monkeypatch.setattr(clients, "registry", lambda: loaded)
    monkeypatch.setattr(clients, "Runner", lambda dry_run: Recording())
    assert clients.main([str(tmp_path)]) == 1
    assert "the Toy Agent binary was not found" in capsys.readouterr().err
    broken = Registry((source(client=client),), (LoadFailure("gemini", "reprise-gemini 0.3.0", "ImportError: x"),), {})
    monkeypatch.setattr(clients, "registry", lambda: broken)
    assert clients.main([str(tmp_path)]) == 1
    assert 'the source "gemini" (reprise-gemini 0.3.0) did not load' in capsys.readouterr().err


def test_the_labels_name_the_clients_for_ci_runs_skip_message(monkeypatch, capsys):
    npm = ClientSpec("npm", ("a@1",), binary=("a",), binary_env="REPRISE_A_BIN")
    specs = (source("one", npm, "One"), source("two", None, "Two"), source("three", npm, "Three"),
             source("four", npm, "Four"))
    assert clients.labels(specs) == "the real One, the real Three or the real Four"
    assert clients.labels(specs[:2]) == "the real One"
    monkeypatch.setattr(clients, "registry", lambda: Registry(specs, (), {}))
    assert clients.main(["--labels"]) == 0
    assert capsys.readouterr().out == "the real One, the real Three or the real Four\n"
