"""Run commands in the test's network namespace, with the fake model server beside them.

Invoked as `unshare -n -p -f --mount-proc PYTHON launch.py SPEC` (the namespace has nothing
but loopback, which this script brings up). SPEC is a JSON file: {"port", "record", "workdir",
"runs": [{"argv", "stdin", "env", "cwd",
"timeout"}], "server_env", "server"}. The fake server (`server`: a script path, default
fake_server.py) is started first and waited for; each run's
exit status, stdout, stderr and the number of requests recorded so far go into `<workdir>/results.json`.
This process is the namespace's pid 1: when it exits, every process left in the namespace (a sandbox supervisor,
the server) is killed with it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

SERVER = Path(__file__).resolve().with_name("fake_server.py")


def check_isolated() -> None:
    """Refuse to run anything unless the only network interface is loopback."""
    names = sorted(name for _, name in socket.if_nameindex())
    if names != ["lo"]:
        raise SystemExit(f"launch.py: not in an isolated network namespace (interfaces: {names})")


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text())
    check_isolated()
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    workdir = Path(spec["workdir"])
    ready = workdir / "server.ready"
    ready.unlink(missing_ok=True)
    server_log = (workdir / "server.log").open("ab")
    server = subprocess.Popen([sys.executable, spec.get("server", str(SERVER)), "--port", str(spec["port"]),
                               "--record", spec["record"], "--ready", str(ready)], stdout=server_log, stderr=server_log,
                              env=dict(os.environ, **spec.get("server_env", {})))
    deadline = time.monotonic() + 30
    while not ready.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("launch.py: the fake server did not start; see server.log")
        time.sleep(0.05)
    results = []
    for run in spec["runs"]:
        env = dict(os.environ, **run.get("env", {}))
        done = subprocess.run(run["argv"], check=False, input=run.get("stdin", ""), capture_output=True, text=True,
                              env=env, cwd=run.get("cwd"), timeout=run.get("timeout", 600))
        results.append({"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-20_000:],
                        "requests": len(list(Path(spec["record"]).glob("*.json")))})
    (workdir / "results.json").write_text(json.dumps(results))
    server.kill()
    server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
