"""The first minute, each figure a whole process: `reprise --help`, `reprise list --json` of the
largest workspace (1,240 sessions, catalog warm), the TUI's first paint of that workspace in a
real terminal (a pty of 80x24 and of 120x40, timed until the first row's title is on screen),
beside a bare `python -c pass` and a bare Textual app showing one line (the background fill of
resume costs is bench/cost_fill.py).

Every program runs as installed code runs: bytecode compiled once (PYTHONPYCACHEPREFIX under
bench/.stores/, PYTHONDONTWRITEBYTECODE unset) and an uncounted warm-up run first. The base
commit (BASE_COMMIT, before this work) is extracted with `git archive` and run by the same
interpreter through PYTHONPATH. Best of N throughout, median beside it: the machine is shared."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from . import stores
from .terminal import time_to_text

PROJECT = Path(__file__).resolve().parent.parent
BASE_COMMIT = "f2965c2"
REPEATS = 7
PAINT_REPEATS = 5
SIZES = ((80, 24), (120, 40))
HELP_TARGET_S, LIST_TARGET_S, PAINT_TARGET_S = 0.15, 0.30, 0.80
FILL_GROWTH_TARGET = 150 * 2**20
ON_SCREEN = 20
LAUNCH = "import sys; from reprise.tui.cli import main; sys.exit(main())"   # what the `reprise` script runs
BARE_TEXTUAL = ("from textual.app import App\nfrom textual.widgets import Static\n"
                "class Bare(App):\n    def compose(self):\n        yield Static('a bare textual app')\n"
                "Bare().run()\n")


def base_package(log, base: str = BASE_COMMIT) -> Path:
    """A base commit's `reprise` package (core, tui, assets), extracted once."""
    commit = subprocess.run(["git", "rev-parse", base], cwd=PROJECT, capture_output=True, text=True,
                            check=True).stdout.strip()
    folder = stores.STORES_DIR / f"base-{commit[:12]}"
    if not (folder / "done").exists():
        shutil.rmtree(folder, ignore_errors=True)
        (folder / "reprise").mkdir(parents=True)
        archive = subprocess.run(["git", "archive", commit, "core", "tui", "assets"], cwd=PROJECT,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder / "reprise")], input=archive, check=True)
        (folder / "reprise" / "__init__.py").write_text("")
        (folder / "done").write_text(commit + "\n")
        log(f"  base commit {commit[:12]} extracted to {folder}")
    return folder


def environment(store_root: Path, scratch: Path, pythonpath: Path | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key != "PYTHONDONTWRITEBYTECODE" and not key.startswith(("REPRISE_", "CLAUDE_", "FRACTAL_"))}
    env.update(REPRISE_STATE_DIR=str(store_root), REPRISE_CACHE_DIR=str(scratch / "cache"),
               REPRISE_DATA_DIR=str(scratch / "data"), REPRISE_CONFIG=str(scratch / "config.toml"),
               CLAUDE_CONFIG_DIR=str(scratch / "no-claude"), HOME=str(scratch / "home"),
               XDG_CONFIG_HOME=str(scratch / "xdg"), PYTHONPYCACHEPREFIX=str(stores.STORES_DIR / "pycache"))
    (scratch / "home").mkdir(parents=True, exist_ok=True)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    else:
        env.pop("PYTHONPATH", None)
    return env


@contextlib.contextmanager
def two_programs(store, prefix: str, log) -> Iterator[tuple[Path, dict[str, str], dict[str, str]]]:
    """A scratch folder, and the environments of this checkout and of the base commit over the store."""
    base = base_package(log)
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield (scratch, environment(store.root, scratch / "ours"),
               environment(store.root, scratch / "base", pythonpath=base))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def largest_workspace(store) -> tuple[str, int]:
    """The folder of the store's largest workspace and its number of sessions."""
    key = max(store.per_workspace, key=store.per_workspace.get)
    return next(path for path, each in store.workspaces if each == key), store.per_workspace[key]


