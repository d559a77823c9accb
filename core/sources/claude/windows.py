"""The context window and the auto-compaction point Claude Code itself uses for each model it knows.

Read from Claude Code 2.1.332's `/context`, started with `--model NAME` for each model (offline, on a
pty): "13.7k/1m tokens (1%)", "Autocompact buffer: 33k (3%)", "Auto-compact window: 1m tokens". The
compaction point is the window minus that buffer; None where `/context` shows no autocompact buffer
for the model. A model not listed has no known window (the meter says so rather than guess).
"""

from __future__ import annotations

import fnmatch

# (pattern, window, the total it compacts at)
_MILLION = ("claude-opus-5-5", "claude-opus-5", "claude-sonnet-5-5", "claude-sonnet-5", "claude-haiku-5-5",
            "claude-opus-4-8", "claude-opus-4-7", "claude-fable-5-2", "claude-fable-5-1", "claude-fable-5",
            "claude-mythos-5", "claude-mythos-5-1", "claude-mythos-5-2", "claude-opus-4-1", "claude-opus-4-0")
MODEL_WINDOWS: tuple[tuple[str, int, int | None], ...] = (
    ("claude-sonnet-4-6[[]1m]", 1_000_000, None),
    ("claude-sonnet-5[[]1m]", 1_000_000, 967_000),
    *((name, 1_000_000, 967_000) for name in _MILLION),
    ("claude-opus-4-6", 200_000, 167_000),
    ("claude-sonnet-4-6", 200_000, 167_000),
    ("claude-haiku-4-5", 200_000, None),
    ("claude-haiku-4-5-2*", 200_000, None),
    ("claude-sonnet-4-5", 200_000, None),
    ("claude-sonnet-4-5-2*", 200_000, None),
    ("claude-opus-4-5", 200_000, None),
    ("claude-opus-4-5-2*", 200_000, None),
    ("claude-sonnet-4-0", 200_000, None),
)
WINDOWS_SOURCE = "Claude Code 2.1.332's model table (/context)"


def claude_window(model: str | None) -> tuple[int, int | None, str] | None:
    """(window, the total it compacts at, the table's pattern) Claude Code shows for a model; None: not known."""
    bare = (model or "").rsplit("/", 1)[-1]
    for pattern, window, compacts_at in MODEL_WINDOWS:
        if fnmatch.fnmatchcase(bare, pattern):
            return window, compacts_at, pattern
    return None
