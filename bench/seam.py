"""Issue 28 (the open seam) against its base commit, in one run: start-up, listing and meter of
this checkout (head) beside a base commit (BASE_COMMIT unless `--base REV`), runs alternating
(base, head, then head, base, ...) so that the machine's noise falls on both.

    python -m bench.run --only seam                    # against 2148b92; prints the table
    python -m bench.run --only seam --base HEAD~3      # against another commit
    python -m bench.run --only seam --merge-docs       # and writes its section of docs/benchmarks.md

Each side is a package folder put on PYTHONPATH and run by this interpreter: the base commit's
`git archive`, this checkout's working tree copied. Both are laid out as pip installs them (the
folders of pyproject's `package-dir` under `reprise/`) beside a `reprise-VERSION.dist-info`
holding that side's METADATA and entry_points.txt, written from its own pyproject.toml, so that a
side which finds its sources through entry points finds its own, first on sys.path, and pays for
reading them. Nothing of either side is imported here: whole processes run `reprise` as its
script does (the `reprise` entry of that side's `[project.scripts]`, `reprise.tui.cli:main` today)
and import that entry's module; the loops, in a process of each side, call that entry with an
argv, so a refactor of the code inside cannot break the bench. The data are made by bench modules
that import no Reprise code (the Claude Code and Codex generators) or, for the Fractal session, by
a process of the base side.

Figures (median of the runs with [min-max], base and head, head ÷ base, within 10%):
- start-up: `python -c pass` (reference), importing the entry, `reprise --help`, and the
  lightest command that builds every source, `reprise list --json` over empty stores (Reprise has
  no `--version`);
- listing on issue 27's mixed store (Claude Code + Codex, bench/mixed_store.py): `reprise list
  --all --json` cold (a new cache folder) and warm, the largest folder cold and warm; the Fractal
  scale store's warm `list --all --json`, in-process (each side's entry called in a loop);
- meter: `reprise meter ID --json` of a 20 MB Claude Code session and a 20 MB Codex rollout (made as
  bench/agent_meter.py makes them) and of the Fractal long session (bench/meter.py's, gpt-5), each
  in-process with a new cache folder per call (the first count of a session, its listing included);
- the TUI's first row, warm, on a pty (bench/cold_start.py's `paint`): wall only.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import agent_meter, stores
from . import whole_process as wp
from .meter import AGENTS_MD, fine_seconds

USES_STORE = False   # it finds the Fractal scale store itself and never builds it
PROJECT = Path(__file__).resolve().parent.parent
BASE_COMMIT = "2148b92"
WITHIN = 1.10
REPEATS, COLD_REPEATS = 7, 5
QUICK_REPEATS, QUICK_COLD_REPEATS = 3, 2
METER_BYTES, QUICK_METER_BYTES = 20 * 2**20, 5 * 2**20
FRACTAL_MODEL = "gpt-5"   # bench/meter.py's pin
START_REPEATS, QUICK_START_REPEATS = 15, 5   # start-up runs are short: more of them
REFERENCE = "`python -c pass` (reference: the same program both sides)"
HEADERS = ("", "base", "head", "head ÷ base", "runs", "within 10%")

# Run in a process of one side: the command line's entry in a loop. Its protocol goes on a copy of
# the first stdout; the commands' own output (descriptor 1) goes to /dev/null.
WORKER = r'''
import importlib, json, os, resource, sys, time
spec = json.loads(sys.argv[1])
proto = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
module, attr = spec["entry"].split(":")
main = getattr(importlib.import_module(module), attr)
import reprise.core
proto.write("code " + os.path.dirname(reprise.core.__file__) + "\n")
runs = 0
def once():
    global runs
    runs += 1
    if spec["fresh_cache"]:
        os.environ["REPRISE_CACHE_DIR"] = spec["cache"] + "-" + str(runs)
    status = main(list(spec["argv"]))
    sys.stdout.flush()
    if status != 0:
        raise SystemExit("reprise " + " ".join(spec["argv"]) + " exited with " + str(status))
for _ in range(spec["warmups"]):
    once()
proto.write("ready\n")
for _ in sys.stdin:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, started = time.process_time(), time.perf_counter()
    once()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - cpu + after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    proto.write(f"{wall} {cpu}\n")
'''


# --- the two sides -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Side:
    """One program: a package folder for PYTHONPATH and a scratch folder of its own."""

    name: str         # "base" or "head"
    label: str        # what it is, for the notes
    package: Path
    scratch: Path
    entry: str        # its `reprise` script's "module:function"

    @property
    def module(self) -> str:
        return self.entry.split(":")[0]

    def reprise(self, *args: str) -> list[str]:
        """The argv of `reprise ARGS` as its script runs it."""
        module, function = self.entry.split(":")
        return [sys.executable, "-c", f"import sys; from {module} import {function}; sys.exit({function}())", *args]

    def env(self, *, cache: Path, state: Path, claude: Path, codex: Path) -> dict[str, str]:
        """This side's environment over these roots, with its own cache, data, config and bytecode."""
        env = {key: value for key, value in os.environ.items()
               if key not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "PYTHONHOME")
               and not key.startswith(("REPRISE_", "CLAUDE_", "CODEX_", "FRACTAL_"))}
        env.update(PYTHONPATH=str(self.package), PYTHONPYCACHEPREFIX=str(self.scratch / "pycache"),
                   REPRISE_CACHE_DIR=str(cache), REPRISE_STATE_DIR=str(state), CLAUDE_CONFIG_DIR=str(claude),
                   CODEX_HOME=str(codex), REPRISE_DATA_DIR=str(self.scratch / "data"),
                   REPRISE_CONFIG=str(self.scratch / "config.toml"), HOME=str(self.scratch / "home"),
                   XDG_CONFIG_HOME=str(self.scratch / "xdg"))
        return env


