"""Issue 27's listing and start rows, whole processes on its store (2,000 Claude Code + 500 Codex
sessions in 20 folders, bench/mixed_store.py): `reprise list --all --json` cold (a new
REPRISE_CACHE_DIR) and warm, one folder cold, and the TUI's first row cold and warm (wall time
from the fork to the first row on a pty), beside fast-resume 2.14.0 from PyPI (alternating with
ours) and the references measured in the same run: one stdlib `json.loads` pass over every line
(of the store, and of the folder's files), a stat of every file, `python -c pass` and
`import textual.app`.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import whole_process as wp
from .terminal import time_to_match

USES_STORE = False   # it builds issue 27's store, not the Fractal one
REPEATS = 5
COLD_ROUNDS = 3   # the cold listings: best of this many (each a new cache), as the json.loads pass is a best of 2
LIST_COLD_TARGET = 0.4      # CPU, of the json.loads pass
FOLDER_COLD_TARGET = 0.4    # CPU, of the json.loads pass over that folder's files
TUI_COLD_TARGET_S = 1.0
TUI_WARM_TARGET_S = 0.3
LIST_WARM_TARGET_S = 0.2
DEADLINE_S = 180.0
# A row of Reprise's session table: its mark and agent letter ("✓C", "✗X" …) or its age cell ("1y").
OUR_ROW = re.compile(r"[✓✗‖↻…!·★][CXFcxf] | \d{1,2}(?:y|mo|w|d|h|m|s) ".encode())
# The app's own frame (Textual's): its footer's "F1 Keys", which the first frame drawn before Textual
# is imported (tui/first_frame.py) leaves blank.
APP_FRAME = re.compile(rb"F1 +Keys")
# A row of fast-resume's table: its Directory cell (the store's folders are /home/dev/project-NN).
THEIR_ROW = re.compile(rb"/home/dev/project-\d\d")


def paint(argv: list[str], pattern: re.Pattern[bytes], env: dict[str, str], cwd: Path) -> float:
    shown = time_to_match(argv, pattern, size=wp.TUI_SIZE, env=env, cwd=str(cwd), deadline=DEADLINE_S)
    if shown.seconds is None:
        raise RuntimeError(f"no row within {DEADLINE_S:.0f} s ({shown.written:,} bytes written): {argv}")
    return shown.seconds


def run(store, report, *, quick: bool = False, log: Callable[[str], None] = print) -> None:
    wp.set_log(log)
    mixed = wp.store(quick)
    log("  store: " + mixed.describe())
    repeats = 3 if quick else REPEATS
    rounds = 1 if quick else COLD_ROUNDS
    folder, sessions = mixed.largest_folder()
    folder_files = tuple(mixed.folder_files(folder))
    section = report.section("cold_start", "Issue 27: listing and first start, cold and warm (whole processes)")
    scratch = Path(tempfile.mkdtemp(prefix="reprise-bench-cold-start-"))
    try:
        log("  references: json.loads passes, stat of every file, python -c pass, import textual.app ...")
        json_pass, folder_pass = wp.json_pass(quick), wp.json_pass(quick, folder_files)
        stat, bare, textual = wp.stat_pass(quick), wp.bare_python(repeats), wp.import_textual(repeats)
        ours = wp.Reprise(mixed, scratch / "reprise")
        fr = wp.fast_resume(mixed, scratch / "fast-resume", log)
        section.row("`json.loads` of every line (reference)", f"CPU {report.seconds(json_pass.cpu)}",
                    f"wall {report.seconds(json_pass.wall)}; {json_pass.bytes / 1e9:.2f} GB", target="(reference)")
        section.row("stat of every file (reference)", report.seconds(stat.wall), f"{stat.lines:,} files",
                    target="(reference)")
        section.row("`python -c pass` / `python -c 'import textual.app'` (references)",
                    f"{report.seconds(bare.wall)} / {report.seconds(textual.wall)}", f"best of {repeats}",
                    target="(reference)")
        loads: list[str] = []

        loads.append(f"{wp.load():.2f}")
        log(f"  list --all, cold, best of {rounds} (load {loads[-1]}) ...")
        colds = [ours.run(list_env := ours.fresh_cache(), "list", "--all", "--json") for _ in range(rounds)]
        cold = min(colds, key=lambda each: each.cpu)
        section.row("list all, cold: CPU, the process and its children", report.seconds(cold.cpu),
                    report.seconds(json_pass.cpu), wp.times(cold.cpu, json_pass.cpu),
                    f"≤ {LIST_COLD_TARGET}× the json.loads pass", cold.cpu <= LIST_COLD_TARGET * json_pass.cpu)
        section.row("  the same: wall; peak RSS of the largest process",
                    f"{report.seconds(cold.wall)}; {report.mb(cold.max_rss)}", report.seconds(json_pass.wall),
                    wp.times(cold.wall, json_pass.wall), "(information)")
        if cold.outlived_cpu:
            section.note(f"Of the cold listing's CPU, {report.seconds(cold.outlived_cpu)} was in processes it started "
                         "that outlived it (multiprocessing's resource tracker, a forkserver and its workers), waited "
                         "for and counted.")
        fr_env: dict[str, str] | None = None
        if isinstance(fr, wp.FastResume):
            loads.append(f"{wp.load():.2f}")
            log(f"  fast-resume --json --all, cold (load {loads[-1]}) ...")
            fr_env = fr.fresh_cache("list")
            theirs = fr.run(fr_env, "--json", "--all")
            section.row("  fast-resume, every session, its first run (index built): CPU; wall",
                        f"{report.seconds(theirs.cpu)}; {report.seconds(theirs.wall)}",
                        f"ours {report.seconds(cold.cpu)}; {report.seconds(cold.wall)}",
                        f"ours {cold.cpu / theirs.cpu:.1f}× the CPU", "(peer)")

        loads.append(f"{wp.load():.2f}")
        log(f"  list --workspace {folder}, cold, best of {rounds} (load {loads[-1]}) ...")
        ones = [ours.run(ours.fresh_cache(), "list", "--workspace", folder, "--json") for _ in range(rounds)]
        one = min(ones, key=lambda each: each.cpu)
        folder_bytes = sum(path.stat().st_size for path in folder_files)
        section.row(f"one folder, cold ({folder}: {sessions:,} sessions, {len(folder_files):,} files "
                    f"{folder_bytes / 1e6:,.0f} MB): CPU", report.seconds(one.cpu),
                    f"that folder's json.loads {report.seconds(folder_pass.cpu)}", wp.times(one.cpu, folder_pass.cpu),
                    f"≤ {FOLDER_COLD_TARGET}× that folder's pass", one.cpu <= FOLDER_COLD_TARGET * folder_pass.cpu)
        section.row("  the same: wall; its CPU against the whole store's cold listing",
                    f"{report.seconds(one.wall)}", f"all {report.seconds(cold.cpu)} CPU",
                    f"{one.cpu / cold.cpu:.0%} of it", f"(its files are {len(folder_files) / len(mixed.files()):.0%})")

        tui = ours.argv("--workspace", folder)
        loads.append(f"{wp.load():.2f}")
        log(f"  TUI first row, cold (load {loads[-1]}) ...")
        tui_cold = paint(tui, OUR_ROW, ours.fresh_cache(), ours.scratch)
        fr_cold: float | None = None
        if isinstance(fr, wp.FastResume):
            loads.append(f"{wp.load():.2f}")
            log(f"  fast-resume TUI first row, cold (load {loads[-1]}) ...")
            fr_cold = paint(fr.argv("--no-images"), THEIR_ROW, fr.fresh_cache("tui"), fr.scratch)
        section.row(f"TUI first row, cold ({folder}; a {wp.TUI_SIZE[0]}x{wp.TUI_SIZE[1]} pty)",
                    report.seconds(tui_cold), f"fast-resume {report.seconds(fr_cold)}" if fr_cold else "",
                    f"{tui_cold / fr_cold:.1f}× as long" if fr_cold else "", f"≤ {report.seconds(TUI_COLD_TARGET_S)}",
                    tui_cold <= TUI_COLD_TARGET_S)

        log(f"  warm: TUI first row, list --all (best of {repeats}, alternating with fast-resume) ...")
        loads.append(f"{wp.load():.2f}")
        warm_paints, fr_paints, warm_lists, fr_lists = [], [], [], []
        paint(tui, OUR_ROW, list_env, ours.scratch)   # uncounted warm-ups
        ours.run(list_env, "list", "--all", "--json")
        if fr_env is not None and isinstance(fr, wp.FastResume):
            paint(fr.argv("--no-images"), THEIR_ROW, fr_env, fr.scratch)
            fr.run(fr_env, "--json", "--all")
        app_frames, picks = [], []
        picker = ["sh", "-c", 'exec "$@" > /dev/null', "sh", *ours.argv("--workspace", folder, "pick")]
        for _ in range(repeats):
            warm_paints.append(paint(tui, OUR_ROW, list_env, ours.scratch))
            app_frames.append(paint(tui, APP_FRAME, list_env, ours.scratch))
            picks.append(paint(picker, OUR_ROW, list_env, ours.scratch))
            warm_lists.append(ours.run(list_env, "list", "--all", "--json"))
            if fr_env is not None and isinstance(fr, wp.FastResume):
                fr_paints.append(paint(fr.argv("--no-images"), THEIR_ROW, fr_env, fr.scratch))
                fr_lists.append(fr.run(fr_env, "--json", "--all"))
        loads.append(f"{wp.load():.2f}")
        best_paint = min(warm_paints)
        section.row(f"TUI first row, warm (best of {repeats})", report.seconds(best_paint),
                    f"fast-resume {report.seconds(min(fr_paints))}" if fr_paints else "",
                    f"{best_paint / min(fr_paints):.1f}× as long" if fr_paints else "",
                    f"≤ {report.seconds(TUI_WARM_TARGET_S)}", best_paint <= TUI_WARM_TARGET_S)
        app_frame = min(app_frames)
        section.row(f"  the app's own first frame (Textual's, which replaces it; best of {repeats})",
                    report.seconds(app_frame), f"`import textual.app` {report.seconds(textual.wall)}",
                    wp.times(app_frame, textual.wall), "(information)")
        section.row("  the same beside `import textual.app`", report.seconds(best_paint),
                    f"`import textual.app` {report.seconds(textual.wall)}", wp.times(best_paint, textual.wall),
                    "(reference)")
        best_pick = min(picks)
        section.row(f"the picker's first row, warm: `id=$(reprise pick)` (best of {repeats})",
                    report.seconds(best_pick),
                    f"the browse screen's {report.seconds(best_paint)}", wp.times(best_pick, best_paint),
                    f"≤ {report.seconds(TUI_WARM_TARGET_S)}", best_pick <= TUI_WARM_TARGET_S)
        best_list = min(warm_lists, key=lambda r: r.wall)
        section.row(f"list all, warm, whole process (best of {repeats})", report.seconds(best_list.wall),
                    f"`python -c pass` {report.seconds(bare.wall)}", f"{best_list.wall / bare.wall:.0f}× as long",
                    f"≤ {report.seconds(LIST_WARM_TARGET_S)}", best_list.wall <= LIST_WARM_TARGET_S)
        section.row("  the same: CPU; peak RSS", f"{report.seconds(best_list.cpu)}; {report.mb(best_list.max_rss)}",
                    f"stat of every file {report.seconds(stat.wall)}", "", "(information)")
        if fr_lists:
            theirs_list = min(fr_lists, key=lambda r: r.wall)
            section.row("  fast-resume `fr --json --all`, warm (its refresh, then the index)",
                        report.seconds(theirs_list.wall), f"ours {report.seconds(best_list.wall)}",
                        f"ours {best_list.wall / theirs_list.wall:.1f}× as long", "(peer)")
        section.note(f"Store: {mixed.describe()}. Listing: `reprise list --all --json` and `reprise list --workspace "
                     f"{folder} --json` (stdout a pipe). " + wp.MEASURES)
        section.note(f"Cold listings: the best of {rounds}, each with a new cache (the machine's CPU time varies "
                     "from run to run); the CPU of each: all " + ", ".join(report.seconds(each.cpu) for each in colds)
                     + "; one folder " + ", ".join(report.seconds(each.cpu) for each in ones) + ".")
        section.note(f"TUI: `reprise --workspace {folder}` and `fr --no-images` on a {wp.TUI_SIZE[0]}x{wp.TUI_SIZE[1]} "
                     "pty (bench/terminal.py), timed from the fork until a row is on screen (ours: a row's mark and "
                     "agent letter or its age cell, in the first frame drawn from the stored rows before Textual is "
                     "imported; the app's own frame: its footer's F1 Keys; fast-resume's: a row's folder), then ended "
                     "by its pid. Cold: a new cache folder (fast-resume: a new XDG_CACHE_HOME). Warm: the cache of "
                     "the last cold `list --all`, "
                     "one uncounted warm-up. fast-resume shows every folder, ours the one folder. The picker: "
                     "`reprise --workspace … pick` with stdout a file, as `id=$(reprise pick)` runs it (its frame "
                     "goes to the terminal).")
        wp.close_section(section, loads, fr)
        section.data.update(json_pass=json_pass, folder_pass=folder_pass, cold=cold, one=one, tui_cold=tui_cold)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
