"""The benchmarks' one entry point.

    python -m bench.run            # every benchmark on the full scale store; writes docs/benchmarks.md
    python -m bench.run --quick    # a small store, a quick look (docs untouched unless --write-docs)
    python -m bench.run --only listing
    python -m bench.run --only meter --write-docs   # replace only that section of docs/benchmarks.md
    python -m bench.run --only search --only cold_start   # issue 27's table (its own 2,500-session store)
    python -m bench.run --only seam --base HEAD~3 --merge-docs   # issue 28: this checkout beside a base commit
    python -m bench.run --only gemini --merge-docs   # issue 29: a Gemini CLI row against a Claude Code row

It builds the scale stores once (bench/.stores/, git-ignored, reused while the generator's
parameters are unchanged), runs each benchmark module's `run(store, report)` and prints one
side-by-side table per benchmark: ours | baseline | ratio | target | met?

Adding a benchmark: a module bench/<name>.py with `run(store, report, *, quick, log)` that calls
`report.section(name, title)` and then `.row(...)` / `.note(...)` on it; list it in BENCHMARKS.
A module with `USES_STORE = False` builds its own data (the scale store is then not built for
an `--only` run of it). An `--only ... --write-docs` run replaces only its own sections in
docs/benchmarks.md and keeps the others.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import stores

PROJECT = Path(__file__).resolve().parent.parent
DOCS = PROJECT / "docs" / "benchmarks.md"
BENCHMARKS = {
    "listing": "bench.listing",
    "memory": "bench.memory",
    "long_run": "bench.long_run",
    "meter": "bench.meter",
    "agent_meter": "bench.agent_meter",
    "trim": "bench.trim",
    "tui": "bench.tui",
    "live_meter": "bench.live_meter",
    "json_parsers": "bench.json_parsers",
    "claude_listing": "bench.claude_listing",
    "codex_listing": "bench.codex_listing",
    "startup": "bench.startup",
    "cost_fill": "bench.cost_fill",
    "tui_fill": "bench.tui_fill",
    "tui_exit": "bench.tui_exit",
    "search": "bench.search",
    "cold_start": "bench.cold_start",
    "seam": "bench.seam",
    "gemini": "bench.gemini",
}
HEADERS = ("", "ours", "baseline", "ratio", "target", "met?")


@dataclass
class Row:
    what: str
    ours: str
    baseline: str = ""
    ratio: str = ""
    target: str = ""
    met: bool | None = None

    def cells(self) -> list[str]:
        met = "" if self.met is None else ("yes" if self.met else "NO")
        return [self.what, self.ours, self.baseline, self.ratio, self.target, met]


@dataclass
class Section:
    name: str
    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    profile: str | None = None
    data: dict = field(default_factory=dict)   # raw figures, for whoever wants them
    headers: tuple[str, ...] = HEADERS         # a section may name its six columns itself

    def row(self, what: str, ours: str, baseline: str = "", ratio: str = "", target: str = "",
            met: bool | None = None) -> Row:
        row = Row(what, ours, baseline, ratio, target, met)
        self.rows.append(row)
        return row

    def note(self, text: str) -> None:
        self.notes.append(text)

    def text_table(self) -> str:
        cells = [list(self.headers)] + [row.cells() for row in self.rows]
        widths = [max(len(line[i]) for line in cells) for i in range(len(self.headers))]
        out = []
        for index, line in enumerate(cells):
            out.append("  ".join(cell.ljust(width) if i == 0 else cell.rjust(width) if i < 4 else cell.ljust(width)
                                 for i, (cell, width) in enumerate(zip(line, widths, strict=True))).rstrip())
            if index == 0:
                out.append("  ".join("-" * width for width in widths))
        return "\n".join(out)

    def markdown_table(self) -> str:
        lines = ["| " + " | ".join(h or ("measure" if i == 0 else "") for i, h in enumerate(self.headers)) + " |",
                 "|---|---:|---:|---:|---|:---:|"]
        for row in self.rows:
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row.cells()) + " |")
        return "\n".join(lines)


class Report:
    def __init__(self) -> None:
        self.sections: list[Section] = []

    def section(self, name: str, title: str) -> Section:
        section = Section(name, title)
        self.sections.append(section)
        return section

    @property
    def all_met(self) -> bool:
        return all(row.met is not False for section in self.sections for row in section.rows)

    # --- formatting helpers for benchmark modules ---------------------------------------------

    @staticmethod
    def seconds(value: float | None) -> str:
        if value is None:
            return "–"
        if value < 1:
            return f"{value * 1000:.1f} ms"
        return f"{value:.2f} s"

    @staticmethod
    def ratio(baseline: float | None, ours: float | None) -> str:
        if not baseline or not ours:
            return "–"
        value = baseline / ours
        return f"{value:,.0f}×" if value >= 10 else f"{value:.2f}×"

    @staticmethod
    def mb(value: float | None) -> str:
        return "–" if value is None else f"{value / 2**20:.1f} MB"


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    memory = f"{int(line.split()[1]) / 2**20:.1f} GiB"
                    break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "core"], cwd=PROJECT, capture_output=True,
                               text=True).stdout.strip()
        if dirty:
            import hashlib

            digest = hashlib.sha256()
            for path in sorted((PROJECT / "core").glob("*.py")):
                digest.update(path.name.encode() + b"\0" + path.read_bytes())
            commit += f" with uncommitted changes in core/ (core/*.py digest {digest.hexdigest()[:12]})"
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    try:
        averages = os.getloadavg()
        load = "{:.2f} {:.2f} {:.2f} (1/5/15 min) when the run started".format(*averages)
        if averages[0] > 0.5:
            load += " — other work was running, so the figures (best of N) may be somewhat pessimistic"
    except OSError:
        load = "unknown"
    return {
        "CPU": f"{cpu}, {os.cpu_count()} cores",
        "Load average": load,
        "Memory": memory,
        "OS": f"{platform.system()} {platform.release()}",
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "Date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "Commit": commit,
    }


def write_docs(report: Report, store: stores.ScaleStore, command: str, elapsed: float, info: dict) -> None:
    lines = [
        "# Benchmarks",
        "",
        "Generated by `bench/run.py`; do not edit by hand, run it again:",
        "",
        "```",
        command,
        "```",
        "",
        f"The whole run took {elapsed / 60:.1f} min"
        + (f" (of which {store.build_seconds:.0f} s building the store)." if store.build_seconds else
           f" (the store was reused from bench/.stores/; building it took {store.first_build_seconds or 0:.0f} s)."),
        "",
        "## Machine",
        "",
        *[f"- {key}: {value}" for key, value in info.items()],
        "",
        "## Store",
        "",
        f"`{store.params.name}` (generator v{store.params.version}, seed {store.params.seed}): {store.describe()}. "
        "Built by `bench/stores.py` in Fractal's byte format, sizes mostly from predict-rlm RunTrace "
        f"history traces; {round(store.params.workspaces * store.params.recorded_share)} workspaces have a "
        "recorded `workspace.json`.",
        "",
    ]
    for section in report.sections:
        lines += section_lines(section)
    DOCS.parent.mkdir(parents=True, exist_ok=True)
    DOCS.write_text("\n".join(lines))


def section_lines(section: Section) -> list[str]:
    lines = [f"## {section.title}", "", section.markdown_table(), ""]
    lines += [f"- {note}" for note in section.notes]
    if section.profile:
        lines += ["", "A target was missed; where the time goes (cProfile, top functions by own time):",
                  "", "```", section.profile, "```"]
    lines.append("")
    return lines


def merge_docs(report: Report, command: str, info: dict) -> None:
    """Replace the sections this (partial) run measured in docs/benchmarks.md, or add them at
    the end; every other section stays as it was."""
    text = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    head, *blocks = text.split("\n## ")
    by_title = {block.split("\n", 1)[0]: index for index, block in enumerate(blocks)}
    for section in report.sections:
        lines = section_lines(section)
        lines.insert(-1, f"- Run alone: `{command}`, {info['Date']}, commit {info['Commit']}; "
                         f"{info['CPU']}, {info['Memory']}, {info['Python']}; load {info['Load average']}.")
        block = "\n".join(lines)[len("## "):]
        if section.title in by_title:
            blocks[by_title[section.title]] = block
        else:
            blocks.append(block)
    DOCS.write_text("\n## ".join([head.rstrip("\n") + "\n", *[b.rstrip("\n") + "\n" for b in blocks]]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description="Run Reprise's benchmarks.")
    parser.add_argument("--quick", action="store_true", help="a small store (1,000 sessions); for a quick look")
    parser.add_argument("--only", action="append", choices=sorted(BENCHMARKS), help="run only this benchmark")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the store even if cached")
    parser.add_argument("--write-docs", action="store_true", help="write docs/benchmarks.md even for --quick/--only")
    parser.add_argument("--no-docs", action="store_true", help="do not write docs/benchmarks.md")
    parser.add_argument("--merge-docs", dest="write_docs", action="store_true",
                        help="the same as --write-docs: with --only, replace just these sections")
    parser.add_argument("--base", metavar="REV", help="the base commit bench/seam.py measures against "
                                                      "(default: its BASE_COMMIT)")
    args = parser.parse_args(argv)
    command = "python -m bench.run" + (" " + shlex.join(sys.argv[1:] if argv is None else argv)
                                       if (sys.argv[1:] if argv is None else argv) else "")
    started = time.perf_counter()
    info = machine()

    def log(text: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {text}", flush=True)

    params = stores.QUICK if args.quick else stores.FULL
    selected = args.only or list(BENCHMARKS)
    store = None
    if any(getattr(importlib.import_module(BENCHMARKS[name]), "USES_STORE", True) for name in selected):
        log(f"store: {params.name} ({params.sessions:,} sessions, {params.workspaces} workspaces)")
        store = stores.build(params, force=args.rebuild, log=log)
        log((f"built in {store.build_seconds:.1f} s: " if store.build_seconds else "reused: ") + store.describe())

    report = Report()
    for name in selected:
        log(f"benchmark: {name}")
        options = {"base": args.base} if name == "seam" and args.base else {}
        importlib.import_module(BENCHMARKS[name]).run(store, report, quick=args.quick, log=log, **options)

    elapsed = time.perf_counter() - started
    print()
    for section in report.sections:
        print(f"== {section.title}" + (f" ({store.sessions:,} sessions) ==" if store else " =="))
        print(section.text_table())
        for note in section.notes:
            print(f"  * {note}")
        if section.profile:
            print("\n  profile:\n" + "\n".join("    " + line for line in section.profile.splitlines()))
        print()
    missed = [f"{s.name}: {r.what}" for s in report.sections for r in s.rows if r.met is False]
    print("targets missed: " + "; ".join(missed) if missed else "all targets met")
    print(f"whole run: {elapsed:.1f} s")
    partial = args.quick or bool(args.only)
    if not args.no_docs and partial and args.write_docs:
        merge_docs(report, command, info)
        print(f"updated the sections of this run in {DOCS.relative_to(PROJECT)}")
    elif not args.no_docs and not partial:
        write_docs(report, store, command, elapsed, info)
        print(f"wrote {DOCS.relative_to(PROJECT)}")
    elif partial and not args.no_docs:
        print("docs/benchmarks.md not written (a --quick or --only run); add --write-docs to write it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