def _layout(pyproject: dict[str, Any], target: Path, copy: Callable[[str, Path], object]) -> str:
    """The package folders of `pyproject` under target/reprise/... (by `copy(folder, destination)`)
    and a dist-info with its METADATA and entry points, as pip would install them; the `reprise`
    script's entry ("module:function")."""
    project = pyproject["project"]
    mapping = pyproject.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    if not mapping:
        raise RuntimeError("pyproject.toml names no package-dir: the bench cannot lay the package out")
    for package, folder in mapping.items():
        copy(folder, target.joinpath(*package.split(".")))
    for each in {package.split(".")[0] for package in mapping}:
        (target / each / "__init__.py").touch()
    info = target / f"{project['name']}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = {"console_scripts": project.get("scripts", {}), "gui_scripts": project.get("gui-scripts", {}),
              **project.get("entry-points", {})}
    text = "".join(f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items()) + "\n"
                   for group, entries in groups.items() if entries)
    (info / "entry_points.txt").write_text(text)
    (info / "top_level.txt").write_text("\n".join(sorted({p.split(".")[0] for p in mapping})) + "\n")
    return str(project["scripts"]["reprise"])


def commit_package(base: str, target: Path) -> tuple[str, str]:
    """Lay out the package of commit `base` in `target` (from `git archive`); its full hash and entry."""
    commit = _git("rev-parse", "--verify", f"{base}^{{commit}}").strip()
    pyproject = tomllib.loads(_git("show", f"{commit}:pyproject.toml"))
    archive = target.with_name(target.name + "-archive")
    archive.mkdir(parents=True)
    folders = sorted(set(pyproject["tool"]["setuptools"]["package-dir"].values()))
    data = subprocess.run(["git", "archive", commit, *folders], cwd=PROJECT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(archive)], input=data, check=True)
    entry = _layout(pyproject, target, lambda folder, to: shutil.move(archive / folder, to))
    shutil.rmtree(archive)
    return commit, entry


