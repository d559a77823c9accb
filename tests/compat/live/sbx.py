"""A stand-in for Docker Sandboxes' `sbx` command, enough for predict-rlm 0.7.0's SbxBackend.

The real `sbx` runs a microVM; here a "sandbox" is a name in a state folder and `sbx exec`
runs the command as a local process (in the test's network namespace) with the sandbox's
Python first on PATH. `pip install` runs offline (`--no-index`): the sandbox venv has its
packages preinstalled. Configured by the environment: SBX_STANDIN_STATE (the folder) and
SBX_STANDIN_BIN (the sandbox venv's bin folder). Every call is logged to `calls.log` there.

Output shapes follow what SbxBackend parses: `sbx ls` lines start with the name and say
"running" or "stopped"; `sbx ports NAME --publish PORT` prints a 127.0.0.1:PORT endpoint.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def state_dir() -> Path:
    path = Path(os.environ["SBX_STANDIN_STATE"])
    (path / "sandboxes").mkdir(parents=True, exist_ok=True)
    return path


def sandbox(name: str) -> Path:
    return state_dir() / "sandboxes" / f"{name}.json"


def cmd_create(args: list[str]) -> int:
    name = args[args.index("--name") + 1]
    mounts = [a for a in args[1:args.index("--name")] if not a.startswith("-")]
    sandbox(name).write_text(json.dumps({"name": name, "status": "running", "mounts": mounts}))
    print(name)
    return 0


def cmd_ls(args: list[str]) -> int:
    print("SANDBOX                          AGENT   STATUS    PORTS   WORKSPACE")
    for path in sorted((state_dir() / "sandboxes").glob("*.json")):
        record = json.loads(path.read_text())
        print(f"{record['name']}    shell   {record['status']}    -   {' '.join(record['mounts'])}")
    return 0


def cmd_policy(args: list[str]) -> int:
    return 0  # network policy: there is no network in the namespace anyway


def cmd_ports(args: list[str]) -> int:
    name = args[0]
    if not sandbox(name).exists():
        print(f"sandbox {name} not found", file=sys.stderr)
        return 1
    port = args[args.index("--publish") + 1].split(":")[-1]
    print(f"127.0.0.1:{port}->{port}/tcp")
    return 0


def _set_status(name: str, status: str | None) -> int:
    path = sandbox(name)
    if not path.exists():
        return 0 if status is None else 1
    if status is None:
        path.unlink()
    else:
        record = json.loads(path.read_text())
        record["status"] = status
        path.write_text(json.dumps(record))
    return 0


def cmd_rm(args: list[str]) -> int:
    return _set_status(next(a for a in args if not a.startswith("-")), None)


def cmd_stop(args: list[str]) -> int:
    return _set_status(args[0], "stopped")


def cmd_start(args: list[str]) -> int:
    return _set_status(args[0], "running")


def cmd_exec(args: list[str]) -> int:
    workdir = None
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag in ("-w", "-u", "--workdir", "--user"):
            value = args.pop(0)
            if flag in ("-w", "--workdir"):
                workdir = value
    name, command = args[0], args[1:]
    if not sandbox(name).exists():
        print(f"sandbox {name} not found", file=sys.stderr)
        return 1
    if "pip" in command and "install" in command:
        command = [*command, "--no-index"]  # offline: the sandbox venv holds the packages already
    env = dict(os.environ, PATH=os.environ["SBX_STANDIN_BIN"] + os.pathsep + os.environ.get("PATH", ""))
    if workdir:
        os.chdir(workdir)
    os.execvpe(command[0], command, env)
    return 127  # not reached


COMMANDS = {"create": cmd_create, "ls": cmd_ls, "policy": cmd_policy, "ports": cmd_ports, "rm": cmd_rm,
            "stop": cmd_stop, "start": cmd_start, "exec": cmd_exec}


def main(argv: list[str]) -> int:
    with (state_dir() / "calls.log").open("a") as log:
        log.write(json.dumps(argv) + "\n")
    if not argv or argv[0] not in COMMANDS:
        print(f"sbx stand-in: unsupported command {argv[:1]}", file=sys.stderr)
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
