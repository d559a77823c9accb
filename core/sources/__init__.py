"""The session sources Reprise reads: one folder of code per agent's store, each found through the
registry (`registry.py`, the entry-point group `reprise.sources`) and reached only through the
protocol of `base.py`. No module here names a source."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..paths import data_dir
from .registry import LoadFailure, load_object, registry

if TYPE_CHECKING:
    from ..config import LoadedSettings
    from .base import SessionSource


class Sources(dict[str, "SessionSource"]):
    """Every source that is on, by name, in the order listings show them (`spec.order`); `failures`:
    the registered sources that did not load or did not start, each said in one line."""

    failures: list[LoadFailure]

    def __init__(self) -> None:
        super().__init__()
        self.failures = []


def make_sources(loaded: LoadedSettings) -> Sources:
    """Every registered source that is on (`LoadedSettings.choices`), built by its spec's factory
    (`factory(roots, settings, data_dir)`); a factory that raises is a failure, and the others start."""
    found = registry()
    sources = Sources()
    sources.failures += found.failures
    for spec in found.specs:
        choice = loaded.choices.get(spec.name)
        if choice is None or not choice.enabled:
            continue
        try:
            factory = load_object(spec.factory)
            if not callable(factory):
                raise TypeError(f"{spec.factory} is not callable")
            sources[spec.name] = factory(choice.roots, loaded.for_sources(), data_dir())
        except Exception as exc:   # a plug-in's code may raise anything: said, and the others start
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            sources.failures.append(LoadFailure(spec.name, found.origins.get(spec.name, ""),
                                                f"it failed to start: {reason}"))
    return sources
