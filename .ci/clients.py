"""CI: the real client of every registered source that has one (its spec's `ClientSpec`), installed
pinned under WORK, for the compat tests; prints the `export VAR=value` lines `.ci/run` evaluates.

For each source with a client, in the registry's order: the system programs it `needs` are
installed with apt when absent (all of them first); its pinned packages go into WORK/<name>
(`npm install --prefix`, or a venv with pip); its binary is the first of its globs under that
folder that is executable and larger than its `min_size` (a venv's Python when it names none), and
is exported as its `binary_env`; each side venv is built and its Python exported; its `env` is
exported as it is. A binary that is not found fails the run with the source's label.

    python .ci/clients.py WORK [--dry-run] [--only NAME ...]
    python .ci/clients.py --labels

`--dry-run` prints what it would run and export, and changes nothing; `--only` installs the named
sources' clients alone; `--labels` prints the clients' labels for .ci/run's skip message. Run it
with the Python Reprise is installed in: the registry it reads is that installation's (a plug-in
installed there is included). Everything but the export lines goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from reprise.core.sources.registry import registry
from reprise.core.sources.spec import ClientSpec, SourceSpec

NPM_FLAGS = ("--no-audit", "--no-fund", "--loglevel=error")
VENV_PYTHON = "bin/python"


class ClientError(Exception):
    """A client that could not be installed or found: the message names its source."""


class Runner:
    """Runs the install commands, or only says them (`dry_run`). Their output goes to stderr: stdout
    carries the export lines alone."""

    def __init__(self, *, dry_run: bool):
        self.dry_run = dry_run
        self.apt_updated = False

    def run(self, argv: Sequence[str], *, quiet: bool = False) -> None:
        """Run `argv` (its stdout thrown away when `quiet`); a failure ends the run."""
        print(f"+ {shlex.join(argv)}", file=sys.stderr)
        if self.dry_run:
            return
        result = subprocess.run(argv, stdout=subprocess.DEVNULL if quiet else sys.stderr, check=False)
        if result.returncode != 0:
            raise ClientError(f"{shlex.join(argv)} failed with exit status {result.returncode}")

    def install_system_program(self, program: str) -> None:
        """Install `program` with apt when it is not on PATH (the package is named as the program)."""
        if shutil.which(program) is not None:
            return
        if not self.apt_updated:
            self.run(["apt-get", "update", "-qq"])
            self.apt_updated = True
        self.run(["apt-get", "install", "-y", "-qq", program], quiet=True)

    def venv(self, folder: Path, packages: Sequence[str]) -> Path:
        """A new venv at `folder` with `packages` installed; its Python."""
        self.run(["python3", "-m", "venv", str(folder)])
        python = folder / VENV_PYTHON
        self.run([str(python), "-m", "pip", "install", "--quiet", *packages])
        return python


def with_clients(specs: Sequence[SourceSpec], only: Sequence[str] = ()) -> list[tuple[SourceSpec, ClientSpec]]:
    """The sources that have a client, in the registry's order (those in `only` when it names any)."""
    unknown = sorted(set(only) - {spec.name for spec in specs})
    if unknown:
        raise ClientError(f"no registered source is named {', '.join(unknown)}")
    return [(spec, spec.client) for spec in specs if spec.client is not None and (not only or spec.name in only)]


def install(spec: SourceSpec, client: ClientSpec, work: Path, runner: Runner) -> list[tuple[str, str]]:
    """Install one source's client under `work`; the (variable, value) pairs to export."""
    if not client.binary_env:
        raise ClientError(f"the {spec.label} client names no binary_env for the compat tests to read")
    prefix = work / spec.name
    if client.registry == "npm":
        runner.run(["npm", "install", "--prefix", str(prefix), *NPM_FLAGS, *client.packages])
    else:
        runner.venv(prefix, client.packages)
    exports = [(client.binary_env, binary(spec, client, prefix, dry_run=runner.dry_run))]
    for number, (variable, packages) in enumerate(client.side_venvs.items(), start=1):
        python = runner.venv(work / f"{spec.name}-side-{number}", packages)
        exports.append((variable, str(python)))
    exports += list(client.env.items())
    return exports


def binary(spec: SourceSpec, client: ClientSpec, prefix: Path, *, dry_run: bool = False) -> str:
    """The client's program under `prefix`: the first match of its globs, in their order (each
    glob's matches sorted, as a shell expands them), that is executable and, when the spec sets a
    `min_size`, larger than it (a placeholder script is smaller than the real binary; the size is
    the entry's own, not a symlink's target). A venv's Python when the spec names no glob."""
    globs = client.binary or (VENV_PYTHON,)
    if dry_run:
        over = f" over {client.min_size:,} bytes" if client.min_size else ""
        print(f"# {client.binary_env}: the first executable{over} among {', '.join(globs)} under {prefix}",
              file=sys.stderr)
        return str(prefix / globs[0])
    for pattern in globs:
        for candidate in sorted(prefix.glob(pattern)):
            if not os.access(candidate, os.X_OK) or candidate.is_dir():
                continue
            if client.min_size and candidate.lstat().st_size <= client.min_size:
                continue
            return str(candidate)
    raise ClientError(f"the {spec.label} binary was not found under {prefix} ({', '.join(globs)})")


def labels(specs: Sequence[SourceSpec]) -> str:
    """"the real A, the real B or the real C": the clients the compat tests need, for a message."""
    names = [f"the real {spec.label}" for spec, _ in with_clients(specs)]
    if len(names) < 2:
        return "".join(names) or "no client"
    return f"{', '.join(names[:-1])} or {names[-1]}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("work", nargs="?", type=Path, help="the folder the clients are installed under")
    parser.add_argument("--dry-run", action="store_true", help="say what would be run and exported; change nothing")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="only this source's client")
    parser.add_argument("--labels", action="store_true", help="print the clients' labels and stop")
    args = parser.parse_args(argv)
    loaded = registry()
    for failure in loaded.failures:
        print(f"clients.py: {failure.line}", file=sys.stderr)
    if args.labels:
        print(labels(loaded.specs))
        return 0
    if args.work is None:
        parser.error("WORK is required")
    if loaded.failures:   # CI must not pass with a source whose compat tests cannot run
        return 1
    runner = Runner(dry_run=args.dry_run)
    try:
        chosen = with_clients(loaded.specs, args.only)
        for _, client in chosen:
            for program in client.needs:
                runner.install_system_program(program)
        for spec, client in chosen:
            for variable, value in install(spec, client, args.work.resolve(), runner):
                print(f"export {variable}={shlex.quote(value)}")
    except ClientError as exc:
        print(f"clients.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
