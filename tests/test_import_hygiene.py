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


# --- the source seam: no source imports another source's folder ----------------------------------

SOURCES = "reprise.core.sources"
# What builds the sources may import them: the package (`make_sources`) and the registry.
MAY_IMPORT_SOURCES = {SOURCES, f"{SOURCES}.registry"}
# Modules that name a source's module as text (a module path a worker process imports), until the
# registry gives them the names: the scan pool's preload (plan step C6).
MAY_NAME_SOURCE_MODULES = {"reprise.core.scan_pool"}


def _source_folders() -> list[str]:
    import reprise.core.sources

    return sorted(f"{SOURCES}.{info.name}" for info in pkgutil.iter_modules(reprise.core.sources.__path__)
                  if info.ispkg)


def _folder_of(name: str, folders: list[str]) -> str | None:
    """The source folder (package) `name` is in or is, else None."""
    return next((folder for folder in folders if _inside(name, folder)), None)


def named_modules(path: Path) -> set[str]:
    """Every text constant of a module that is a dotted path under reprise.core.sources (a module a
    worker process or `importlib` loads by name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.startswith(SOURCES + ".") and " " not in node.value}


def _reaches(module: str, path: Path, folders: list[str], *, names_too: bool = True) -> set[str]:
    """The source folders `module` imports (or, with `names_too`, names as a module path)."""
    names = imported_names(module, path) | (named_modules(path) if names_too else set())
    return {folder for name in names if (folder := _folder_of(name, folders)) is not None}


def test_no_source_imports_another_sources_folder():
    """What the JSON-lines agents share lives once under core/sources/ (jsonl_lines, file_writers,
    client_runs, file_trash, file_keep, rooted.write_new), so a source reads only its own folder."""
    import reprise.core.sources

    folders = _source_folders()
    assert {f"{SOURCES}.claude", f"{SOURCES}.codex", f"{SOURCES}.fractal"} <= set(folders)
    offenders = []
    for module, path in _modules(reprise.core.sources).items():
        own = _folder_of(module, folders)
        if own is None:
            continue
        others = sorted(_reaches(module, path, folders) - {own})
        if others:
            offenders.append(f"{module}: {', '.join(others)}")
    assert not offenders, "a source importing another source's folder:\n" + "\n".join(offenders)


def test_no_shared_module_imports_a_source_folder():
    """A module of core/ outside the source folders reaches a source through the registry only."""
    folders = _source_folders()
    offenders = []
    for module, path in _modules(reprise.core).items():
        if _folder_of(module, folders) is not None or module in MAY_IMPORT_SOURCES:
            continue
        reached = _reaches(module, path, folders, names_too=module not in MAY_NAME_SOURCE_MODULES)
        if reached:
            offenders.append(f"{module}: {', '.join(sorted(reached))}")
    assert not offenders, "a shared module importing a source's folder:\n" + "\n".join(offenders)


def test_the_source_checks_see_every_form_of_import(tmp_path):
    """The checks themselves: relative imports (of a module, of a folder by name, inside a function),
    absolute ones, and a module path written as text are all seen, an import of the module's own
    folder and a shared kit are not."""
    folders = [f"{SOURCES}.claude", f"{SOURCES}.codex"]
    path = tmp_path / "mod.py"
    path.write_text("from ..claude.records import parse_lines\n")
    assert _reaches(f"{SOURCES}.codex.records", path, folders) == {f"{SOURCES}.claude"}
    path.write_text("def f():\n    from .. import claude\n")
    assert _reaches(f"{SOURCES}.codex.turns", path, folders) == {f"{SOURCES}.claude"}
    path.write_text("import reprise.core.sources.codex.trash as trash\n")
    assert _reaches(f"{SOURCES}.claude.source", path, folders) == {f"{SOURCES}.codex"}
    path.write_text("PRELOAD = ('reprise.core.sources.claude.listing',)\n")
    assert _reaches("reprise.core.scan_pool", path, folders) == {f"{SOURCES}.claude"}
    assert _reaches("reprise.core.scan_pool", path, folders, names_too=False) == set()
    path.write_text("from . import records\nfrom ..jsonl_lines import Parsed\nfrom ...rooted import write_new\n")
    assert _reaches(f"{SOURCES}.codex.source", path, folders) == {f"{SOURCES}.codex"}
    path.write_text("from .sources.codex.layout import short_id\n")
    assert _reaches("reprise.core.paths", path, folders) == {f"{SOURCES}.codex"}


def test_every_package_is_installed():
    """A non-editable install (CI's) ships only the packages pyproject.toml lists."""
    import tomllib

    import reprise.tui

    root = Path(__file__).resolve().parents[1]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {name for package in (reprise.core, reprise.tui)
                for name, path in _modules(package).items() if path.name == "__init__.py"}
    assert packages <= listed, f"not in [tool.setuptools] packages: {sorted(packages - listed)}"
