"""Listing benchmark: Reprise's in-process listing of every session against Fractal's own
`list_sessions`, on the scale store.

Measured (Reprise, with its catalog in a fresh temporary cache directory):
- cold: no catalog file yet, so every session file is read, parsed and validated once; best
  of 3 like the baseline, serial (the library default), and once with `parallel_scan=True`
  (as the `reprise` command runs it);
- warm: the catalog is up to date (best of 5, a new Service each time, so the SQLite
  connection is opened each time as in a fresh `reprise list --all`; also the same Service
  listing again, as the TUI does on refresh);
- warm after 100 changed files: 100 files rewritten in place the way Fractal writes a turn,
  then one listing (the files are restored byte for byte, mtime included, afterwards);
- one workspace warm (the largest), against list_sessions of that workspace alone;
- warm peak memory, in a fresh subprocess: the peak RSS growth over the listing (VmHWM after
  minus VmRSS before: every allocation, C and SQLite included) and the tracemalloc peak
  (Python objects only), each in its own process. The target applies to the RSS growth.

The baseline runs in the side venv (.fractal-venv, or $REPRISE_FRACTAL_PYTHON) through
bench/fractal_list_baseline.py; without it that script uses its re-implementation and the
table says so. Both sides run with the store in the OS page cache (the files were just
generated or read), so "cold" means a cold catalog, not a cold disk.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
WARM_REPEATS = 5
COLD_REPEATS = 3   # as many as the baseline's runs
CHANGED_FILES = 100
WARM_TARGET_S = 0.100
WARM_TARGET_RATIO = 50
MEMORY_TARGET_MB = 150


def fractal_python() -> tuple[str, bool]:
    """The interpreter of the side venv, and whether it exists."""
    configured = os.environ.get("REPRISE_FRACTAL_PYTHON")
    candidate = Path(configured) if configured else PROJECT / ".fractal-venv" / "bin" / "python"
    if candidate.exists():
        return str(candidate), True
    return sys.executable, False


def run_baseline(store, *, repeat: int, verify: int, workspaces: list[str] | None = None) -> dict:
    python, _ = fractal_python()
    env = dict(os.environ, FRACTAL_STATE_HOME=str(store.root), LITELLM_LOCAL_MODEL_COST_MAP="True")
    env.pop("PYTHONPATH", None)
    command = [python, str(PROJECT / "bench" / "fractal_list_baseline.py"), "--root", str(store.root),
               "--repeat", str(repeat), "--verify", str(verify), *(workspaces or store.workspace_paths)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        raise RuntimeError(f"the baseline failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _service(root: Path, cache: Path, workspace: str, **options):
    from reprise.core.config import LoadedSettings, Settings
    from reprise.core.service import Service

    loaded = LoadedSettings(Settings(), config_path=cache / "no-config.toml", state_root=root)
    return Service(loaded, workspace=Path(workspace), cache=cache, **options)


def _list_all(root: Path, cache: Path, workspace: str, **options):
    started = time.perf_counter()
    listing = _service(root, cache, workspace, **options).list_sessions(all_workspaces=True)
    return time.perf_counter() - started, listing


def _change_turn(data: bytes) -> bytes:
    """The file after Fractal appended and finished one more turn (same byte format)."""
    state = json.loads(data)
    n = len(state["summary"]["turns"]) + 1
    turn_id = f"turn-{n:032x}"
    message = f"benchmark change {n}: rerun the listing"
    now = "2025-09-02T10:00:00.123456+00:00"
    state["summary"]["turns"].append({"turn_id": turn_id, "user": {"message": message}, "agent": {
        "status": "succeeded", "response": "done", "files_read_count": 0, "files_changed_count": 0,
        "commands_run_count": 0, "error": None, "usage": None}})
    state["history"].append({"turn_id": turn_id, "user_message": message, "status": "succeeded", "files_read": [],
                             "files_modified": [], "commands_run": [], "trace": None, "error": None,
                             "created_at": now, "updated_at": now})
    state["history"] = state["history"][-20:]
    return (json.dumps(state, indent=2) + "\n").encode("ascii")


def _pick_files(store, count: int) -> list[Path]:
    files = store.session_files()
    step = max(1, len(files) // count)
    return files[::step][:count]


def proc_status(field: str) -> int:
    """A memory figure of this process from /proc/self/status (VmRSS, VmHWM...), in bytes; 0 if absent."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def measure_memory(root: str, cache: str, workspace: str, mode: str) -> dict:
    """In this (fresh) process: one warm listing of all workspaces, and what it cost in memory."""
    import resource
    import tracemalloc

    from reprise.core import catalog, config, service  # noqa: F401  (imports are not the listing's)
    from reprise.core.sources.fractal import store  # noqa: F401

    before_rss = proc_status("VmRSS") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if mode == "tracemalloc":
        tracemalloc.start()
    elapsed, listing = _list_all(Path(root), Path(cache), workspace)
    result = {"mode": mode, "rows": listing.total, "seconds": elapsed}
    if mode == "tracemalloc":
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        result["tracemalloc_peak"] = peak
    peak_rss = proc_status("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result.update(rss_before=before_rss, peak_rss=peak_rss, rss_delta=peak_rss - before_rss)
    return result


def _memory_subprocess(store, cache: Path, mode: str) -> dict:
    code = ("import json, sys; from bench.listing import measure_memory; "
            "print(json.dumps(measure_memory(*sys.argv[1:])))")
    done = subprocess.run([sys.executable, "-c", code, str(store.root), str(cache), store.workspace_paths[0], mode],
                          capture_output=True, text=True, cwd=PROJECT)
    if done.returncode != 0:
        raise RuntimeError(f"the memory probe failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _profile(call, top: int = 12) -> str:
    """cProfile of one call, the top functions by own time, paths shortened."""
    import sysconfig

    profiler = cProfile.Profile()
    profiler.enable()
    call()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    header = next((line.strip() for line in lines if "function calls" in line), "")
    replacements = [(str(PROJECT) + "/", ""), (sysconfig.get_paths()["stdlib"], "<stdlib>"),
                    (sysconfig.get_paths()["purelib"], "<site-packages>")]
    trimmed = []
    for line in lines[start:]:
        for old, new in replacements:
            line = line.replace(old, new)
        trimmed.append(line)
    return header + "\n" + "\n".join(trimmed)


def _profile_cold(store, workspace_key: str) -> str:
    from reprise.core.catalog import Catalog
    from reprise.core.sources.fractal.listing import FractalListing
    from reprise.core.sources.fractal.store import Store

    with tempfile.TemporaryDirectory(prefix="reprise-bench-prof-") as cache:
        catalog = Catalog([FractalListing(Store(store.root))], Path(cache))
        text = _profile(lambda: catalog.refresh([workspace_key]))
        catalog.close()
    return f"Cold listing of one workspace ({store.per_workspace[workspace_key]} files): {text}"


def _profile_warm(store, cache: Path) -> str:
    _list_all(store.root, cache, store.workspace_paths[0])
    text = _profile(lambda: _list_all(store.root, cache, store.workspace_paths[0]))
    return f"Warm listing of all {store.sessions:,} sessions: {text}"


def run(store, report, *, quick: bool = False, log=print) -> None:
    section = report.section("listing", "Listing all sessions")
    python, real = fractal_python()
    repeat = 1 if quick else 3

    biggest = max(store.per_workspace, key=store.per_workspace.get)
    biggest_path = next(path for path, key in store.workspaces if key == biggest)

    log("  baseline: Fractal's list_sessions over every workspace ...")
    baseline = run_baseline(store, repeat=repeat, verify=20 if quick else 100)
    log(f"    best {baseline['best_s']:.2f} s of {[round(r, 2) for r in baseline['runs_s']]} "
        f"({baseline['listed']} listed of {baseline['files_on_disk']})")
    log("  baseline: one workspace ...")
    baseline_one = run_baseline(store, repeat=repeat, verify=0, workspaces=[biggest_path])

    cache = Path(tempfile.mkdtemp(prefix="reprise-bench-cache-"))
    try:
        root = store.root
        ws0 = store.workspace_paths[0]
        log(f"  reprise: cold (best of {COLD_REPEATS}, a new empty cache each time) ...")
        cold_runs = []
        for _ in range(COLD_REPEATS - 1):
            with tempfile.TemporaryDirectory(prefix="reprise-bench-cache-") as other:
                cold_runs.append(_list_all(root, Path(other), ws0)[0])
        seconds, listing = _list_all(root, cache, ws0)   # the last one leaves the catalog for the warm runs
        cold_runs.append(seconds)
        cold_s = min(cold_runs)
        problems = sum(1 for row in listing.rows if row.problem_code)
        _service(root, cache, ws0).load_details(listing.rows)
        warnings_n = sum(1 for row in listing.rows if row.fields.warning)
        parallel_s = None
        with tempfile.TemporaryDirectory(prefix="reprise-bench-cache-") as other:
            log("  reprise: cold with parallel_scan=True (as the reprise command) ...")
            try:
                parallel_s, _ = _list_all(root, Path(other), ws0, parallel_scan=True)
            except TypeError:   # a core without the option
                log("    (this core has no parallel_scan option)")

        log("  reprise: warm ...")
        warm_runs = [_list_all(root, cache, ws0) for _ in range(WARM_REPEATS)]
        warm_s = min(t for t, _ in warm_runs)
        warm_rows = warm_runs[-1][1].total

        service = _service(root, cache, ws0)
        same_runs = []
        for _ in range(WARM_REPEATS):
            started = time.perf_counter()
            service.list_sessions(all_workspaces=True)
            same_runs.append(time.perf_counter() - started)
        same_s = min(same_runs)

        one_runs = []
        for _ in range(WARM_REPEATS):
            service = _service(root, cache, biggest_path)
            started = time.perf_counter()
            service.list_sessions()
            one_runs.append(time.perf_counter() - started)
        one_s = min(one_runs)

        log("  reprise: warm peak memory (fresh subprocesses) ...")
        rss = _memory_subprocess(store, cache, "rss")
        traced = _memory_subprocess(store, cache, "tracemalloc")

        log(f"  reprise: warm after {CHANGED_FILES} changed files ...")
        picked = _pick_files(store, CHANGED_FILES)
        originals = {path: (path.read_bytes(), os.stat(path)) for path in picked}
        try:
            for path, (data, _) in originals.items():
                with open(path, "wb") as handle:   # in place, as Fractal writes
                    handle.write(_change_turn(data))
            changed_s, changed = _list_all(root, cache, ws0)
            by_path = {row.path: row for row in changed.rows}
            seen = sum(1 for path, (data, _) in originals.items()
                       if by_path[str(path)].turns == len(json.loads(data)["summary"]["turns"]) + 1)
        finally:
            for path, (data, info) in originals.items():
                with open(path, "wb") as handle:
                    handle.write(data)
                os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    finally:
        shutil.rmtree(cache, ignore_errors=True)

    base_s = baseline["best_s"]
    base_label = baseline["label"] + ("" if real else " — the side venv is absent, so a re-implementation")
    n = store.sessions
    fmt, ratio = report.seconds, report.ratio

    section.row(f"cold (no catalog), all {n:,} (best of {COLD_REPEATS})", fmt(cold_s), fmt(base_s),
                ratio(base_s, cold_s), "no slower than baseline", cold_s <= base_s)
    if parallel_s is not None:
        section.row(f"cold, parallel_scan=True (as the `reprise` command; {os.cpu_count()} cores)", fmt(parallel_s),
                    fmt(base_s), ratio(base_s, parallel_s), "", None)
    warm_missed = not (warm_s < WARM_TARGET_S and base_s / warm_s >= WARM_TARGET_RATIO)
    section.row(f"warm, all {n:,} (best of {WARM_REPEATS})", fmt(warm_s), fmt(base_s), ratio(base_s, warm_s),
                f"< {WARM_TARGET_S * 1000:.0f} ms and ≥ {WARM_TARGET_RATIO}× faster", not warm_missed)
    section.row(f"warm, all {n:,}, same Service again (as the TUI refreshes)", fmt(same_s), fmt(base_s),
                ratio(base_s, same_s), "", None)
    section.row(f"warm after {CHANGED_FILES} files changed (1 run)", fmt(changed_s), fmt(base_s),
                ratio(base_s, changed_s), "", None)
    section.row(f"warm, one workspace ({store.per_workspace[biggest]} sessions, best of {WARM_REPEATS})",
                fmt(one_s), fmt(baseline_one["best_s"]), ratio(baseline_one["best_s"], one_s), "", None)
    section.row("warm peak memory: RSS growth during the listing", report.mb(rss["rss_delta"]), "", "",
                f"< {MEMORY_TARGET_MB} MB", rss["rss_delta"] < MEMORY_TARGET_MB * 2**20)
    section.row("warm peak memory: tracemalloc peak (Python objects only)", report.mb(traced["tracemalloc_peak"]),
                "", "", "(information)", None)
    section.row("warm peak memory: whole process peak RSS (interpreter and imports included)",
                report.mb(rss["peak_rss"]), "", "", "(information)", None)

    section.note(f"Baseline: {base_label}, Python {baseline['python']}, best of {len(baseline['runs_s'])} "
                 f"(runs: {', '.join(fmt(r) for r in baseline['runs_s'])}); importing it took "
                 f"{baseline['import_s']:.1f} s, not counted.")
    ok_listed = baseline["listed"] == baseline["files_on_disk"] == n
    section.note(f"Fractal listed {baseline['listed']:,} of the {baseline['files_on_disk']:,} files on disk"
                 f"{'' if ok_listed else ' — NOT ALL: some generated files fail its validation'}; "
                 f"{baseline['verified'] - baseline['verify_mismatch_count']} of {baseline['verified']} sampled "
                 f"files loaded through FractalSession.load and re-dumped to identical bytes.")
    section.note(f"Reprise listed {listing.total:,} rows cold ({problems} problem files, {warnings_n} with "
                 f"warnings) and {warm_rows:,} warm; after the change {seen} of {CHANGED_FILES} rewritten files "
                 "showed their new turn count.")
    section.note("Reprise figures are `Service.list_sessions(all_workspaces=True)` (catalog refresh + sort) "
                 "with a new Service each time, serial unless the row says otherwise (the cold target is checked "
                 "on the serial figure); ratio = baseline ÷ Reprise (above 1: Reprise is faster). "
                 "Both sides read the store from the OS page cache (caches are not dropped), so cold means "
                 "no catalog yet, not a cold disk.")
    section.note(f"Memory, each in a fresh process after the imports: RSS before {report.mb(rss['rss_before'])}, "
                 f"peak {report.mb(rss['peak_rss'])}; the {MEMORY_TARGET_MB} MB target is checked against the "
                 "RSS growth (it counts SQLite's and C extensions' memory, which tracemalloc does not see).")
    section.data.update(baseline=baseline, baseline_one=baseline_one, cold_runs=cold_runs, cold_parallel_s=parallel_s,
                        warm_runs=[t for t, _ in warm_runs], one_runs=one_runs, same_runs=same_runs,
                        changed_s=changed_s, memory_rss=rss, memory_tracemalloc=traced)

    profiles = []
    if cold_s > base_s:
        log("  the cold target was missed: profiling a cold listing of one workspace ...")
        smallest = min(store.per_workspace, key=store.per_workspace.get)
        profiles.append(_profile_cold(store, smallest))
    if warm_missed:
        log("  the warm target was missed: profiling a warm listing ...")
        with tempfile.TemporaryDirectory(prefix="reprise-bench-cache-") as again:
            _list_all(store.root, Path(again), store.workspace_paths[0])
            profiles.append(_profile_warm(store, Path(again)))
    section.profile = "\n\n".join(profiles) or None