def checkout_package(target: Path) -> tuple[str, str]:
    """Lay out this checkout's working tree in `target`; its description (commit, and whether the
    package or pyproject.toml has uncommitted changes) and entry."""
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    entry = _layout(pyproject, target, lambda folder, to: shutil.copytree(PROJECT / folder, to, ignore=ignore))
    folders = sorted(set(pyproject["tool"]["setuptools"]["package-dir"].values()))
    commit = _git("rev-parse", "--short", "HEAD").strip()
    changed = _git("status", "--porcelain", "--", "pyproject.toml", *folders).strip()
    return commit + (" with uncommitted changes" if changed else ""), entry


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=PROJECT, capture_output=True, text=True, check=True).stdout


def check_code(side: Side, env: dict[str, str]) -> None:
    """Fail unless this side's processes import its own package (not the installed one)."""
    code = (f"import json, reprise.core, {side.module}\n"
            f"print(json.dumps([reprise.core.__file__, {side.module}.__file__]))")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=side.scratch, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"the {side.name} package does not import: {out.stderr[-1500:]}")
    for path in json.loads(out.stdout):
        if not Path(path).resolve().is_relative_to(side.package.resolve()):
            raise RuntimeError(f"the {side.name} side imported {path}, not its package under {side.package}")


# --- measuring, alternating ------------------------------------------------------------------------

Sample = tuple[float, float | None]   # wall seconds, CPU seconds (None: not measured)


@dataclass
class Figure:
    what: str
    runs: dict[str, list[Sample]] = field(default_factory=dict)


def alternate(measure: Callable[[Side], Sample], sides: tuple[Side, Side], repeats: int,
              warmups: int = 1) -> dict[str, list[Sample]]:
    """Each side's samples: `warmups` uncounted runs each, then `repeats` rounds, base then head in
    the even rounds and head then base in the odd ones."""
    for side in sides:
        for _ in range(warmups):
            measure(side)
    out: dict[str, list[Sample]] = {side.name: [] for side in sides}
    for index in range(repeats):
        for side in sides if index % 2 == 0 else sides[::-1]:
            out[side.name].append(measure(side))
    return out


def whole(argv: list[str], env: dict[str, str], cwd: Path, *, expect: int = 0) -> wp.Run:
    """A whole process to its end (wall, CPU of it and its children), failing on another status."""
    done = wp.run(argv, env, cwd, check=False)
    if done.code != expect:
        raise RuntimeError(f"{' '.join(argv[3:] if argv[1:2] == ['-c'] else argv)} exited with {done.code}: "
                           f"{done.stderr[-1500:].decode(errors='replace')}")
    return done


def timed(argv_of: Callable[[Side], list[str]], envs: dict[str, dict[str, str]]) -> Callable[[Side], Sample]:
    """A measure of a side: the whole process `argv_of(side)` in that side's environment."""
    def once(side: Side) -> Sample:
        done = whole(argv_of(side), envs[side.name], side.scratch)
        return done.wall, done.cpu
    return once


class Worker:
    """A process of one side running `reprise ARGV` through `main(argv)` once per request; each
    answer is the wall and CPU (the process and its reaped children) of that call."""

    def __init__(self, side: Side, env: dict[str, str], argv: list[str], *, fresh_cache: bool, warmups: int):
        spec = {"argv": argv, "fresh_cache": fresh_cache, "cache": env["REPRISE_CACHE_DIR"], "warmups": warmups,
                "entry": side.entry}
        self.side = side
        self.errors: IO[bytes] = tempfile.TemporaryFile()
        self.process = subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(spec)], env=env, cwd=side.scratch,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, text=True)
        code = self._line()
        if not code.startswith("code ") or not Path(code[5:]).resolve().is_relative_to(side.package.resolve()):
            raise RuntimeError(f"the {side.name} worker runs other code: {code!r}")
        if self._line() != "ready":
            raise RuntimeError(f"the {side.name} worker did not start")

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            self.errors.seek(0)
            raise RuntimeError(f"the {self.side.name} worker ended ({self.process.returncode}): "
                               f"{self.errors.read()[-2000:].decode(errors='replace')}")
        return line.strip()

    def once(self) -> Sample:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        wall, cpu = self._line().split()
        return float(wall), float(cpu)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()
        self.errors.close()


