"""The property test of hostile values, for any source: a store of its sessions (its samples, or a
captured store of its real client's files, `captured.py`) with any one JSON value of a session's
files replaced by any JSON value, or a file cut at any byte, run through list, show, search, meter,
`trim --fork --dry-run` and `resume --print` in process (`tui.cli.main`), plus a few through the
installed console script. Each command either works or names the problem, with the README's exit
statuses, never a traceback, and the agent's files keep their bytes. (Issue 24's hand-made cases are
in tests/robustness/test_hostile_values.py.)"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from reprise.tui import cli

STATUSES = {0, 1, 2, 3}   # README: success, failure, usage error, not found


PLACEHOLDER = "@@reprise-hostile-value@@"
# Fields some reader of some source takes: a mutation picks among these half the time (there are
# thousands of fields in a real session, most of them text no reader looks into).
READ_KEYS = frozenset({
    "type", "cwd", "sessionId", "session_id", "id", "uuid", "parentUuid", "logicalParentUuid", "message", "role",
    "content", "text", "gitBranch", "customTitle", "aiTitle", "summary", "leafUuid", "timestamp", "usage",
    "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "model",
    "isSidechain", "isMeta", "toolUseResult", "tool_use_id", "entrypoint", "version", "compactMetadata",
    "payload", "thread_name", "updated_at", "info", "last_token_usage", "total_token_usage", "model_context_window",
    "turn_id", "cli_version", "source", "forked_from_id", "arguments", "output", "call_id", "name", "item",
    "schema_version", "turns", "user", "agent", "status", "response", "error", "history", "user_message",
    "files_read", "files_modified", "commands_run", "trace", "created_at", "turn_attribution", "ordinal"})


def _deep(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    if kind == "object":
        return '{"a":' * depth + "1" + "}" * depth
    return '[{"type":"message","role":' * depth + '"\\ud83d"' + "}]" * depth


SPECIAL_VALUES = [
    "null", "true", "false", "0", "-1", "1.5", "-0.0", "1e400", "-1e400", "NaN", "Infinity", "-Infinity",
    "18446744073709551616", "-9223372036854775809", "9" * 5000, '""', '" "', '"x"', "[]", "{}", "[null]",
    '{"type":5}', '[1,"two",{"three":null}]', '"\\ud83d"', '"half \\ud83d emoji"', '"\\udc00x"', '["\\ud800"]',
    '{"\\ud83d":"\\ude00"}', '"\\u0000"', '"/x/a\\u0000b"', '".."', '"."', '"relative/dir"', '"\\u202eevil\\u202c"',
    '"\\u2066bidi\\u2069"', '"\\u200b"', '"\\u001b[31mred"', '"line\\nbreak"', '"x/tool-results/\\u00e9\\u00fc.txt"',
    '"' + "long " * 4000 + '"', '{"type":"text","text":5}', '[{"type":"input_text","text":["\\ud83d"]}]',
]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8)
ODD_TEXT = st.text(st.characters(categories=["Cs", "Cc", "Cf", "Zl", "Zp", "Mn"]) | st.characters(), max_size=10)
HOSTILE_VALUES = st.one_of(
    st.sampled_from(SPECIAL_VALUES),
    st.builds(_deep, st.sampled_from([40, 500, 990, 3_000, 100_000]), st.sampled_from(["list", "object", "messages"])),
    ODD_TEXT.map(json.dumps),
    st.integers().map(json.dumps) | st.floats().map(json.dumps),
    JSON_VALUES.map(json.dumps),
)


def value_paths(value: Any) -> list[tuple[Any, ...]]:
    """The path (keys and indexes) of every value inside `value`, itself (`()`) included."""
    found: list[tuple[Any, ...]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        found.append(path)
        if isinstance(item, dict):
            stack.extend(((*path, key), child) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend(((*path, index), child) for index, child in enumerate(item))
    return sorted(found, key=lambda path: [str(part) for part in path])


def replaced(value: Any, path: tuple[Any, ...]) -> Any:
    """A copy of `value` with the value at `path` replaced by the placeholder."""
    if not path:
        return PLACEHOLDER
    copy = json.loads(json.dumps(value))
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = PLACEHOLDER
    return copy


@dataclass(frozen=True)
class Unit:
    """One JSON value of a session's file: the whole file (a store of JSON documents) or one of its lines."""

    file: str
    line: int | None   # None: the whole file is one document
    value: Any