def warm_every_workspace(env: dict[str, str], cwd: Path, log) -> Path:
    """A cold listing of the whole store into the catalog of `env`; that catalog's file."""
    log("  warming the catalog of every workspace (a cold listing of the whole store) ...")
    subprocess.run([sys.executable, "-c", LAUNCH, "list", "--all", "--limit", "1"], env=env, cwd=cwd,
                   stdout=subprocess.DEVNULL, check=True)
    return next(Path(env["REPRISE_CACHE_DIR"]).glob("catalog-*.sqlite"))


def whole(argv: list[str], env: dict[str, str], repeats: int, cwd: Path) -> list[float]:
    """Wall seconds of each run of a whole process (output to /dev/null), after one warm-up run."""
    runs = []
    for index in range(repeats + 1):
        started = time.perf_counter()
        subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        if index:
            runs.append(time.perf_counter() - started)
    return runs


def paints(argv: list[str], text: str, env: dict[str, str], size: tuple[int, int], repeats: int,
           cwd: Path) -> list[float]:
    """Seconds from the fork until `text` is on the pty's screen, after one warm-up run."""
    runs = []
    for index in range(repeats + 1):
        paint = time_to_text(argv, text, size=size, env=env, cwd=str(cwd))
        if paint.seconds is None:
            raise RuntimeError(f"{text!r} never appeared on a {size[0]}x{size[1]} terminal: {argv}")
        if index:
            runs.append(paint.seconds)
    return runs


def first_title(store_root: Path, env: dict[str, str], folder: str) -> str:
    """The start of the first row's title as the TUI lists the workspace (sorted by activity)."""
    code = ("import json, sys\nfrom reprise.core.service import Service, sort_rows\n"
            "s = Service.from_environment(workspace=sys.argv[1])\nrows = s.list_sessions().rows\n"
            "sort_rows(rows, 'updated')\ns.load_details(rows[:1])\nprint(json.dumps(rows[0].display_title))\n")
    out = subprocess.run([sys.executable, "-c", code, folder], env=env, capture_output=True, text=True, check=True)
    return " ".join(json.loads(out.stdout).split())[:6]


