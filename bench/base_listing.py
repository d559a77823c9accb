"""A warm listing of the Fractal store by a base commit's code, in a process of its own (run with
PYTHONPATH naming the extracted package, bench/startup.py's `base_package`): one listing for each
line read from standard input, each answered with a line "wall_seconds cpu_seconds", so that a
bench can take its runs in turn with its own. Two uncounted listings first (the first one cold
fills this process's catalog), then "ready".

The Service is made the way that commit's own bench made it (bench/listing.py at 4d7739c): default
settings, the store as the state root, a new Service for each listing.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def listing(root: Path, cache: Path, workspace: str) -> None:
    from reprise.core.config import LoadedSettings, Settings
    from reprise.core.service import Service

    loaded = LoadedSettings(Settings(), config_path=cache / "no-config.toml", state_root=root)
    Service(loaded, workspace=Path(workspace), cache=cache).list_sessions(all_workspaces=True)


def main(root: str, cache: str, workspace: str) -> None:
    import reprise.core

    print(f"code {Path(reprise.core.__file__).parent}", file=sys.stderr)
    for _ in range(2):
        listing(Path(root), Path(cache), workspace)
    print("ready", flush=True)
    for _ in sys.stdin:
        cpu, started = time.process_time(), time.perf_counter()
        listing(Path(root), Path(cache), workspace)
        print(f"{time.perf_counter() - started} {time.process_time() - cpu}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