@dataclass(frozen=True)
class Fixture:
    """A store of one source in `template` (the folder the test isolation points every store into),
    the files a mutation picks from (relative to it), and what the commands name: the sessions' ids
    (the first has several turns; a tool call among them when the store has one) and a word of their
    text. `stores` are the folders that hold the source's store, copied into each example's own.
    `dumps` writes one JSON value back as the store writes it; None for a store that is not JSON text
    (a database): its files are only cut."""

    source: str
    template: Path
    stores: tuple[str, ...]
    files: dict[str, bytes]
    session_ids: tuple[str, ...]
    word: str
    dumps: Callable[[Any], str] | None
    whole_files: bool = False

    def units(self) -> list[Unit]:
        units: list[Unit] = []
        if self.dumps is None:
            return units
        for name, data in self.files.items():
            if self.whole_files:
                units.append(Unit(name, None, json.loads(data)))
                continue
            for number, line in enumerate(data.splitlines()):
                units.append(Unit(name, number, json.loads(line)))
        return units

    def with_value(self, unit: Unit, path: tuple[Any, ...], raw: str) -> dict[str, bytes]:
        assert self.dumps is not None, "a store that is not JSON text has no values to replace"
        text = self.dumps(replaced(unit.value, path)).replace(json.dumps(PLACEHOLDER), raw, 1)
        files = dict(self.files)
        if unit.line is None:
            files[unit.file] = text.encode("utf-8", "surrogatepass") + b"\n"
        else:
            lines = files[unit.file].splitlines(keepends=True)
            lines[unit.line] = text.encode("utf-8", "surrogatepass") + b"\n"
            files[unit.file] = b"".join(lines)
        return files

    def place(self, base: Path, files: dict[str, bytes]) -> list[Path]:
        """The store copied under `base` with these files; the folders no command may change."""
        for store in self.stores:
            shutil.copytree(self.template / store, base / store, dirs_exist_ok=True)
        for name, data in files.items():
            (base / name).parent.mkdir(parents=True, exist_ok=True)
            (base / name).write_bytes(data)
        return sorted({(base / name).parent for name in self.files})


def commands(session_ids: tuple[str, ...], word: str) -> list[list[str]]:
    """Every command the issue names, on each session: each must work or name the problem."""
    found = [["list", "--all"], ["list", "--all", "--json"], ["search", "--all", word],
             ["meter", "--json", session_ids[0]]]
    for session_id in session_ids:
        found += [["show", session_id], ["show", "--json", session_id], ["meter", session_id],
                  ["trim", session_id, "--fork", "--dry-run", "--drop", "1"], ["resume", "--print", session_id]]
    return found


def store_digest(*roots: Path) -> dict[str, str]:
    """{path: SHA-256} of every file under the roots: what no command may change."""
    found = {}
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                path = Path(folder) / name
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@contextlib.contextmanager
def fresh_store(template: Path) -> Iterator[Path]:
    """A new empty folder for one example: every variable the test isolation points into `template`
    (state, cache, config, data, each source's store) points to the same place in it, and the current
    folder is an empty one; everything put back after."""
    saved = {name: value for name, value in os.environ.items() if value.startswith(f"{template}{os.sep}")}
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="reprise-hostile-") as folder:
        base = Path(folder)
        for name, value in saved.items():
            os.environ[name] = str(base / Path(value).relative_to(template))
        (base / "here").mkdir()
        os.chdir(base / "here")
        try:
            yield base
        finally:
            os.chdir(here)
            os.environ.update(saved)