def run(store, report, *, quick: bool = False, log=print) -> None:
    section = report.section("startup", "The first minute: start and first paint (whole processes)")
    repeats, paint_repeats = (3, 2) if quick else (REPEATS, PAINT_REPEATS)
    folder, count = largest_workspace(store)
    with two_programs(store, "reprise-bench-startup-", log) as (scratch, ours_env, base_env):
        cwd = scratch
        python = [sys.executable]
        log(f"  warming the catalogs of {folder} ({count:,} sessions) ...")
        for env in (ours_env, base_env):
            subprocess.run(python + ["-c", LAUNCH, "list", "--workspace", folder, "--json"], env=env, cwd=cwd,
                           stdout=subprocess.DEVNULL, check=True)
        title = first_title(store.root, ours_env, folder)

        def figures(runs: list[float]) -> tuple[float, float]:
            return min(runs), statistics.median(runs)

        log("  python -c pass ...")
        bare_python = figures(whole(python + ["-c", "pass"], ours_env, repeats, cwd))
        section.row(f"`python -c pass` (best of {repeats}; median)",
                    f"{report.seconds(bare_python[0])}; {report.seconds(bare_python[1])}", target="(information)")
        measured: dict[str, dict[str, tuple[float, float]]] = {}
        for label, args, target in (("`reprise --help`", ["--help"], HELP_TARGET_S),
                                    (f"`reprise list --json`, {count:,} sessions, warm",
                                     ["list", "--json", "--workspace", folder], LIST_TARGET_S)):
            log(f"  {label} ...")
            ours = figures(whole(python + ["-c", LAUNCH, *args], ours_env, repeats, cwd))
            before = figures(whole(python + ["-c", LAUNCH, *args], base_env, repeats, cwd))
            measured[label] = {"ours": ours, "base": before}
            section.row(f"{label} (best of {repeats})", report.seconds(ours[0]), report.seconds(bare_python[0]),
                        f"{ours[0] / bare_python[0]:.1f}× as long", f"< {report.seconds(target)}", ours[0] < target)
            section.row("  the same, median; base commit best / median", report.seconds(ours[1]),
                        f"{report.seconds(before[0])} / {report.seconds(before[1])}",
                        report.ratio(before[0], ours[0]) + " (base ÷ ours)", "(information)")
        for size in SIZES:
            log(f"  first paint {size[0]}x{size[1]} ...")
            bare = figures(paints(python + ["-c", BARE_TEXTUAL], "a bare textual app", ours_env, size,
                                  paint_repeats, cwd))
            ours = figures(paints(python + ["-c", LAUNCH, "--workspace", folder], title, ours_env, size,
                                  paint_repeats, cwd))
            before = figures(paints(python + ["-c", LAUNCH, "--workspace", folder], title, base_env, size,
                                    paint_repeats, cwd))
            measured[f"paint {size}"] = {"ours": ours, "base": before, "bare": bare}
            section.row(f"first paint, {count:,}-session workspace, warm, {size[0]}x{size[1]} pty "
                        f"(best of {paint_repeats})", report.seconds(ours[0]), report.seconds(bare[0]),
                        f"{ours[0] / bare[0]:.1f}× as long", f"< {report.seconds(PAINT_TARGET_S)}",
                        ours[0] < PAINT_TARGET_S)
            section.row("  the same, median; base commit best / median", report.seconds(ours[1]),
                        f"{report.seconds(before[0])} / {report.seconds(before[1])}",
                        report.ratio(before[0], ours[0]) + " (base ÷ ours)", "(information)")
        section.data["start"] = measured
        imports = {}
        for name, modules in (("ours", "reprise.tui.app"), ("bare", "textual.app, textual.widgets._static")):
            code = (f"import time\nstarted = time.perf_counter()\nimport {modules}\n"
                    "print(time.perf_counter() - started)")
            runs = []
            for index in range(repeats + 1):
                out = subprocess.run(python + ["-c", code], env=ours_env, cwd=cwd, capture_output=True, text=True,
                                     check=True)
                if index:
                    runs.append(float(out.stdout))
            imports[name] = figures(runs)
        section.row(f"  where the first paint goes: importing the TUI (Textual, core, pydantic) (best of {repeats})",
                    report.seconds(imports["ours"][0]), report.seconds(imports["bare"][0]),
                    f"{imports['ours'][0] / imports['bare'][0]:.1f}× as long", "(information)")

        section.note(
            f"Programs: ours is this checkout, the baseline column is a bare `python -c pass` (start and list) or a "
            f"bare Textual app showing one line (first paint), and the base commit {BASE_COMMIT} (before this work) "
            f"is beside ours in the median rows. Each is `python -c \"{LAUNCH}\" ARGS` (what the `reprise` script "
            f"runs), stdout to /dev/null; bytecode compiled (PYTHONPYCACHEPREFIX), one warm-up run uncounted.")
        section.note(
            f"First paint: a pseudo-terminal of the size given (TIOCSWINSZ), TERM=xterm-256color, the pty the "
            f"child's controlling terminal, timed from the fork until the first row's title ({title!r}…, the most "
            f"recently active of {count:,} sessions of {folder}) is in what the child wrote, escape sequences taken "
            f"out (bench/terminal.py); the child is then ended by its pid. The catalog is warm; nothing else runs "
            f"in the store. The bare Textual app is timed to its one line the same way.")
        section.note(
            "Where a first paint went before this work (one traced run, load about 5): importing the TUI "
            "(Textual, then core and pydantic, then Reprise's widgets) about 55% of it, the app's start to its "
            "first layout 12%, the warm listing of the workspace with every row's details 15%, and then the rows "
            "waited for the GIL: the resume-cost fill started with them and loaded the tokenizer (pure Python "
            "for ~0.5 s), and a refresh a second later listed everything again because the costs it stored had "
            "changed the rows' signature. Now the fill starts after the rows are painted and costs no longer "
            "count as a change; the details of every row are still read before the first paint (the filter "
            "and the columns need them). What is left above the bare Textual app is mostly imports.")