def in_process(sides: tuple[Side, Side], envs: dict[str, dict[str, str]], argv: list[str], repeats: int, *,
               fresh_cache: bool, warmups: int = 1) -> dict[str, list[Sample]]:
    """A worker per side, their calls alternating."""
    workers: dict[str, Worker] = {}
    try:
        for side in sides:
            workers[side.name] = Worker(side, envs[side.name], argv, fresh_cache=fresh_cache, warmups=warmups)
        return alternate(lambda side: workers[side.name].once(), sides, repeats, warmups=0)
    finally:
        for worker in workers.values():
            worker.close()


# --- the data -------------------------------------------------------------------------------------

def fractal_store() -> stores.ScaleStore | None:
    """The Fractal scale store as bench/stores.py left it (full, else quick), or None: never built here."""
    for params in (stores.FULL, stores.QUICK):
        directory = stores.STORES_DIR / f"{params.name}-{params.digest}"
        manifest = directory / "manifest.json"
        if manifest.exists():
            data = json.loads(manifest.read_text())
            return stores.ScaleStore(params, directory, directory / "state", [], data["sessions"],
                                     data["total_bytes"], data["sizes"], data["statuses"], data["per_workspace"],
                                     None, data.get("build_seconds"))
    return None


@dataclass(frozen=True)
class MeterSession:
    label: str
    session_id: str
    workspace: str
    bytes: int
    args: tuple[str, ...] = ()


def claude_session(root: Path, size: int) -> MeterSession:
    """bench/agent_meter.py's Claude Code session: one the real client began, grown to `size`."""
    path, session_id, cwd = agent_meter.claude_session_file(root, size)
    return MeterSession("Claude Code", session_id, cwd, path.stat().st_size)


def codex_session(root: Path, workspace: Path, size: int) -> MeterSession:
    """bench/agent_meter.py's Codex rollout of `size` bytes."""
    path, session_id = agent_meter.codex_session_file(root, str(workspace), size)
    return MeterSession("Codex", session_id, str(workspace), path.stat().st_size)


def fractal_session(sides: tuple[Side, Side], envs: dict[str, dict[str, str]], root: Path,
                    workspace: Path) -> MeterSession:
    """bench/meter.py's long session (60 turns, 300,000-character summary), written by a process of
    the base side, else of the head (bench/stores.py writes it through Reprise's Fractal store, whose
    module a refactor may move, and the bench with it)."""
    workspace.mkdir(parents=True)
    (workspace / "AGENTS.md").write_text(AGENTS_MD, encoding="utf-8")
    code = ("import sys\nfrom pathlib import Path\nfrom bench import stores\n"
            "key, session_id, path = stores.write_long_session(Path(sys.argv[1]), Path(sys.argv[2]))\n"
            "print(session_id, path.stat().st_size)\n")
    errors = []
    for side in sides:
        env = {**envs[side.name], "PYTHONPATH": f"{side.package}{os.pathsep}{PROJECT}"}
        out = subprocess.run([sys.executable, "-c", code, str(root), str(workspace)], capture_output=True, text=True,
                             env=env, cwd=side.scratch)
        if out.returncode == 0:
            break
        errors.append(f"{side.name}: {out.stderr[-700:]}")
        shutil.rmtree(root / "workspaces", ignore_errors=True)
    else:
        raise RuntimeError("the Fractal long session was not written: " + " ".join(errors))
    session_id, size = out.stdout.split()
    return MeterSession("Fractal", session_id, str(workspace), int(size), ("--model", FRACTAL_MODEL))


def sessions_listed(stdout: bytes) -> int | None:
    """How many sessions a `list --json` document holds (None: not a document of that shape)."""
    document = json.loads(stdout)
    sessions = document.get("sessions") if isinstance(document, dict) else None
    return len(sessions) if isinstance(sessions, list) else None


# --- the report -------------------------------------------------------------------------------------

def _cell(values: list[float]) -> str:
    return f"{fine_seconds(statistics.median(values))} [{fine_seconds(min(values))}–{fine_seconds(max(values))}]"


def _values(samples: list[Sample], index: int) -> list[float]:
    return [value for value in (sample[index] for sample in samples) if value is not None]


