"""Lint and type-check the checkout: ruff over every Python file, then mypy over reprise.core and reprise.tui.

Run it with the Python whose environment has the `test` extra (`.venv/bin/python .ci/lint.py`); it exits non-zero
when either check fails. mypy cannot follow setuptools' editable-install finder, and the folders `core/` and `tui/`
are not named like their packages, so the script links them as `reprise/core` and `reprise/tui` under
`.mypy_cache/src/` (the `mypy_path` in `pyproject.toml`) and reports mypy's findings under the checkout's own paths.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINKS = ROOT / ".mypy_cache" / "src" / "reprise"
PACKAGES = ("core", "tui")


def link_packages() -> None:
    LINKS.mkdir(parents=True, exist_ok=True)
    for name in PACKAGES:
        link = LINKS / name
        target = os.path.relpath(ROOT / name, LINKS)
        if link.is_symlink() and os.readlink(link) == target:
            continue
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)


def ruff() -> int:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT).returncode


def mypy() -> int:
    link_packages()
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    shown = os.path.relpath(LINKS, ROOT) + os.sep
    for stream, out in ((done.stdout, sys.stdout), (done.stderr, sys.stderr)):
        out.write("".join(line.removeprefix(shown) for line in stream.splitlines(keepends=True)))
    return done.returncode


def main() -> int:
    statuses = [ruff(), mypy()]
    return max(statuses)


if __name__ == "__main__":
    sys.exit(main())