def settled(roots: list[Path]) -> list[Path]:
    """The roots, their files dated a day ago: files at rest, not ones an agent may be writing (a file
    written within the last second that does not parse is read again until it settles, up to 1 s)."""
    day_ago = time.time() - 86_400
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                os.utime(Path(folder) / name, (day_ago, day_ago))
    return roots


def check_every_command(capsys: Any, fixture: Fixture, files: dict[str, bytes]) -> None:
    with fresh_store(fixture.template) as base:
        roots = settled(fixture.place(base, files))
        before = store_digest(*roots)
        for argv in commands(fixture.session_ids, fixture.word):
            status = cli.main(list(argv))
            out, err = capsys.readouterr()
            assert status in STATUSES and "Traceback" not in err, (argv, status, err[-2000:])
            assert status == 0 or (err + out).strip(), (argv, status, "a failure that says nothing")
        assert store_digest(*roots) == before


@st.composite
def hostile_files(draw: Any, fixture: Fixture) -> dict[str, bytes]:
    """The fixture's files with one value replaced by a hostile one, or one file cut at any byte."""
    units = fixture.units()
    if not units or draw(st.integers(0, 5)) == 0:
        name = draw(st.sampled_from(sorted(fixture.files)))
        data = fixture.files[name]
        return {**fixture.files, name: data[:draw(st.integers(0, len(data)))]}
    unit = draw(st.sampled_from(units))
    paths = value_paths(unit.value)
    read = [path for path in paths if path and isinstance(path[-1], str) and path[-1] in READ_KEYS]
    path = draw(st.sampled_from(read) if read and draw(st.booleans()) else st.sampled_from(paths))
    return fixture.with_value(unit, path, draw(HOSTILE_VALUES))


# Fixed examples in CI (derandomized, no database: never a flake); a wider search by hand with
# REPRISE_HOSTILE_EXAMPLES=2000 REPRISE_HOSTILE_RANDOM=1.
EXAMPLES = int(os.environ.get("REPRISE_HOSTILE_EXAMPLES", "60"))
RANDOM = bool(os.environ.get("REPRISE_HOSTILE_RANDOM"))


# Always run besides the drawn examples, on the first field of that name each source has: the
# classes of issue 24 (half an emoji, a NUL or relative folder, deep nesting, a huge number, a role
# that is not a string) pinned, so a regression fails in every run, not when a draw finds it.
PINNED: list[tuple[tuple[str, ...], str]] = [
    (("gitBranch",), '"\\ud83d"'), (("customTitle",), '"x\\ud83d"'), (("message", "content"), '"half \\ud83d"'),
    (("cwd",), '"/x/a\\ud83d"'), (("cwd",), '"/x/a\\u0000b"'), (("cwd",), '".."'), (("cwd",), '""'),
    (("thread_name",), '"\\udc00"'), (("role",), '["user"]'), (("user", "message"), '"\\ud83d"'),
    (("user", "message"), "9" * 5000), (("payload",), _deep(100_000, "list")),
    (("response",), _deep(3_000, "object")), (("payload", "message"), '"\\ud83d"'),
    (("input",), _deep(990, "object")), (("input",), json.dumps("{" + _deep(100_000, "list"))),
    (("output",), json.dumps('{"output":"\\ud83d"}')), (("output",), json.dumps('{"output":' + _deep(100_000, "list"))),
    (("arguments",), _deep(990, "list"))]


def pinned_examples(fixture: Fixture) -> list[dict[str, bytes]]:
    """The pinned values, each on the first field of its name; for a store that is not JSON text,
    each of its files cut in half."""
    units = fixture.units()
    if not units:
        return [{**fixture.files, name: data[:len(data) // 2]} for name, data in sorted(fixture.files.items())]
    found = []
    for key, raw in PINNED:   # the first field whose path ends with `key`
        for unit in units:
            path = next((path for path in value_paths(unit.value) if path[-len(key):] == key), None)
            if path is not None:
                found.append(fixture.with_value(unit, path, raw))
                break
    return found
