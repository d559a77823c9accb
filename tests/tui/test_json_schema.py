"""The `--json` schema: `docs/json-schema.json` is the one the models generate, the README's JSON
examples are valid documents, and what every command prints on a factory store validates."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from reprise.core import contract
from reprise.tui import cli

from .. import factories

README = Path(__file__).resolve().parents[2] / "README.md"
SCHEMA = Path(__file__).resolve().parents[2] / contract.SCHEMA_PATH
EXAMPLE = re.compile(r"<!-- json: (\w+) -->\n```json\n(.*?)\n```", re.DOTALL)


def test_the_schema_file_is_the_one_the_models_generate():
    assert SCHEMA.read_text(encoding="utf-8") == contract.schema_text(), \
        "docs/json-schema.json is not current: run python -m reprise.core.contract"
    assert contract.main(["--check", str(SCHEMA)]) == 0


def test_the_schema_names_a_document_for_every_command_with_json_output():
    schema = json.loads(contract.schema_text())
    commands = {name for name in cli.COMMANDS if name not in ("archive", "trash", "resume")}
    commands |= {"archive list", "archive show", "trash list", "trash restore", "trash purge", "resume --print"}
    assert commands <= set(schema["x-commands"])
    for ref in schema["x-commands"].values():
        assert ref.removeprefix("#/$defs/") in schema["$defs"]


def test_every_readme_json_example_is_labelled_and_validates():
    text = README.read_text(encoding="utf-8")
    examples = EXAMPLE.findall(text)
    assert len(examples) == text.count("```json") >= 4
    for name, block in examples:
        contract.by_name(name).model_validate(json.loads(block))


def test_validation_refuses_a_document_with_a_missing_or_unknown_field():
    row = json.loads(dict(EXAMPLE.findall(README.read_text(encoding="utf-8")))["Session"])
    with pytest.raises(ValidationError):
        contract.Session.model_validate({**row, "sesion_id": "typo"})
    del row["hidden_by_agent"]
    with pytest.raises(ValidationError):
        contract.Session.model_validate(row)


@pytest.fixture
def store(tmp_path, monkeypatch, isolated_paths):
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    corpus = factories.corpus()
    ids = {}
    for name in ("twenty_five_turns", "pending_last", "unknown_fields", "empty"):
        session_id, data = corpus[name]
        factories.write_session(isolated_paths, folder, data)
        ids[name] = session_id
    factories.write_session(isolated_paths, folder, b"[]\n", session_id="b" * 32)
    factories.write_session(isolated_paths, "/old/place/project", factories.session_bytes("c" * 32, turns=2))
    fake = tmp_path / "bin" / "fractal"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    return folder, ids


def printed(capsys, *argv: str) -> dict:
    cli.main([*argv, "--json"])
    out, _ = capsys.readouterr()
    return json.loads(out)


def test_what_every_command_prints_validates(store, capsys, tmp_path, monkeypatch):
    folder, ids = store
    main, pending, empty = ids["twenty_five_turns"][:8], ids["pending_last"][:8], ids["empty"][:8]
    runs = [
        ("list", ["list", "--all"]), ("show", ["show", main]), ("show --summary", ["show", main, "--summary"]),
        ("error", ["show", "b" * 8]), ("meter", ["meter", main, "--message", "a draft"]),
        ("search", ["search", "login", "--all"]), ("workspaces", ["workspaces"]), ("config", ["config"]),
        ("doctor", ["doctor"]), ("new", ["new", "--title", "T"]), ("rename", ["rename", empty, "Renamed"]),
        ("pin", ["pin", empty]), ("unpin", ["unpin", empty]), ("recover", ["recover", pending]),
        ("send", ["send", ids["unknown_fields"][:8], "--message", "hello", "--agent", "echo"]),
        ("trim", ["trim", main, "--cap-replies", "40", "--dry-run"]), ("trim", ["trim", main, "--fit", "10"]),
        ("trim", ["trim", main, "--cap-replies", "40", "--keep-history", "5"]),
        ("archive list", ["archive", "list", main]), ("restore", ["restore", main, "--dry-run"]),
        ("restore", ["restore", main]), ("resume --print", ["resume", main, "--print"]),
        ("rm", ["rm", empty]), ("trash list", ["trash", "list", "--all"]),
        ("trash restore", ["trash", "restore", empty]),
        ("relink", ["relink", "/old/place/project", str(folder)]),
        ("prune", ["prune", "--empty", "--older-than", "1d"]), ("prune", ["prune", "--empty", "--yes"]),
        ("trash purge", ["trash", "purge", "--yes"]), ("audit", ["audit"]),
        ("error", ["show", "9999"]), ("error", ["trim", main]),
    ]
    for command, argv in runs:
        document = printed(capsys, *argv)
        contract.DOCUMENTS[command].model_validate(document)
        if command == "archive list":
            digest = document["entries"][0]["digest"]
            contract.ArchiveText.model_validate(printed(capsys, "archive", "show", main, digest))
            export = printed(capsys, "archive", "show", main, digest, "--output", str(tmp_path / "entry.bin"))
            contract.ArchiveExport.model_validate(export)
    argv = ["list", "--sort", "nonsense", "--json"]
    monkeypatch.setattr(sys, "argv", ["reprise", *argv])  # argparse's own errors read sys.argv
    with pytest.raises(SystemExit):
        cli.main(argv)
    contract.Error.model_validate(json.loads(capsys.readouterr().out))
