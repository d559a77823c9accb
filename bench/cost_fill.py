"""The background fill of resume costs over all 10,000 sessions of the scale store, the way the
TUI runs it (a thread of its process), against the base commit's way: memory (RSS growth), wall
and CPU time, and how soon the rows on screen have their figure."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from .startup import BASE_COMMIT, largest_workspace, two_programs, warm_every_workspace

FILL_GROWTH_TARGET = 150 * 2**20
ON_SCREEN = 20

FILL = r"""
import json, resource, sys, threading, time
from reprise.core.service import Service
new_way = sys.argv[2] == "new"
def rss():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * 4096
service = Service.from_environment(workspace=sys.argv[1])
rows = service.list_sessions(all_workspaces=True).rows
service.load_details(rows)
limit = int(sys.argv[3])
rows = rows[:limit] if limit else rows
view = sorted(rows, key=lambda row: -row.size)      # the list on screen sorted by size
on_screen = view[:int(sys.argv[4])]
before, started, cpu = rss(), time.perf_counter(), time.process_time()
marks = {"peak": before, "on_screen_s": None, "samples": []}
def watch():
    while not marks.get("done"):
        marks["peak"] = max(marks["peak"], rss())
        if marks["on_screen_s"] is None and all(row.resume_cost is not None for row in on_screen):
            marks["on_screen_s"] = time.perf_counter() - started
        time.sleep(0.05)
heard = []
def fill():
    if new_way:
        service.fill_resume_costs(rows, first=on_screen, progress=heard.append)
    else:
        service.fill_resume_costs(rows)
watcher, worker = threading.Thread(target=watch), threading.Thread(target=fill)
watcher.start(); worker.start(); worker.join()
wall, cpu = time.perf_counter() - started, time.process_time() - cpu
marks["done"] = True; watcher.join()
if marks["on_screen_s"] is None and all(row.resume_cost is not None for row in on_screen):
    marks["on_screen_s"] = wall
print(json.dumps({"rows": len(rows), "wall": wall, "cpu": cpu, "before": before, "after": rss(),
                  "peak": max(marks["peak"], rss()), "on_screen_s": marks["on_screen_s"],
                  "costed": sum(row.resume_cost is not None for row in rows),
                  "progress": [[p.done, p.total] for p in heard[:1] + heard[-1:]],
                  "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def fill_run(way: str, env: dict[str, str], catalog: Path, scratch: Path, folder: str, limit: int) -> dict:
    """One fill in a fresh process, on a fresh copy of the warm catalog (no cost computed yet)."""
    cache = scratch / f"fill-{way}"
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    shutil.copy2(catalog, cache / catalog.name)
    out = subprocess.run([sys.executable, "-c", FILL, folder, way, str(limit), str(ON_SCREEN)],
                         env={**env, "REPRISE_CACHE_DIR": str(cache)}, capture_output=True, text=True, check=True)
    shutil.rmtree(cache, ignore_errors=True)
    return json.loads(out.stdout)



def run(store, report, *, quick: bool = False, log=print) -> None:
    section = report.section("cost_fill", "The background resume-cost fill (10,000 sessions)")
    folder, _ = largest_workspace(store)
    with two_programs(store, "reprise-bench-fill-", log) as (scratch, ours_env, base_env):
        limit = 1_000 if quick else 0
        catalog = warm_every_workspace(ours_env, scratch, log)
        fills = {}
        for way, env in (("old", base_env), ("new", ours_env)):
            log(f"  resume-cost fill, {way} way ({'1,000' if quick else 'all'} sessions; minutes) ...")
            fills[way] = fill_run(way, env, catalog, scratch, folder, limit)
        section.data["fill"] = fills
        old, new = fills["old"], fills["new"]
        section.row(f"resume-cost fill of {new['rows']:,} sessions in a thread: RSS growth (peak − before)",
                    report.mb(new["peak"] - new["before"]), report.mb(old["peak"] - old["before"]),
                    report.ratio(old["peak"] - old["before"], new["peak"] - new["before"]),
                    f"< {report.mb(FILL_GROWTH_TARGET)}", new["peak"] - new["before"] < FILL_GROWTH_TARGET)
        section.row("  RSS after the fill − before (kept until exit)", report.mb(new["after"] - new["before"]),
                    report.mb(old["after"] - old["before"]), "", "(information)")
        section.row("  wall time / CPU time of the fill",
                    f"{report.seconds(new['wall'])} / {report.seconds(new['cpu'])}",
                    f"{report.seconds(old['wall'])} / {report.seconds(old['cpu'])}", "", "(information)")
        section.row(f"  until the {ON_SCREEN} rows on screen (the list sorted by size) have their cost",
                    report.seconds(new["on_screen_s"]), report.seconds(old["on_screen_s"]),
                    report.ratio(old["on_screen_s"], new["on_screen_s"]) + " sooner", "first", None)
        section.note(f"Base commit: {BASE_COMMIT} (before this work), extracted with `git archive`. In the service "
                     "alone the fill was already bounded (one session read at a time); what grew in the TUI was the "
                     "refresh each second re-reading every row while the costs changed (the tui_fill section). "
                     "The two ways run one after the other on a shared machine: compare CPU times, not wall times.")
        section.note(
            f"Fill: `Service.fill_resume_costs` in a thread of a fresh process (as the TUI's worker), on a copy of "
            f"the warm catalog with no cost computed, over every row of all workspaces; the new way is given the "
            f"{ON_SCREEN} largest sessions as the rows on screen (the list sorted by size) and reports progress "
            f"(first and last heard: {new['progress']}); the old way is the base commit's, in listing order. RSS "
            f"sampled every 50 ms (/proc/self/statm); it includes the tokenizer (the o200k_base encoding, about "
            f"60-70 MB once loaded). Rows costed: new {new['costed']:,}, old {old['costed']:,}.")
