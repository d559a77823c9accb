"""How the demo writes an agent's session file: one compact JSON line per record, non-ASCII kept as
written (the form Claude Code and Codex use), the file modified when its last record was written."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path


def write_json_lines(path: Path, records: list[dict[str, object]], modified: datetime) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
                              for record in records))
    stamp = int(modified.timestamp() * 1e9)
    os.utime(path, ns=(stamp, stamp))
    return path
