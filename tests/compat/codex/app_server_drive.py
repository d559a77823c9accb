"""Ask a real `codex app-server` (inside the test's namespace) what it would import from another agent,
and have it import the sessions it offers.

    python app_server_drive.py --binary CODEX --cwd DIR [--import]

Starts `CODEX app-server --listen stdio://` in DIR and speaks its JSON-RPC (one JSON object a line):
`initialize` (client name `reprise-compat`), `initialized`, then `externalAgentConfig/detect` with
`includeHome: true` and `cwds: [DIR]`. With `--import`, it sends back the `SESSIONS` items exactly as
detected in an `externalAgentConfig/import` and waits for `externalAgentConfig/import/completed`. Then
it closes the server's stdin and waits for it to end (SIGKILL by its pid after a while). Prints one
JSON line: the detected items, the completion's params (or null) and the method of every
notification received.
"""

from __future__ import annotations

import argparse
import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any

CLIENT = "reprise-compat"
REPLY_S = 60
EXIT_S = 10


class AppServer:
    def __init__(self, binary: str, cwd: str):
        self.process = subprocess.Popen([binary, "app-server", "--listen", "stdio://"], cwd=cwd,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.notifications: list[str] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                self.inbox.put(message)
        self.inbox.put(None)

    def send(self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False) -> int:
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()
        return self.next_id

    def wait(self, wanted, timeout: float = REPLY_S) -> dict[str, Any] | None:
        """The first message `wanted` accepts; notifications on the way are noted by method."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = self.inbox.get(timeout=0.25)
            except queue.Empty:
                continue
            if message is None:
                return None
            if "method" in message and "id" not in message:
                self.notifications.append(message["method"])
            if wanted(message):
                return message
        return None

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        number = self.send(method, params)
        reply = self.wait(lambda message: message.get("id") == number and "method" not in message)
        if reply is None or "result" not in reply:
            raise SystemExit(f"app_server_drive: {method} got no result: {reply}")
        return reply["result"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(EXIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--cwd", required=True)
    parser.add_argument("--import", dest="do_import", action="store_true")
    args = parser.parse_args()
    server = AppServer(args.binary, args.cwd)
    items: list[dict[str, Any]] = []
    completed = None
    try:
        server.request("initialize", {"clientInfo": {"name": CLIENT, "version": "0"},
                                      "capabilities": {"experimentalApi": True}})
        server.send("initialized", notify=True)
        items = server.request("externalAgentConfig/detect", {"includeHome": True, "cwds": [args.cwd]})["items"]
        sessions = [item for item in items if item.get("itemType") == "SESSIONS"]
        if args.do_import and sessions:
            server.request("externalAgentConfig/import", {"migrationItems": sessions})
            done = server.wait(lambda message: message.get("method") == "externalAgentConfig/import/completed")
            completed = done["params"] if done is not None else None
    finally:
        server.close()
    print(json.dumps({"detected": items, "completed": completed, "notifications": server.notifications}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
