"""The catalog's columns by name: one table (`COLUMNS`) from which the `files` table's schema, its
insert and select, the row snapshot's layout (`row_snapshot`) and the building of `SessionRow`s
from stored columns are made, and the catalog's schema version is derived.

A new sortable figure is one entry here (its name, SQL type and where a read of a file gives it:
an expression of the file's `listing` fields; one keyword of `_figured` for a listing field of
the same name) and its typed field on `SessionRow`, checked when the layout is built; the insert,
the select, the schema and its version, the snapshot and the rows follow. The code that copies
columns in and out of rows on a warm listing (ten thousand rows at a time) is generated from the
table once, as `dataclasses` generates `__init__`: one plain function, no loop over the columns
per row.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .rows import SessionRow
from .sources.base import ListingFields, ListingSource

# The fields of a row the catalog sets apart from the columns: the source's name and the file's
# path come from the source, the group from the folder the rows are stored under.
_GIVEN = {"source": "name", "group": "group", "path": "path"}


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the catalog's `files` table (after `source` and `grp`), in snapshot order."""

    name: str               # the column's name in SQL
    sql: str                # its type and constraint
    field: str | None       # the row's field it holds (None: the catalog's own, `racy`)
    read: str | None = None   # a figure of the file's read: an expression of `listing` (its ListingFields)
                              # and `source` (its ListingSource); None: the catalog sets it from the read
    flag: bool = False      # a bool on the row, 0 or 1 in SQL
    stored: str | None = None   # what is stored, when not the row's field: an expression of `row`,
                                # `racy` and `folder` (the folder the file records, when its store's rule says so)


def _set(**types: str) -> tuple[Column, ...]:
    """Columns holding the row's field of their name, which the catalog sets from a file's read."""
    return tuple(Column(name, sql, name) for name, sql in types.items())


def _figured(**types: str) -> tuple[Column, ...]:
    """Columns holding the row's field of their name, read from the listing field of that name."""
    return tuple(Column(name, sql, name, read=f"listing.{name}") for name, sql in types.items())


_TEXT, _INTEGER = "TEXT NOT NULL", "INTEGER NOT NULL"
COLUMNS: tuple[Column, ...] = (
    # The folder the file records (a store whose files record it; else NULL: the rule gives it).
    Column("folder", "TEXT", "workspace_path", stored="folder"),
    Column("hidden", _INTEGER, "hidden_by_agent", "listing.hidden_by_agent", flag=True),
    # Read again on the next listing (its stat is too recent to trust): the catalog's own, on no row.
    Column("racy", _INTEGER, None, stored="int(racy)"),
    *_figured(context_window="INTEGER"),
    *_set(workspace_key=_TEXT, file_id=_TEXT, size=_INTEGER, mtime_ns=_INTEGER, activity_ts="REAL NOT NULL"),
    *_figured(turns=_INTEGER, context_tokens=_INTEGER),
    *_set(problem_code="TEXT", problem_message="TEXT", problem_field="TEXT", resume_cost="INTEGER",
          resume_cost_key="TEXT", content_digest="TEXT"),
    # The session's id, for a store whose file id is not it (`file_is_session` False); NULL otherwise.
    Column("session_id", "TEXT", "session_id",
           read="None if source.file_is_session else (listing.session_id or None)"),
    # What the agent's own sweep needs of the session, as its read found it (`sweep_facts`); NULL otherwise.
    *_figured(sweep_facts="TEXT"),
)

R = TypeVar("R", bound=SessionRow)
Figures = Callable[[ListingFields, ListingSource], dict[str, Any]]
Values = Callable[[SessionRow, bool, str | None], tuple[Any, ...]]
Builder = Callable[[str, str, list[tuple[Any, ...]], Mapping[str, str], str, Callable[[str, str], str]],
                   dict[tuple[str, str, str], Any]]


def _compiled(source: str, name: str, scope: dict[str, Any]) -> Any:
    """The function `name` the generated `source` defines."""
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<catalog_columns {name}>", "exec"), scope, namespace)   # noqa: S102  # our table's text only
    return namespace[name]


