"""A real source masked down to some of its roles, for tests of what Reprise does when a role is
absent. Roles are nominal, so the masked class has exactly the roles it inherits; each of their
methods forwards to the real source, and nothing else of it is reachable but its identity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reprise.core.sources.base import SessionSource
from reprise.core.sources.roles import OPTIONAL, REQUIRED

# What every source is and has, whatever its roles (`SessionSource`'s own abstract methods and attributes).
IDENTITY_METHODS = ("has_sessions", "workspace_path", "record_workspace", "read_meta", "update_meta")
IDENTITY_VALUES = ("spec", "name", "label", "cost_label", "rename_note", "window_per_folder",
                   "resume_setting", "trash_note", "listing", "own_paths", "archive", "audit", "cataloged")


def masked(real: SessionSource, absent: frozenset[type]) -> SessionSource:
    """`real` with only its roles not in `absent`: a class of those roles whose methods forward to it."""
    kept = [role for role in OPTIONAL if role in real.roles and role not in absent]
    names = {name for role in (*REQUIRED, *kept) for name in role.__abstractmethods__} | set(IDENTITY_METHODS)

    def forward(name: str) -> Callable[..., Any]:
        def method(self: SessionSource, *args: Any, **kwargs: Any) -> Any:
            return getattr(real, name)(*args, **kwargs)
        return method

    namespace: dict[str, Any] = {name: forward(name) for name in sorted(names)}
    namespace.update({name: getattr(real, name) for name in IDENTITY_VALUES})
    cls = type(f"Masked{type(real).__name__}", (SessionSource, *kept), namespace)
    return cls()
