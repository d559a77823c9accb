"""Each command's arguments as a typed object: argparse's namespace read once, by field name, into
the command's frozen dataclass, so that a command never reads an untyped `args.x`."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from reprise.core.service import Service

A = TypeVar("A", bound="DataclassInstance")


def read_arguments(kind: type[A], namespace: argparse.Namespace) -> A:
    """The fields of `kind` from the namespace; a field the namespace lacks (an option of another
    action of the same command, a top-level option not given) keeps its default."""
    given: dict[str, Any] = {field.name: getattr(namespace, field.name) for field in dataclasses.fields(kind)
                             if hasattr(namespace, field.name)}
    return kind(**given)


@dataclass(frozen=True, slots=True)
class TopArguments:
    """The options before a subcommand, and which subcommand (None: the TUI)."""

    command: str | None = None
    state_dir: str | None = None
    workspace: str | None = None
    json: bool = False
    demo: bool = False
    agent: str | None = None


@dataclass(frozen=True, slots=True)
class NoArguments:
    """A command that takes none of its own (`workspaces`, `config`)."""


@dataclass(frozen=True, slots=True)
class SessionArguments:
    """A command that names one session and nothing else (`pin`, `unpin`, `recover`)."""

    id: str


@dataclass(frozen=True, slots=True)
class Command(Generic[A]):
    """A subcommand: the type of its arguments and what runs it (the service, its arguments, --json)."""

    arguments: type[A]
    run: Callable[[Service, A, bool], int]

    def __call__(self, service: Service, namespace: argparse.Namespace, as_json: bool) -> int:
        return self.run(service, read_arguments(self.arguments, namespace), as_json)