def add_rows(section: Any, what: str, runs: dict[str, list[Sample]], *, cpu: bool = True) -> dict[str, float]:
    """Two rows (wall, then CPU when measured): medians with [min–max], head ÷ base and the verdict;
    the ratios, for the data."""
    ratios: dict[str, float] = {}
    kinds = [("wall", 0)] + ([("CPU", 1)] if cpu else [])
    for kind, index in kinds:
        base, head = _values(runs["base"], index), _values(runs["head"], index)
        ratio = statistics.median(head) / statistics.median(base)
        ratios[kind] = ratio
        section.row(f"{what}: {kind}" if index == 0 else f"  the same: {kind}", _cell(base), _cell(head),
                    f"{ratio:.3f}", f"{len(head)}+{len(base)}", ratio <= WITHIN)
    return ratios


# --- the benchmark ------------------------------------------------------------------------------------

def run(store: Any, report: Any, *, quick: bool = False, log: Callable[[str], None] = print,
        base: str | None = None) -> None:
    section = report.section("seam", "Issue 28: the open seam against its base commit")
    section.headers = HEADERS
    repeats, cold_repeats = (QUICK_REPEATS, QUICK_COLD_REPEATS) if quick else (REPEATS, COLD_REPEATS)
    scratch = Path(tempfile.mkdtemp(prefix="reprise-bench-seam-"))
    wp.set_log(log)
    seam = Seam(section, scratch, base or BASE_COMMIT, quick, repeats, cold_repeats, log)
    try:
        seam.measure()
    except Exception as exc:   # the rows measured so far stay in the section, with why it stopped
        section.note(f"The run stopped: {type(exc).__name__}: {str(exc)[:600]}")
        raise
    finally:
        section.data["ratios"] = seam.ratios
        shutil.rmtree(scratch, ignore_errors=True)


