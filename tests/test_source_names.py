"""No source is special outside its own folder: no module of `reprise.core` or `reprise.tui` but the
ones of `core/sources/<name>/` branches on a registered source's name (compares with it, keys a
table by it, takes it as a default or a `Literal`) or imports a source's folder. Docstrings,
comments and the contract's field descriptions may name agents (they are not such nodes); so may
the tests and the docs."""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import reprise.core
import reprise.tui
from reprise.core.sources.registry import registry

from .test_import_hygiene import imported_names


def modules() -> dict[str, Path]:
    """Every module of the library and the TUI, by name."""
    found = {}
    for package in (reprise.core, reprise.tui):
        found[package.__name__] = Path(package.__file__ or "")
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            spec = importlib.util.find_spec(info.name)
            assert spec is not None and spec.origin is not None
            found[info.name] = Path(spec.origin)
    return found


def source_packages() -> dict[str, str]:
    """{source name: its package} of every registered source whose spec is Reprise's own code."""
    found = {}
    for spec in registry().specs:
        package = spec.factory.partition(":")[0].rpartition(".")[0]
        if package.startswith("reprise."):
            found[spec.name] = package
    return found


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _strings(node: ast.AST | None) -> Iterator[ast.Constant]:
    """The string constants `node` is, or holds as the items of a tuple, list or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for item in node.elts:
            yield from _strings(item)


def _literal_values(node: ast.Subscript) -> Iterator[ast.Constant]:
    named = node.value
    if (isinstance(named, ast.Name) and named.id == "Literal") or (
            isinstance(named, ast.Attribute) and named.attr == "Literal"):
        yield from _strings(node.slice)


def name_branches(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """(line, what) of every place the tree branches on one of `names`: a comparison with it (`==`,
    `in` a literal collection, a `match` case), a dict key, a subscript, a default argument, a
    fallback (`x or "name"`, `x if c else "name"`) or a `Literal[...]` value."""
    found: list[tuple[int, str]] = []

    def note(constants: Iterator[ast.Constant], what: str) -> None:
        found.extend((constant.lineno, f"{what} {constant.value!r}") for constant in constants
                     if constant.value in names)

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                note(_strings(operand), "compares with")
        elif isinstance(node, ast.match_case) and isinstance(node.pattern, ast.MatchValue):
            note(_strings(node.pattern.value), "matches")
        elif isinstance(node, ast.Dict):
            note((key for key in node.keys if isinstance(key, ast.Constant) and isinstance(key.value, str)),
                 "keys a table by")
        elif isinstance(node, ast.Subscript):
            note(_literal_values(node), "takes as a Literal")
            note(_strings(node.slice), "subscripts by")
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                note(_strings(value), "falls back to")
        elif isinstance(node, ast.IfExp):
            for value in (node.body, node.orelse):
                note(_strings(value), "falls back to")
        elif isinstance(node, ast.arguments):
            defaults = [*node.defaults, *(default for default in node.kw_defaults if default is not None)]
            for default in defaults:
                note(_strings(default), "defaults to")
    return sorted(set(found))


def test_no_module_branches_on_a_source_name_outside_its_folder():
    packages = source_packages()
    names = set(registry().names)
    offenders = []
    for module, path in modules().items():
        own = {name for name, package in packages.items() if _inside(module, package)}
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, what in name_branches(tree, names - own):
            offenders.append(f"{module}:{line}: {what}")
    assert not offenders, "branches on a source's name outside its folder:\n" + "\n".join(offenders)


def test_no_module_imports_a_source_folder_but_its_own():
    packages = source_packages()
    offenders = []
    for module, path in modules().items():
        for name, package in packages.items():
            if _inside(module, package):
                continue
            bad = sorted(found for found in imported_names(module, path) if _inside(found, package))
            if bad:
                offenders.append(f"{module} imports {name}'s folder: {', '.join(bad)}")
    assert not offenders, "imports of a source's folder outside it:\n" + "\n".join(offenders)


def test_the_check_sees_every_kind_of_branch_and_no_prose():
    """The check itself: each kind of branch is found; a docstring, a comment, a sentence and a
    `Field` description naming an agent are not."""
    code = '''
"""Reads claude's files."""   # a docstring
from typing import Literal
def f(source: str = "claude", kind: Literal["fractal", "x"] = "x") -> str:
    # claude, in a comment
    if source == "codex" or source in ("claude", "y"):
        return {"fractal": 1}["fractal"]
    match source:
        case "codex":
            pass
    note = Field(description="the agent: fractal, claude or codex")
    chosen = source or "codex"
    other = "fractal" if chosen else None
    return f"{source} is not claude"
'''
    found = name_branches(ast.parse(code), {"fractal", "claude", "codex"})
    kinds = {what.split(" '")[0] for _, what in found}
    assert kinds == {"defaults to", "takes as a Literal", "compares with", "matches", "keys a table by",
                     "subscripts by", "falls back to"}
    assert {line for line, _ in found} == {4, 6, 7, 9, 12, 13}
