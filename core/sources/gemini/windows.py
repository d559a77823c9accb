"""The window Gemini CLI uses for a model and the total at which it compresses the chat on its own.

Gemini CLI 0.61.0's `tokenLimit(model)` is 1,048,576 tokens for every model but the two Gemma 4
models (256,000). Before each turn it compresses the history once the last prompt's token count
reaches `model.compressionThreshold` (settings.json; a fraction, default 0.5) of that limit: 524,288
tokens. A resumed run has no last prompt yet: for its first call it compares the client's own
estimate of the history (about four characters a token), not a measured count.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import RepriseError
from ...meter import user_spec
from ...session_files import ReadProblem, read_regular_file

if TYPE_CHECKING:
    from ...config import ModelSpec

TOKEN_LIMIT = 1_048_576
GEMMA_LIMIT = 256_000
GEMMA_MODELS = frozenset({"gemma-4-31b-it", "gemma-4-26b-a4b-it"})
DEFAULT_THRESHOLD = 0.5
SETTINGS_NAME = "settings.json"
_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.DOTALL)


def token_limit(model: str) -> int:
    """Gemini CLI's `tokenLimit` of a model (with or without a provider prefix)."""
    return GEMMA_LIMIT if model.rsplit("/", 1)[-1] in GEMMA_MODELS else TOKEN_LIMIT


def window_of(model: str, specs: list[ModelSpec]) -> tuple[int, str]:
    """The window of a model and where it comes from: a user's `[[meter.models]]` entry, else `token_limit`."""
    spec = user_spec(model, specs)
    if spec is not None:
        return spec.input_budget, f"[[meter.models]] {spec.pattern}: the input budget"
    return token_limit(model), "Gemini CLI 0.61.0's tokenLimit for the model"


def read_settings(path: Path, root: Path) -> dict[str, Any]:
    """A settings.json as Gemini CLI reads it (comments allowed), or {} when absent or unreadable."""
    try:
        data, _ = read_regular_file(path, root)
        text = _COMMENT.sub(lambda found: found.group(0) if found.group(0).startswith('"') else "", data.decode())
        loaded = json.loads(text)
    except (OSError, ReadProblem, RepriseError, UnicodeDecodeError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def threshold_of(settings: dict[str, Any]) -> float | None:
    model = settings.get("model")
    value = model.get("compressionThreshold") if isinstance(model, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def compression_threshold(store: Path, workspace: Path | None) -> tuple[float, str]:
    """`model.compressionThreshold` as the client merges it (the folder's .gemini/settings.json over
    the user's), else its default; and where it comes from."""
    if workspace is not None:
        found = threshold_of(read_settings(workspace / ".gemini" / SETTINGS_NAME, workspace))
        if found is not None:
            return found, "model.compressionThreshold in the folder's .gemini/settings.json"
    found = threshold_of(read_settings(store / SETTINGS_NAME, store))
    if found is not None:
        return found, "model.compressionThreshold in Gemini CLI's settings.json"
    return DEFAULT_THRESHOLD, "Gemini CLI's default compression threshold (0.5)"


def compacts_at(model: str, threshold: float) -> int:
    """The total at which Gemini CLI compresses the chat before a turn."""
    return int(threshold * token_limit(model))