class Seam:
    """One run: the two sides laid out, then every group of figures, alternating. A figure or a group
    that fails is said in a note (and its rows say "failed"); the others are still measured."""

    def __init__(self, section: Any, scratch: Path, base: str, quick: bool, repeats: int, cold_repeats: int,
                 log: Callable[[str], None]):
        self.section, self.scratch, self.base, self.quick = section, scratch, base, quick
        self.repeats, self.cold_repeats, self.log = repeats, cold_repeats, log
        self.starts = QUICK_START_REPEATS if quick else START_REPEATS
        self.loads: list[str] = []
        self.ratios: dict[str, dict[str, float]] = {}
        self.failed: list[str] = []
        self.caches = 0

    # --- bookkeeping ---

    def step(self, text: str) -> None:
        self.loads.append(f"{wp.load():.2f}")
        self.log(f"  {text} (load {self.loads[-1]}) ...")

    def figure(self, what: str, measure: Callable[[], dict[str, list[Sample]]], *, cpu: bool = True) -> None:
        """Measure one figure and add its rows; a failure is a row that says so and a note."""
        try:
            runs = measure()
        except Exception as exc:   # the head's code may fail anywhere: said, and the run goes on
            self.fail(what, exc)
            self.section.row(what, "failed", "failed", "", "", False)
            return
        self.ratios[what] = add_rows(self.section, what, runs, cpu=cpu)

    def fail(self, what: str, exc: Exception) -> None:
        self.failed.append(what)
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:700]
        self.section.note(f"{what} failed: {reason}")
        self.log(f"  FAILED: {what}: {reason}")

    def group(self, what: str, measure: Callable[[], None]) -> None:
        """A group of figures whose preparation may fail as a whole (said, and the run goes on)."""
        try:
            measure()
        except Exception as exc:
            self.fail(what, exc)

    def cache(self, side: Side) -> Path:
        """A new cache folder of this side (a first run ever)."""
        self.caches += 1
        return side.scratch / f"cache-{self.caches}"

    def empty(self, side: Side) -> Path:
        return side.scratch / "empty"

    # --- the run ---

    def measure(self) -> None:
        for name in ("base", "head"):
            for each in ("home", "xdg", "empty/state", "empty/claude", "empty/codex"):
                (self.scratch / name / each).mkdir(parents=True)
        self.log(f"  laying out the base commit {self.base} and this checkout ...")
        base_commit, base_entry = commit_package(self.base, self.scratch / "base" / "package")
        head_label, head_entry = checkout_package(self.scratch / "head" / "package")
        sides = (Side("base", base_commit[:7], self.scratch / "base" / "package", self.scratch / "base", base_entry),
                 Side("head", head_label, self.scratch / "head" / "package", self.scratch / "head", head_entry))
        for side in sides:
            check_code(side, self.empty_env(side))
        self.group("start-up", lambda: self.start_up(sides))
        mixed_out: dict[str, Any] = {}
        self.group("listing of the mixed store", lambda: self.mixed_listing(sides, mixed_out))
        fractal = fractal_store()
        if fractal is None:
            self.section.note("The Fractal scale store is not in bench/.stores/ (`python -m bench.run --only "
                              "listing` builds it): its listing row is left out.")
        else:
            self.group("listing of the Fractal store", lambda: self.fractal_listing(sides, fractal))
        sessions: list[MeterSession] = []
        self.group("meter", lambda: self.meter(sides, sessions))
        self.notes(sides, mixed_out, fractal, sessions)

    def empty_env(self, side: Side) -> dict[str, str]:
        empty = self.empty(side)
        return side.env(cache=self.cache(side), state=empty / "state", claude=empty / "claude", codex=empty / "codex")

    def start_up(self, sides: tuple[Side, Side]) -> None:
        self.step("start-up: python -c pass, importing the entry, reprise --help, reprise list --json (empty)")
        envs = {side.name: self.empty_env(side) for side in sides}
        python = [sys.executable, "-c"]
        commands: tuple[tuple[str, Callable[[Side], list[str]]], ...] = (
            (REFERENCE, lambda side: python + ["pass"]),
            (f"`python -c 'import {sides[1].module}'` (the `reprise` script's module)",
             lambda side: python + [f"import {side.module}"]),
            ("`reprise --help`", lambda side: side.reprise("--help")),
            ("`reprise list --json`, empty stores (every source built)", lambda side: side.reprise("list", "--json")))
        for what, argv_of in commands:
            self.figure(what, functools.partial(alternate, timed(argv_of, envs), sides, self.starts))

    def mixed_listing(self, sides: tuple[Side, Side], out: dict[str, Any]) -> None:
        mixed = out["mixed"] = wp.store(self.quick)
        folder, count = out["folder"] = mixed.largest_folder()
        self.log("  mixed store: " + mixed.describe())

        def env(side: Side, cache: Path | None = None) -> dict[str, str]:
            return side.env(cache=cache or self.cache(side), state=self.empty(side) / "state",
                            claude=mixed.claude.root, codex=mixed.codex.root)

        warm = {side.name: env(side) for side in sides}
        listed: dict[str, int | None] = {}
        every, one = ("list", "--all", "--json"), ("list", "--workspace", folder, "--json")
        self.step("mixed store: the warm caches filled (a cold listing each, uncounted; bytecode compiled)")
        for side in sides:
            listed[side.name] = sessions_listed(whole(side.reprise(*every), warm[side.name], side.scratch).stdout)
        self.check_counts("the mixed store's `list --all --json`", listed)

        def listing(args: tuple[str, ...], fresh: bool) -> Callable[[Side], Sample]:
            def once(side: Side) -> Sample:
                done = whole(side.reprise(*args), env(side) if fresh else warm[side.name], side.scratch)
                listed[side.name] = sessions_listed(done.stdout)
                return done.wall, done.cpu
            return once

        self.step(f"list --all --json, cold and warm, {mixed.sessions:,} sessions")
        self.figure(f"`reprise list --all --json`, mixed store ({mixed.sessions:,} sessions), cold",
                    lambda: alternate(listing(every, True), sides, self.cold_repeats, warmups=0))
        self.figure("  the same, warm", lambda: alternate(listing(every, False), sides, self.repeats))
        self.check_counts("the mixed store's `list --all --json`", listed)
        self.step(f"list --workspace {folder}, cold and warm")
        self.figure(f"`reprise list --workspace FOLDER --json`, {count:,} sessions, cold",
                    lambda: alternate(listing(one, True), sides, self.cold_repeats, warmups=0))
        self.figure("  the same, warm", lambda: alternate(listing(one, False), sides, self.repeats))
        self.check_counts("the folder's `list --json`", listed)

        from .cold_start import OUR_ROW, paint

        self.step(f"TUI first row, warm, {folder}")

        def first_row(side: Side) -> Sample:
            return paint(side.reprise("--workspace", folder), OUR_ROW, warm[side.name], side.scratch), None

        self.figure(f"TUI first row, warm ({folder}, a {wp.TUI_SIZE[0]}x{wp.TUI_SIZE[1]} pty)",
                    lambda: alternate(first_row, sides, self.repeats), cpu=False)

    def fractal_listing(self, sides: tuple[Side, Side], fractal: stores.ScaleStore) -> None:
        self.step(f"Fractal store ({fractal.sessions:,} sessions): a cold listing fills each side's cache")
        envs = {side.name: side.env(cache=self.cache(side), state=fractal.root, claude=self.empty(side) / "claude",
                                    codex=self.empty(side) / "codex") for side in sides}
        listed = {side.name: sessions_listed(whole(side.reprise("list", "--all", "--json"), envs[side.name],
                                                   side.scratch).stdout) for side in sides}
        self.check_counts("the Fractal store's `list --all --json`", listed)
        self.step("Fractal store, warm list --all --json, in-process")
        self.figure(f"Fractal store ({fractal.sessions:,} sessions): `list --all --json` warm, in-process",
                    lambda: in_process(sides, envs, ["list", "--all", "--json"], self.repeats, fresh_cache=False))

    def meter(self, sides: tuple[Side, Side], sessions: list[MeterSession]) -> None:
        size = QUICK_METER_BYTES if self.quick else METER_BYTES
        data = self.scratch / "meter"
        self.step(f"meter: writing a {size // 2**20} MB Claude Code session and Codex rollout, and Fractal's long one")
        for each in ("claude/projects", "codex", "state"):
            (data / each).mkdir(parents=True)
        sessions += [claude_session(data / "claude", size), codex_session(data / "codex", data / "codex-folder", size),
                     fractal_session(sides, {side.name: self.empty_env(side) for side in sides}, data / "state",
                                     data / "fractal-folder")]
        envs = {side.name: side.env(cache=self.cache(side), state=data / "state", claude=data / "claude",
                                    codex=data / "codex") for side in sides}
        totals: dict[str, dict[str, object]] = {}
        for session in sessions:
            argv = ["--workspace", session.workspace, "--json", "meter", session.session_id, *session.args]

            def counts(argv: list[str] = argv, label: str = session.label) -> dict[str, list[Sample]]:
                for side in sides:   # one whole process each (bytecode compiled): the two counts must agree
                    env = {**envs[side.name], "REPRISE_CACHE_DIR": str(self.cache(side))}
                    done = whole(side.reprise(*argv), env, side.scratch)
                    totals.setdefault(label, {})[side.name] = json.loads(done.stdout).get("total")
                return in_process(sides, envs, argv, self.repeats, fresh_cache=True)

            self.step(f"meter, {session.label}, {session.bytes / 2**20:.1f} MB, in-process")
            self.figure(f"`reprise meter ID --json`, {session.label} {session.bytes / 2**20:.1f} MB session, "
                        "in-process, new cache each call", counts)
        for label, by_side in totals.items():
            if by_side.get("base") != by_side.get("head"):
                self.section.note(f"The meter totals differ for the {label} session: base {by_side.get('base')}, "
                                  f"head {by_side.get('head')} tokens.")
        if totals:
            self.section.note("Meter totals (base = head unless said above): " + ", ".join(
                f"{label} {by_side.get('head')} tokens" for label, by_side in totals.items()) + ".")

    def check_counts(self, what: str, listed: dict[str, int | None]) -> None:
        """Stop if the head lists nothing, say it if the sides list different numbers of sessions."""
        if listed.get("head") == 0 and listed.get("base"):
            raise RuntimeError(f"{what}: the head listed no session (base {listed['base']:,}); are its sources "
                               "registered (the entry points of its pyproject.toml)?")
        if listed.get("head") != listed.get("base"):
            note = f"{what}: base listed {listed.get('base')} sessions, head {listed.get('head')}."
            if note not in self.section.notes:
                self.section.note(note)

    def notes(self, sides: tuple[Side, Side], mixed_out: dict[str, Any], fractal: stores.ScaleStore | None,
              sessions: list[MeterSession]) -> None:
        section = self.section
        base, head = sides
        cpu_missed = [what for what, ratios in self.ratios.items() if ratios.get("CPU", 0) > WITHIN]
        wall_missed = [what for what, ratios in self.ratios.items()
                       if ratios["wall"] > WITHIN and what not in cpu_missed]
        section.note(f"Base: commit {base.label} (`git archive`); head: this checkout, {head.label}. Each runs as "
                     "`python -c \"import sys; from MODULE import FUNCTION; sys.exit(FUNCTION())\" ARGS` (what its "
                     f"`reprise` script runs: head `{head.entry}`, base `{base.entry}`) with PYTHONPATH naming a "
                     "package folder laid out as pip installs it, beside a `reprise-VERSION.dist-info` with that "
                     "side's entry points (from its own pyproject.toml), so reading entry points is counted; bytecode "
                     "compiled once per side (PYTHONPYCACHEPREFIX) by uncounted runs before each figure.")
        section.note(f"Cells: median [min–max] of the runs; runs: head+base; ratio: head's median ÷ base's; within "
                     f"10%: the ratio ≤ {WITHIN:.2f}. Runs alternate (base, head; then head, base) so the machine's "
                     "noise falls on both. Wall: fork to exit; CPU: user + system of the process and every process "
                     "it started (bench/whole_process.py); in-process rows: the call's wall and its process's CPU "
                     "with its reaped children.")
        if "mixed" in mixed_out:
            section.note(f"Listing: issue 27's store ({mixed_out['mixed'].describe()}), stdout a pipe; cold = a new "
                         "cache folder each run; warm = the cache of an uncounted cold listing; the folder is "
                         f"{mixed_out['folder'][0]}. TUI: bench/cold_start.py's first row on a pty, that warm cache; "
                         "wall only.")
        if fractal is not None:
            section.note(f"Fractal listing: the scale store ({fractal.sessions:,} sessions), each side's entry called "
                         "with `['list', '--all', '--json']` in a loop in a process of its own, output to /dev/null, "
                         "the cache filled by a whole-process listing first, one uncounted call.")
        if sessions:
            section.note("Meter: each side's entry called with `['--workspace', FOLDER, '--json', 'meter', ID]` in a "
                         "loop in a process of its own, a new cache folder each call (the first count of the session: "
                         "its listing, the file read, the count), one uncounted call; sessions: "
                         + "; ".join(f"{s.label} {s.bytes:,} bytes" for s in sessions)
                         + f" (the Fractal one with --model {FRACTAL_MODEL}).")
        section.note("1-minute load average at each step: " + ", ".join(self.loads) + f" ({os.cpu_count()} cores)"
                     + ("; above 1 the figures are noisy: run it again on a quiet machine." if
                        self.loads and max(float(x) for x in self.loads) > 1 else "."))
        reference = next((ratios["wall"] for what, ratios in self.ratios.items() if what.startswith(REFERENCE)), None)
        section.note("Outside 10% in CPU: " + ("; ".join(cpu_missed) if cpu_missed else "none")
                     + ". In wall time only: " + ("; ".join(wall_missed) if wall_missed else "none")
                     + (f". Failed: {'; '.join(self.failed)}" if self.failed else "")
                     + (f". The reference row runs the same program on both sides: its wall ratio, {reference:.3f}, "
                        "shows how far noise alone moves a ratio in this run." if reference is not None else "."))
