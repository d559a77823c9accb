"""README.md's picture of the TUI is the real screen's text (`tests/readme_sample.py`), and the
command that rewrites it changes nothing but the block between its markers."""

from __future__ import annotations

import pytest

from tests import readme_sample


async def test_the_readmes_tui_sample_is_the_screen_as_it_is_drawn():
    screen = await readme_sample.screen_text()
    assert screen.count("\n") + 1 == readme_sample.SIZE[1]
    assert "Dark mode" in screen and "Next turn" in screen   # the list, the preview and the meter line
    written = readme_sample.sample_block(readme_sample.README.read_text(encoding="utf-8"))
    assert written == screen, "README.md's TUI sample is stale: `python -m tests.readme_sample --write` rewrites it"


def test_writing_the_sample_changes_only_the_block_between_the_markers():
    readme = f"# Title\n\nbefore\n{readme_sample.START}\n```\nold screen\n```\n{readme_sample.END}\nafter\n"
    written = readme_sample.with_sample(readme, " new\n screen")
    assert written == f"# Title\n\nbefore\n{readme_sample.START}\n```\n new\n screen\n```\n{readme_sample.END}\nafter\n"
    assert readme_sample.sample_block(written) == " new\n screen"
    assert readme_sample.with_sample(written, " new\n screen") == written
    for broken in (readme.replace(readme_sample.END, ""), readme + readme_sample.START,
                   readme.replace("```\nold", "old")):
        with pytest.raises(readme_sample.StaleSample):
            readme_sample.with_sample(broken, "x")
