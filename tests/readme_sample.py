"""README.md's picture of the TUI, made from the real screen so that it cannot go stale: the demo
store (`reprise --demo`'s, at a fixed clock, in a fixed folder) drawn by the app the command line
builds, at SIZE, and the screen's text put between the README's two markers.

    python -m tests.readme_sample --write    rewrites the README's block from the screen
    python -m tests.readme_sample            prints the screen's text

`tests/tui/test_readme_sample.py` fails while the README's block is not the screen's text."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import shutil
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

README = Path(__file__).resolve().parent.parent / "README.md"
START = "<!-- tui-sample: the screen's text, written by `python -m tests.readme_sample --write` -->"
END = "<!-- /tui-sample -->"
SIZE = (120, 30)
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
ROOT = Path("/tmp/reprise-demo")   # its path shows in the header: the same wherever the sample is made


class StaleSample(Exception):
    """README.md has no sample block, or more than one."""


def sample_block(readme: str) -> str:
    """The text between the markers, without the code fence around it."""
    if readme.count(START) != 1 or readme.count(END) != 1:
        raise StaleSample(f"README.md needs exactly one {START!r} and one {END!r}")
    inside = readme.split(START, 1)[1].split(END, 1)[0]
    lines = inside.strip("\n").split("\n")
    if len(lines) < 2 or lines[0] != "```" or lines[-1] != "```":
        raise StaleSample("the sample block is not one fenced code block")
    return "\n".join(lines[1:-1])


def with_sample(readme: str, screen: str) -> str:
    """The README with its block replaced by `screen`; everything outside the markers as it was."""
    sample_block(readme)   # exactly one block, fenced
    before, rest = readme.split(START, 1)
    after = rest.split(END, 1)[1]
    return f"{before}{START}\n```\n{screen}\n```\n{END}{after}"


@contextlib.contextmanager
def demo_environment(root: Path) -> Iterator[None]:
    """Every root `reprise --demo` points at the demo folder (never the user's), the clock's zone
    UTC; all as they were afterwards."""
    from reprise.core.sources.claude.samples import claude_root
    from reprise.core.sources.codex.samples import codex_root

    wanted = {"CLAUDE_CONFIG_DIR": str(claude_root(root)), "CODEX_HOME": str(codex_root(root)),
              "REPRISE_DATA_DIR": str(root / "data"), "REPRISE_CONFIG": str(root / "config.toml"),
              "REPRISE_CACHE_DIR": str(root / "cache"), "REPRISE_STATE_DIR": str(root / "state"), "TZ": "UTC"}
    try:
        with mock.patch.dict(os.environ, wanted):
            time.tzset()
            yield
    finally:
        time.tzset()


async def screen_text(size: tuple[int, int] = SIZE, root: Path = ROOT) -> str:
    """The demo's first screen as text, each line without its trailing blanks. The folder is held
    under a lock while it is used: two runs on one machine would rebuild it under each other."""
    from reprise.core import config
    from reprise.core.service import Service
    from reprise.tui.app import make_app
    from reprise.tui.demo import build_demo

    root.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{root}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(root, ignore_errors=True)
        try:
            with demo_environment(root):
                workspace = build_demo(root, now=NOW)
                service = Service(config.load(state_dir=str(root / "state"), env=dict(os.environ)),
                                  workspace=workspace, cache=root / "cache")
                app = make_app(service, clock=NOW.timestamp, follow_disk=False, agent="echo", demo=True)
                async with app.run_test(size=size) as pilot:
                    for _ in range(3):   # the listing, the preview and the meter land from workers
                        await pilot.pause()
                        await app.workers.wait_for_complete()
                    while any(getattr(screen, "debouncing", False) for screen in app.screen_stack):
                        await pilot.pause(0.05)
                        await app.workers.wait_for_complete()
                    await pilot.pause()
                    strips = app.screen._compositor.render_strips()
                    return "\n".join(strip.text.rstrip() for strip in strips)
        finally:
            shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.readme_sample", description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite README.md's sample block from the screen")
    args = parser.parse_args(argv)
    screen = asyncio.run(screen_text())
    if not args.write:
        print(screen)
        return 0
    readme = README.read_text(encoding="utf-8")
    updated = with_sample(readme, screen)
    if updated != readme:
        README.write_text(updated, encoding="utf-8")
        print(f"{README}: the TUI sample rewritten", file=sys.stderr)
    else:
        print(f"{README}: the TUI sample is the screen already", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
