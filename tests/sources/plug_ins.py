"""Distributions written for a test: a `*.dist-info` with its `entry_points.txt` declaring sources in
the group `reprise.sources`, and the modules they name, in a folder the test puts on `sys.path`."""

from __future__ import annotations

import textwrap
from pathlib import Path

from reprise.core.sources.registry import GROUP


def plug_in(folder: Path, entries: dict[str, str], modules: dict[str, str], dist: str = "reprise_plug") -> None:
    """A distribution in `folder` declaring `entries` in the group, and the modules they name."""
    info = folder / f"{dist}-0.3.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.3.0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
    (info / "entry_points.txt").write_text(f"[console_scripts]\nother = x:y\n\n[{GROUP}]\n{lines}")
    for name, text in modules.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text))


def spec_module(prelude: str = "", **fields: object) -> str:
    """The text of a module whose `SPEC` is a spec of the source "plug", these fields changed."""
    given = {"name": "plug", "label": "Plug Agent", "mark": "P", "order": 50,
             "id_pattern": r"[a-z0-9]{1,40}", "factory": "nowhere:Source", "listing_module": "nowhere",
             "detect": "nowhere:detect", **fields}
    args = ", ".join(f"{key}={value}" if key == "location" else f"{key}={value!r}" for key, value in given.items())
    return (f"from reprise.core.sources.spec import SourceSpec, StoreLocation\n{prelude}\n"
            f"SPEC = SourceSpec({args})\n")
