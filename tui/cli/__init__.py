"""The `reprise` command: parse arguments, call the service, print for people or as JSON.

Without a subcommand it opens the TUI. Exit status: 0 success, 1 failure, 2 usage error,
3 not found or ambiguous. One module per group of commands (`listing`, `resume`, `marks`, `turns`,
`trims`, `trash`, `store`), each reading its arguments from a typed object (`arguments`); `parser`
is the grammar, `entry` runs one command, `output` prints, `tui_runs` runs the Textual app and
`agent_handoff` hands the terminal to an agent.
"""

from .entry import COMMANDS, command_named, main
from .output import contract
from .parser import build_parser

__all__ = ["COMMANDS", "build_parser", "command_named", "contract", "main"]
