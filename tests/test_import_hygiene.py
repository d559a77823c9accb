"""reprise.core is a headless library: importing all of it must not pull in Textual or Rich."""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

import reprise.core


def test_core_imports_neither_textual_nor_rich():
    modules = [m.name for m in pkgutil.walk_packages(reprise.core.__path__, "reprise.core.")]
    assert "reprise.core.sources.fractal.store" in modules and "reprise.core.service" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "", f"core pulled in: {result.stdout.strip()}"



def _imported_by(code: str) -> set[str]:
    result = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(','.join(sorted(sys.modules)))"],
                            capture_output=True, text=True, check=True)
    return {name.split(".")[0] for name in result.stdout.strip().split(",")}


def test_the_command_line_starts_without_textual_pydantic_or_tiktoken():
    """`reprise --help` is fast because the command line imports the contract, the service and
    the TUI only when a command needs them."""
    heavy = {"textual", "rich", "pydantic", "pydantic_core", "tiktoken", "sqlite3"}
    assert not _imported_by("import reprise.tui.cli") & heavy
    assert not _imported_by("import reprise.tui.cli\nreprise.tui.cli.build_parser()") & heavy


def test_the_check_sees_a_heavy_import():
    """The check itself: reaching the lazy contract loads pydantic, and `list --json` needs it."""
    assert "pydantic" in _imported_by("import reprise.tui.cli\nreprise.tui.cli.contract.Document")


def test_counting_nothing_never_loads_tiktoken():
    assert "tiktoken" not in _imported_by("import reprise.core.service, reprise.core.meter")
    assert "tiktoken" in _imported_by("from reprise.core import tokens\ntokens.get_encoding('cl100k_base')")

# --- the source seam: Fractal's code is reached only through the source protocol -------------------

FRACTAL = "reprise.core.sources.fractal"
# The one bridge: the registry builds each source. The demo may build its store through the Fractal source.
MAY_IMPORT_FRACTAL = {"reprise.core.sources", "reprise.tui.demo"}


def _modules(package) -> dict[str, Path]:
    found = {}
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        spec = importlib.util.find_spec(info.name)
        assert spec is not None and spec.origin is not None
        found[info.name] = Path(spec.origin)
    found[package.__name__] = Path(package.__file__)
    return found


def imported_names(module: str, path: Path) -> set[str]:
    """Every module `module` imports, at any depth of its code (functions included), made absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names.add(prefix)
            names.update(f"{prefix}.{alias.name}" for alias in node.names)
    return names


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_nothing_outside_the_fractal_source_imports_fractals_code():
    import reprise.tui

    offenders = []
    for package in (reprise.core, reprise.tui):
        for module, path in _modules(package).items():
            if _inside(module, FRACTAL) or module in MAY_IMPORT_FRACTAL:
                continue
            bad = sorted(name for name in imported_names(module, path) if _inside(name, FRACTAL))
            if bad:
                offenders.append(f"{module}: {', '.join(bad)}")
    assert not offenders, "imports of Fractal's code outside its source:\n" + "\n".join(offenders)


def test_the_seam_check_sees_relative_and_nested_imports(tmp_path):
    """The check itself: a relative import inside a function is found and made absolute."""
    path = tmp_path / "mod.py"
    path.write_text("def f():\n    from .sources.fractal.models import SessionState\n    from ..tui import app\n")
    names = imported_names("reprise.core.catalog", path)
    assert "reprise.core.sources.fractal.models.SessionState" in names and "reprise.tui.app" in names


def test_every_package_is_installed():
    """A non-editable install (CI's) ships only the packages pyproject.toml lists."""
    import tomllib

    import reprise.tui

    root = Path(__file__).resolve().parents[1]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {name for package in (reprise.core, reprise.tui)
                for name, path in _modules(package).items() if path.name == "__init__.py"}
    assert packages <= listed, f"not in [tool.setuptools] packages: {sorted(packages - listed)}"
