"""The window Codex uses for a model and the total at which it compacts on its own.

Codex 0.171.0 keeps 5% of a model's context window back: it records `model_context_window` as 95%
of the catalog's `context_window` (475,000 for gpt-6.2-sol's 500,000), or of `model_context_window`
in its config.toml. It compacts before a turn once the last call's tokens reach
`model_auto_compact_token_limit` (config.toml, or `-c model_auto_compact_token_limit=N`), else 90%
of the whole window (not of the 95%): 450,000 for gpt-6.2-sol. Every model of its built-in catalog
has `auto_compact_token_limit: null`. Found in the binary's catalog and checked against the client
(tests/compat/codex/test_meter_compat.py: with `-c model_context_window=14300` a session whose last
call totalled 12,926 tokens compacted first, with 14,400 it did not).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import RepriseError
from ...session_files import ReadProblem, read_regular_file

EFFECTIVE_SHARE = 0.95      # the share of the context window Codex records as model_context_window
AUTO_COMPACT_SHARE = 0.9    # the default auto-compaction limit: this share of the whole context window
# the context_window of each model in Codex CLI 0.171.0's built-in catalog
CATALOG: dict[str, int] = {
    "gpt-6.2-sol": 500_000, "gpt-6.2-astra": 272_000, "gpt-6.1-sol": 500_000, "gpt-6.1-terra": 500_000,
    "gpt-6-astra": 272_000, "gpt-6-sol": 272_000, "gpt-6-luna": 272_000, "gpt-5.6-sol": 272_000,
    "gpt-5.6-terra": 272_000, "gpt-5.6-luna": 272_000, "gpt-5.5": 272_000,
}
LIMIT_KEY = "model_auto_compact_token_limit"
WINDOW_KEY = "model_context_window"


def read_config(codex_home: Path) -> dict[str, Any]:
    """Codex's config.toml under `codex_home`, or {} when there is none or it does not parse."""
    import tomllib  # here, not at every command's start (its regexes are compiled on import)

    try:
        data, _ = read_regular_file(codex_home / "config.toml", codex_home)   # never a FIFO, never outside
        return tomllib.loads(data.decode())
    except (OSError, ReadProblem, RepriseError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


class Configs:
    """Each root's config.toml, read again only when its stat changes: the NEXT column meters every
    row, and a read and a TOML parse per row is work done thousands of times for one file."""

    def __init__(self) -> None:
        self._read: dict[Path, tuple[tuple[int, int, int] | None, dict[str, Any]]] = {}

    def of(self, codex_home: Path) -> dict[str, Any]:
        try:
            info = (codex_home / "config.toml").stat()
            version: tuple[int, int, int] | None = (info.st_ino, info.st_size, info.st_mtime_ns)
        except OSError:
            version = None
        known = self._read.get(codex_home)
        if known is None or known[0] != version:
            known = (version, read_config(codex_home) if version is not None else {})
            self._read[codex_home] = known
        return known[1]


def overrides(argv: Sequence[str]) -> dict[str, int]:
    """The integer `-c key=value` / `--config key=value` settings of a Codex command line."""
    found: dict[str, int] = {}
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag in ("-c", "--config") and "=" in value:
            key, _, raw = value.partition("=")
            try:
                found[key.strip()] = int(raw.strip().replace("_", ""))
            except ValueError:
                continue
    return found


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def catalog_window(model: str) -> int | None:
    """The window Codex records for a model of its catalog (95% of its context window), else None."""
    whole = CATALOG.get(model.rsplit("/", 1)[-1])
    return int(whole * EFFECTIVE_SHARE) if whole else None


def compacts_at(config: dict[str, Any], argv: Sequence[str], recorded_window: int | None,
                model: str) -> tuple[int | None, str]:
    """The total at which Codex compacts, and where that comes from: `-c` in the command Reprise runs,
    config.toml, else 90% of the whole window (`-c`'s or config.toml's, else the recorded one / 0.95,
    else the catalog's)."""
    found = overrides(argv)
    if (limit := _positive(found.get(LIMIT_KEY))) is not None:
        return limit, f"-c {LIMIT_KEY} in the command Reprise runs"
    if (limit := _positive(config.get(LIMIT_KEY))) is not None:
        return limit, f"{LIMIT_KEY} in Codex's config.toml"
    whole = _positive(found.get(WINDOW_KEY)) or _positive(config.get(WINDOW_KEY))
    if whole is None and recorded_window:
        whole = round(recorded_window / EFFECTIVE_SHARE)
    whole = whole or CATALOG.get(model.rsplit("/", 1)[-1])
    if whole is None:
        return None, "unknown"
    return int(whole * AUTO_COMPACT_SHARE), "Codex's default: 90% of the model's context window"
