"""Each command reads its arguments from a typed object: the fields of its dataclass are options its
parser defines, so a field misnamed, or an option renamed, fails here rather than at a user's run."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from reprise.tui import cli
from reprise.tui.cli.arguments import TopArguments, read_arguments


def _destinations(parser: argparse.ArgumentParser) -> set[str]:
    """Every name a parse with `parser` can set, through its subcommands and their actions too."""
    names = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            names.add(action.dest)
            for child in action.choices.values():
                names |= _destinations(child)
        elif action.dest != "help":
            names.add(action.dest)
    return names


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_every_field_of_a_commands_arguments_is_an_option_its_parser_sets(name):
    fields = {field.name for field in dataclasses.fields(cli.COMMANDS[name].arguments)}
    assert fields <= _destinations(cli.build_parser(name))


def test_the_top_level_options_are_read_with_their_defaults_when_not_given():
    top = read_arguments(TopArguments, cli.build_parser("list").parse_args(["--workspace", "/w", "list"]))
    assert top == TopArguments(command="list", workspace="/w")


def test_a_command_gets_its_typed_arguments_from_the_command_line():
    namespace = cli.build_parser("trim").parse_args(["trim", "abcd", "--fold", "3", "--dry-run"])
    arguments = read_arguments(cli.COMMANDS["trim"].arguments, namespace)
    assert (arguments.id, arguments.fold, arguments.dry_run, arguments.spare) == ("abcd", 3, True, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        arguments.fold = 4
