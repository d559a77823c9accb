"""The session sources Reprise reads: one folder of code per agent's store, each reached only
through the protocol of `base.py`. This registry is the one place that names them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Settings
    from .base import SessionSource


def make_sources(state_root: Path, settings: Settings) -> dict[str, SessionSource]:
    """Every source, by name, in the order listings show them."""
    from .fractal.source import FractalSource

    return {FractalSource.name: FractalSource(state_root, settings)}
