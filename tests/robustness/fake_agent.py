"""A stand-in agent for the argv tests: appends what it received (argv, cwd, stdin, Reprise's
environment variables) as one JSON line to $FAKE_AGENT_LOG and replies on stdout."""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    record = {"argv": sys.argv[1:], "cwd": os.getcwd(), "stdin": sys.stdin.read() if not sys.stdin.isatty() else "",
              "env": {key: value for key, value in os.environ.items() if key.startswith("REPRISE_")}}
    with open(os.environ["FAKE_AGENT_LOG"], "a", encoding="utf-8", errors="surrogateescape") as log:
        log.write(json.dumps(record) + "\n")
    print("fake agent reply")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
