"""Print the meter-vs-live-request table of docs/benchmarks.md and the measured fixed text.

    REPRISE_FRACTAL_PYTHON=... python -m tests.compat.live.measure

Runs the same six real Fractal turns as tests/compat/live/test_live_meter.py (0-, 5- and 60-turn
sessions, a short and a 14,000-character message, gpt-5, --max-iterations 30, workspace paths of
fixed length) in a loopback-only namespace, in a temporary state root. `bench/live_meter.py`
runs it too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tests.compat.conftest import Fractal, find_fractal_python

from . import meter_compare
from .harness import (
    MAX_ITERATIONS,
    MODEL,
    LiveFractal,
    LiveUnavailable,
    make_root,
    prepare,
    remove_root,
)


def measure_isolated() -> list[meter_compare.Row]:
    """meter_compare.measure in a temporary state root, cache and config; the environment is
    restored after. Raises LiveUnavailable when the harness cannot run here."""
    python = find_fractal_python()
    sandbox = prepare(python)
    scratch = Path(tempfile.mkdtemp(prefix="reprise-measure-"))
    state = scratch / "state"
    saved = dict(os.environ)
    os.environ.update(FRACTAL_STATE_HOME=str(state), REPRISE_STATE_DIR=str(state),
                      REPRISE_CACHE_DIR=str(scratch / "cache"), REPRISE_CONFIG=str(scratch / "config.toml"),
                      XDG_CONFIG_HOME=str(scratch / "xdg-config"), LITELLM_LOCAL_MODEL_COST_MAP="True")
    os.environ.pop("FRACTAL_MODEL", None)
    root = make_root()
    driver = Fractal(python, scratch / "driver")
    try:
        return meter_compare.measure(driver, LiveFractal(python, sandbox, state, root))
    finally:
        driver.close()
        remove_root(root)
        shutil.rmtree(scratch, ignore_errors=True)
        os.environ.clear()
        os.environ.update(saved)


def fixed_text_line(row: meter_compare.Row) -> str:
    return (f"Fixed text measured ({MODEL}, `--max-iterations {MAX_ITERATIONS}`, 0-turn session, short message): "
            f"{row.fixed:,} tokens (the real request {row.real:,} minus the meter's counted parts {row.counted:,})")


def main() -> None:
    try:
        rows = measure_isolated()
    except LiveUnavailable as exc:
        raise SystemExit(f"cannot measure: {exc}") from None
    print(meter_compare.table(rows))
    print("\n" + fixed_text_line(rows[0]))


if __name__ == "__main__":
    main()
