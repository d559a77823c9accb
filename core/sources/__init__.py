"""The session sources Reprise reads: one folder of code per agent's store, each reached only
through the protocol of `base.py`. This registry is the one place that names them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..paths import data_dir

if TYPE_CHECKING:
    from ..config import LoadedSettings
    from .base import SessionSource


def make_sources(loaded: LoadedSettings) -> dict[str, SessionSource]:
    """Every source that is on (`LoadedSettings.choices`), by name, in the order listings show them."""
    from .fractal.source import FractalSource

    sources: dict[str, SessionSource] = {FractalSource.name: FractalSource(loaded.state_root, loaded.settings)}
    claude = loaded.choices.get("claude")
    if claude is not None and claude.enabled:
        from .claude.source import ClaudeSource

        sources[ClaudeSource.name] = ClaudeSource(claude.roots, loaded.settings, data_dir())
    codex = loaded.choices.get("codex")
    if codex is not None and codex.enabled:
        from .codex.source import CodexSource

        sources[CodexSource.name] = CodexSource(codex.roots, loaded.settings, data_dir())
    return sources
