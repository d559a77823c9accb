"""Fractal's spec: what the registry, the settings and the front ends know of this source before any
of its code is imported (`reprise.core.sources.spec`).

Fractal is the one source without a `[sources.fractal]` table: it keeps the top-level `[agent]`,
`[store]` and `[history]` sections users' config files already have, and it is always on (its
store is Reprise's state root)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..spec import ClientSpec, SourceSpec

if TYPE_CHECKING:
    from ...config import Settings
    from ..base import SessionSource

# Any name that is safe as a file name (the generic rules of `paths.validate_session_id`) and does not
# end in .json, which Fractal rejects.
ID_PATTERN = r"(?!.*\.json\Z)(?!\.\.?\Z)[^/\\\x00-\x1f\x7f-\x9f\ud800-\udfff]{1,128}"

SPEC = SourceSpec(
    name="fractal", label="Fractal", mark="F", order=0,
    id_pattern=ID_PATTERN, detect="reprise.core.sources.fractal.spec:detect",   # always on, at the state root
    factory="reprise.core.sources.fractal.spec:open_source", listing_module="reprise.core.sources.fractal.listing",
    workspaces="group",   # a group of its store is named by the workspace key
    client=ClientSpec(
        "pypi", ("fractal-rlm==0.1.1", "predict-rlm[sbx]==0.7.0", "dspy==3.2.1", "litellm==1.84.0"),
        binary_env="REPRISE_FRACTAL_PYTHON", env={"LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        side_venvs={"REPRISE_SANDBOX_PYTHON": ("websockets<16", "pydantic", "pandas")},
        offline="live turns run in a loopback-only namespace against the tests' fake model server"),
    isolate={"FRACTAL_STATE_HOME": "{state}"}, unset=("FRACTAL_MODEL",),
    resume_folder="recorded", resume_setting="[agent] resume",
    window_per_folder=True,   # the window reads the folder's own settings (its AGENTS.md)
    where_sessions_live="Fractal's sessions live in {root}/workspaces/<workspace>/sessions/.",
    backends={"fractal": "reprise.core.sources.fractal.turns:FractalBackend"},
)


def detect(state_root: Path, where: str) -> tuple[bool, tuple[Path, ...], str]:
    """Fractal is always on, its store at Reprise's state root (`where`: what chose that root)."""
    return True, (state_root,), f"always on; state root from {where}"


def open_source(roots: Sequence[Path], settings: Settings, data: Path) -> SessionSource:
    """Fractal's source on the state root its detection gave."""
    from .source import FractalSource

    return FractalSource(roots[0], settings)
