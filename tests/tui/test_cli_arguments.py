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


def test_the_commands_table_names_each_command_of_each_group_module_and_of_the_parser():
    """`entry`'s table of subcommands (each imported with its group's module on first use) holds
    exactly the commands the group modules define, each from its own module, and the parser's."""
    import importlib

    defined = {}
    for group in ("listing", "resume", "marks", "turns", "trims", "continuation", "trash", "store"):
        module = importlib.import_module(f"reprise.tui.cli.{group}")
        defined.update({name: command for name, command in module.COMMANDS.items()})
    assert set(cli.COMMANDS) == set(defined) and len(cli.COMMANDS) == len(defined)
    assert all(cli.COMMANDS[name] is command for name, command in defined.items())
    parser = cli.build_parser()
    subcommands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    assert set(subcommands.choices) == set(cli.COMMANDS)
    assert "nothing" not in cli.COMMANDS
    with pytest.raises(KeyError):
        cli.COMMANDS["nothing"]
