"""The resume-cost fill as a person meets it: the TUI (headless, Textual's run_test, refreshing
from disk each second as it does by default) opened on the largest workspace, its costs filled,
then switched to all 10,000 sessions with "a" and watched for WATCH_S seconds (the whole fill
takes many minutes on this shared machine); this checkout against the base commit. Memory is
the whole process's RSS, sampled by a thread every 100 ms; progress is the rows costed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from .startup import BASE_COMMIT, largest_workspace, two_programs, warm_every_workspace

GROWTH_TARGET = 150 * 2**20
WATCH_S = 120

TUI_FILL = r"""
import asyncio, json, sys, threading, time
from reprise.core.service import Service
from reprise.tui.app import make_app
def rss():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * 4096
service = Service.from_environment(workspace=sys.argv[1])
app = make_app(service)
marks = {"peak": 0}
def watch():
    while not marks.get("done"):
        marks["peak"] = max(marks["peak"], rss())
        time.sleep(0.1)
async def main():
    async with app.run_test(size=(120, 40)) as pilot:
        opened = time.perf_counter()
        while time.perf_counter() - opened < 900:   # the workspace's own costs first (the old way restarts its fill)
            await pilot.pause(0.5)
            rows = app.screen.all_rows
            if rows and all(row.resume_cost is not None or row.problem_code for row in rows):
                break
        before = rss()
        costed_before = sum(row.resume_cost is not None for row in app.screen.all_rows)
        marks["peak"] = before
        threading.Thread(target=watch, daemon=True).start()
        started, cpu = time.perf_counter(), time.process_time()
        await pilot.press("ctrl+a")
        while time.perf_counter() - started < float(sys.argv[2]):
            await pilot.pause(0.5)
            rows = app.screen.all_rows
            if len(rows) > 5000 and all(row.resume_cost is not None or row.problem_code for row in rows):
                break
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        rows = app.screen.all_rows
        costed = sum(row.resume_cost is not None for row in rows)
        await pilot.pause(2.0)
        marks["done"] = True
        print(json.dumps({"rows": len(rows), "costed": costed, "costed_before": costed_before,
                          "wall": wall, "cpu": cpu, "before": before,
                          "peak": max(marks["peak"], rss()), "after": rss()}))
asyncio.run(main())
"""


def run(store, report, *, quick: bool = False, log=print) -> None:
    section = report.section("tui_fill", "The resume-cost fill in the TUI (all 10,000 sessions)")
    folder, _ = largest_workspace(store)
    with two_programs(store, "reprise-bench-tui-fill-", log) as (scratch, ours_env, base_env):
        catalog = warm_every_workspace(ours_env, scratch, log)
        runs = {}
        for way, env in (("old", base_env), ("new", ours_env)):
            cache = scratch / f"fill-{way}"
            cache.mkdir()
            shutil.copy2(catalog, cache / catalog.name)   # warm, no cost computed yet
            log(f"  TUI fill, {way} way (minutes) ...")
            out = subprocess.run([sys.executable, "-c", TUI_FILL, folder, str(WATCH_S)],
                                 env={**env, "REPRISE_CACHE_DIR": str(cache)}, cwd=scratch, capture_output=True,
                                 text=True, check=True)
            runs[way] = json.loads(out.stdout.strip().splitlines()[-1])
            shutil.rmtree(cache, ignore_errors=True)
        section.data.update(runs)
        old, new = runs["old"], runs["new"]
        section.row(f"RSS growth in the {WATCH_S} s after pressing \"a\" (peak − before)",
                    report.mb(new["peak"] - new["before"]), report.mb(old["peak"] - old["before"]),
                    report.ratio(old["peak"] - old["before"], new["peak"] - new["before"]),
                    f"< {report.mb(GROWTH_TARGET)}", new["peak"] - new["before"] < GROWTH_TARGET)
        section.row(f"  RSS 2 s after the {WATCH_S} s − before", report.mb(new["after"] - new["before"]),
                    report.mb(old["after"] - old["before"]), "", "(information)")
        new_rate = (new["costed"] - new["costed_before"]) / new["cpu"]
        old_rate = (old["costed"] - old["costed_before"]) / old["cpu"]
        section.row(f"  rows costed in the {WATCH_S} s; per CPU second",
                    f"{new['costed'] - new['costed_before']:,}; {new_rate:.1f}",
                    f"{old['costed'] - old['costed_before']:,}; {old_rate:.1f}",
                    f"{new_rate / old_rate:.2f}× as many" if old_rate else "–", "(information)")
        section.note(f"Rows: new {new['rows']:,} ({new['costed']:,} costed at the end), old {old['rows']:,} "
                     f"({old['costed']:,}); CPU seconds new {new['cpu']:.1f}, old {old['cpu']:.1f}. "
                     f"Base commit {BASE_COMMIT} (before "
                     "this work), extracted with `git archive`. Headless 120x40, follow_disk on (a refresh each "
                     "second, as `reprise` runs); the catalog warm with no cost computed; RSS includes the "
                     "tokenizer (o200k_base, about 60-70 MB once loaded) and every row's listing fields.")