class Layout(Generic[R]):
    """What the catalog makes of a table of columns and the row class they fill."""

    def __init__(self, columns: tuple[Column, ...], row_type: type[R]):
        fields = [field.name for field in dataclasses.fields(row_type)]
        names = [column.name for column in columns]
        missing = [c.field for c in columns if c.field is not None and c.field not in fields]
        if missing or len(set(names)) != len(names) or "file_id" not in names:
            raise TypeError(f"the catalog's columns do not fit {row_type.__name__}: no field {missing}, "
                            f"or a name twice, or no file_id")
        self.columns = columns
        self.row_type = row_type
        self.names = tuple(names)
        self.at = {name: i for i, name in enumerate(names)}
        listed = ", ".join(names)
        self.table = (f"CREATE TABLE files (source TEXT NOT NULL, grp TEXT NOT NULL, "
                      f"{', '.join(f'{c.name} {c.sql}' for c in columns)}, "
                      "PRIMARY KEY (source, grp, file_id)) WITHOUT ROWID")
        self.select = f"SELECT grp, {listed} FROM files WHERE source = ?"
        self.insert = (f"INSERT OR REPLACE INTO files (source, grp, {listed}) "
                       f"VALUES ({', '.join('?' * (len(columns) + 2))})")
        self.values: Values = self._values()
        self.record: Values = self._values(("row.source", "row.group"))
        self.figures: Figures = self._figures()
        self.build: Builder = self._builder()

    def digest(self, *more: tuple[str, ...]) -> int:
        """16 bits that change with the table's text (and any other layout given): the catalog's
        schema version is derived from it, so a changed table rebuilds an older cache."""
        text = "\n".join([self.table, *("\0".join(part) for part in more)])
        return zlib.crc32(text.encode()) & 0xFFFF

    def _values(self, first: tuple[str, ...] = ()) -> Values:
        """(row, racy, folder) -> the columns' values (after `first`), as SQL stores them."""
        parts = list(first)
        for column in self.columns:
            if column.stored is not None:
                parts.append(column.stored)
            elif column.field is None:
                raise TypeError(f"the catalog's column {column.name} says neither its field nor what it stores")
            else:
                parts.append(f"int(row.{column.field})" if column.flag else f"row.{column.field}")
        return _compiled(f"def values(row, racy, folder):\n    return ({', '.join(parts)},)\n", "values", {})  # type: ignore[no-any-return]

    def _figures(self) -> Figures:
        """(listing, source) -> {field: value} of the figures a read of a file gives."""
        items = ", ".join(f"{column.field!r}: {column.read}" for column in self.columns
                          if column.read is not None and column.field is not None)
        return _compiled(f"def figures(listing, source):\n    return {{{items}}}\n", "figures", {})  # type: ignore[no-any-return]

    def _builder(self) -> Builder:
        """(source's name, group, columns of a folder, the names its scan read, the folder's path with
        a slash, the source's file_path) -> {ident: row}: one loop, its row built positionally as far
        as the row class's fields allow."""
        local = {column.field: f"v_{column.field}" for column in self.columns if column.field is not None}
        unpack = ", ".join("_" if column.field is None else local[column.field] for column in self.columns)
        given = {field: _GIVEN[field] for field in _GIVEN}
        arguments: list[str] = []
        by_keyword = False
        flags = {column.field for column in self.columns if column.flag}
        for field in dataclasses.fields(self.row_type):
            if not field.init:
                continue
            value = given.get(field.name) or local.get(field.name)
            if value is None:
                by_keyword = True
                continue
            if field.name in flags:
                value = f"bool({value})"
            arguments.append(f"{field.name}={value}" if by_keyword else value)
        source = (
            "def build(name, group, columns, names, folder_path, file_path):\n"
            "    rows = {}\n"
            "    get = names.get\n"
            f"    for {unpack} in columns:\n"
            "        file_name = get(v_file_id)\n"
            "        path = file_path(group, v_file_id) if file_name is None else folder_path + file_name\n"
            f"        rows[(name, group, v_file_id)] = Row({', '.join(arguments)})\n"
            "    return rows\n")
        return _compiled(source, "build", {"Row": self.row_type})  # type: ignore[no-any-return]


LAYOUT: Layout[SessionRow] = Layout(COLUMNS, SessionRow)
