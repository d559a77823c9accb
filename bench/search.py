"""Issue 27's search rows, whole processes on its store (2,000 Claude Code + 500 Codex sessions in 20
folders, bench/mixed_store.py): the first search ever (a new REPRISE_CACHE_DIR: wall, CPU of the
process and its children, the first byte on stdout, the largest process's peak RSS; its answer alone
with `--no-index`, also after a listing as in the TUI; and as it runs by default, the index built
after the answer), the index's
bytes on disk against the store's, and a warm search (best of N), each beside fast-resume 2.14.0
from PyPI run in alternating pairs with ours and beside the references measured in the same run:
one stdlib `json.loads` pass over every line of the store, the raw bytes of every file, and
`python -c pass`.

Two words from the store's own text: a rare identifier (RARE, in a few per cent of the files) and
a common word (COMMON, in most files). Each is searched
with `reprise search WORD --all --limit 50` (stdout a pipe) and `fr --json --limit 50 WORD`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import whole_process as wp

USES_STORE = False   # it builds issue 27's store, not the Fractal one
WARM_REPEATS = 5
ANSWER_ROUNDS = 3   # a first search's answer (`--no-index`): best of this many, each with a new cache
FIRST_TARGET = 0.5      # of the json.loads pass
FIRST_HIT_TARGET_S = 1.0
RSS_TARGET = 150 * 2**20
INDEX_TARGET = 0.05     # of the store's bytes
WARM_TARGET_S = 0.2


def files_with(files: list[Path], word: str) -> int:
    """How many files hold `word`'s bytes anywhere (a raw count, not the index's token rules)."""
    needle = word.encode()
    return sum(needle in path.read_bytes() for path in files)


def last_line(run: wp.Run) -> str:
    lines = run.stdout.decode(errors="replace").strip().splitlines()
    return lines[-1].strip() if lines else "(nothing printed)"


def fr_total(run: wp.Run) -> str:
    import json

    try:
        return f"{json.loads(run.stdout)['meta']['total']} sessions"
    except (ValueError, KeyError, TypeError):
        return "(no JSON)"


def run(store, report, *, quick: bool = False, log: Callable[[str], None] = print) -> None:
    wp.set_log(log)
    mixed = wp.store(quick)
    log("  store: " + mixed.describe())
    files = mixed.files()
    store_bytes = sum(path.stat().st_size for path in files)
    section = report.section("search", "Issue 27: search, first ever and warm (whole processes)")
    repeats = 3 if quick else WARM_REPEATS
    rounds = 1 if quick else ANSWER_ROUNDS
    spreads: list[str] = []
    scratch = Path(tempfile.mkdtemp(prefix="reprise-bench-search-"))
    try:
        log("  references: json.loads pass, raw bytes, python -c pass ...")
        json_pass, raw, bare = wp.json_pass(quick), wp.raw_pass(quick), wp.bare_python(repeats)
        counts = {word: files_with(files, word) for word in (wp.RARE, wp.COMMON)}
        ours = wp.Reprise(mixed, scratch / "reprise")
        fr = wp.fast_resume(mixed, scratch / "fast-resume", log)
        section.row("`json.loads` of every line (reference, one serial pass)",
                    f"{report.seconds(json_pass.wall)}; CPU {report.seconds(json_pass.cpu)}",
                    f"{json_pass.lines:,} lines, {json_pass.bytes / 1e9:.2f} GB", target="(reference)")
        section.row("raw bytes of every file (reference, 1 MB reads)",
                    f"{report.seconds(raw.wall)}; CPU {report.seconds(raw.cpu)}",
                    f"{len(files):,} files, {raw.bytes / 1e9:.2f} GB", target="(reference)")

        loads: list[str] = []
        warm_envs: dict[str, dict[str, str]] = {}
        fr_envs: dict[str, dict[str, str]] = {}
        for word in (wp.RARE, wp.COMMON):
            env = ours.fresh_cache()
            loads.append(f"{wp.load():.2f}")
            log(f"  first search ever, {word!r}: reprise (load {loads[-1]}) ...")
            cold = ours.run(env, "search", word, "--all", "--limit", "50")
            warm_envs[word] = env
            cache_after = wp.folder_bytes(Path(env["REPRISE_CACHE_DIR"]))[0]
            label = f"first search ever, cold cache, {'rare' if word == wp.RARE else 'common'} {word!r}"
            answers = [ours.run(ours.fresh_cache(), "search", word, "--all", "--limit", "50", "--no-index")
                       for _ in range(rounds)]
            answer = min(answers, key=lambda each: each.cpu)
            spreads.append(f"{word!r} " + ", ".join(report.seconds(each.cpu) for each in answers))
            section.row(f"{label}: its answer, wall (`--no-index`: the process ends with its answer)",
                        report.seconds(answer.wall), report.seconds(json_pass.wall),
                        wp.times(answer.wall, json_pass.wall), f"≤ {FIRST_TARGET}× the json.loads pass",
                        answer.wall <= FIRST_TARGET * json_pass.wall)
            section.row("  the same: CPU, the process and its children", report.seconds(answer.cpu),
                        report.seconds(json_pass.cpu), wp.times(answer.cpu, json_pass.cpu),
                        f"≤ {FIRST_TARGET}× the json.loads pass", answer.cpu <= FIRST_TARGET * json_pass.cpu)
            listed_env = ours.fresh_cache()
            ours.run(listed_env, "list", "--all", "--json")
            listed = ours.run(listed_env, "search", word, "--all", "--limit", "50", "--no-index")
            section.row("  the same with the sessions listed before (the TUI's case: the catalog warm, no index): "
                        "wall; first byte on stdout", f"{report.seconds(listed.wall)}; "
                        f"{report.seconds(listed.first_output)}", report.seconds(json_pass.wall),
                        wp.times(listed.wall, json_pass.wall), f"first hits ≤ {FIRST_HIT_TARGET_S:.0f} s",
                        listed.first_output is not None and listed.first_output <= FIRST_HIT_TARGET_S)
            section.row("  the same: CPU, the process and its children", report.seconds(listed.cpu),
                        report.seconds(json_pass.cpu), wp.times(listed.cpu, json_pass.cpu), "(information)")
            section.row("  as it runs by default (the index built after the answer): wall", report.seconds(cold.wall),
                        report.seconds(json_pass.wall), wp.times(cold.wall, json_pass.wall), "(information)")
            section.row("  the same: CPU, the process and its children", report.seconds(cold.cpu),
                        report.seconds(json_pass.cpu), wp.times(cold.cpu, json_pass.cpu), "(information)")
            section.row("  the same: first byte of its answer on stdout",
                        report.seconds(cold.first_output), "", "", f"≤ {FIRST_HIT_TARGET_S:.0f} s",
                        cold.first_output is not None and cold.first_output <= FIRST_HIT_TARGET_S)
            section.row("  the same: peak RSS of the largest process", report.mb(cold.max_rss), "", "",
                        f"< {RSS_TARGET / 2**20:.0f} MB", cold.max_rss < RSS_TARGET)
            section.row("  the same: first byte on stderr (progress)", report.seconds(cold.first_error),
                        f"{len(cold.stderr):,} bytes" if cold.stderr else "nothing", "",
                        "progress while it indexes", cold.first_error is not None and cold.first_error < cold.wall)
            said = cold.stderr.decode(errors="replace").replace("\r", "\n").strip().splitlines()
            section.note(f"First search for {word!r} (in {counts[word]:,} of {len(files):,} files, as bytes): it said "
                         f"“{last_line(cold)}”"
                         + (f", and on stderr first “{said[0][:100]}”, last “{said[-1][:100]}”" if said else "")
                         + f"; its cache folder then held {cache_after / 2**20:.1f} MB"
                         + (f"; {report.seconds(cold.outlived_cpu)} of its CPU was in processes that outlived it"
                            if cold.outlived_cpu else "") + ".")
            if isinstance(fr, wp.FastResume):
                fr_env = fr.fresh_cache(word)
                loads.append(f"{wp.load():.2f}")
                log(f"  first search ever, {word!r}: fast-resume (load {loads[-1]}) ...")
                theirs = fr.run(fr_env, "--json", "--limit", "50", word)
                fr_envs[word] = fr_env
                section.row("  fast-resume, its first search ever (index built): wall; CPU; peak RSS",
                            f"{report.seconds(theirs.wall)}; {report.seconds(theirs.cpu)}; "
                            f"{report.mb(theirs.max_rss)}", f"ours {report.seconds(cold.wall)}",
                            f"ours {cold.wall / theirs.wall:.1f}× as long", "(peer)")
                section.note(f"fast-resume's first search for {word!r} found {fr_total(theirs)}.")

        log("  the catalog alone (a cold `list --all`), for the index's bytes ...")
        list_env = ours.fresh_cache()
        ours.run(list_env, "list", "--all", "--json")
        catalog_bytes = wp.folder_bytes(Path(list_env["REPRISE_CACHE_DIR"]))[0]

        log(f"  warm searches, best of {repeats}, alternating with fast-resume ...")
        warm: dict[str, list[wp.Run]] = {}
        fr_warm: dict[str, list[wp.Run]] = {}
        loads.append(f"{wp.load():.2f}")
        for word in (wp.RARE, wp.COMMON):
            argv = ours.argv("search", word, "--all", "--limit", "50")
            wp.run(argv, warm_envs[word], ours.scratch)   # uncounted warm-up
            if word in fr_envs and isinstance(fr, wp.FastResume):
                fr.run(fr_envs[word], "--json", "--limit", "50", word)
            for _ in range(repeats):
                warm.setdefault(word, []).append(wp.run(argv, warm_envs[word], ours.scratch))
                if word in fr_envs and isinstance(fr, wp.FastResume):
                    fr_warm.setdefault(word, []).append(fr.run(fr_envs[word], "--json", "--limit", "50", word))
        loads.append(f"{wp.load():.2f}")

        search_cache, cache_files = wp.folder_bytes(Path(warm_envs[wp.RARE]["REPRISE_CACHE_DIR"]))
        index = max(0, search_cache - catalog_bytes)
        section.row("search index on disk (the search's cache folder less a listing's)",
                    f"{index / 2**20:,.1f} MB", f"store {store_bytes / 1e9:.2f} GB",
                    f"{index / store_bytes:.1%} of the store", f"≤ {INDEX_TARGET:.0%}",
                    index <= INDEX_TARGET * store_bytes)
        if wp.RARE in fr_envs and isinstance(fr, wp.FastResume):
            fr_index = fr.index_bytes(fr_envs[wp.RARE])
            section.row("  fast-resume's whole index", f"{fr_index / 2**20:,.1f} MB", "",
                        f"{fr_index / store_bytes:.1%} of the store", "(peer)")
        section.note("Cache folder after the searches: " + ", ".join(f"{name} {size / 2**20:,.1f} MB"
                                                                      for name, size in cache_files[:6])
                     + f"; a cold `list --all` alone leaves {catalog_bytes / 2**20:,.1f} MB.")

        for word in (wp.RARE, wp.COMMON):
            best = min(warm[word], key=lambda r: r.wall)
            section.row(f"warm search, whole process, {word!r} (best of {repeats})", report.seconds(best.wall),
                        f"`python -c pass` {report.seconds(bare.wall)}", f"{best.wall / bare.wall:.0f}× as long",
                        f"≤ {report.seconds(WARM_TARGET_S)}", best.wall <= WARM_TARGET_S)
            section.row("  the same: CPU; peak RSS", f"{report.seconds(best.cpu)}; {report.mb(best.max_rss)}",
                        target="(information)")
            if word in fr_warm:
                theirs = min(fr_warm[word], key=lambda r: r.wall)
                section.row("  fast-resume, warm (its refresh, then the index)", report.seconds(theirs.wall),
                            f"ours {report.seconds(best.wall)}", f"ours {best.wall / theirs.wall:.1f}× as long",
                            "(peer)")
        section.note(f"Words: {wp.RARE!r} is a rare identifier (an exception's name in some of the code blocks of "
                     f"replies and tool output), {wp.COMMON!r} a common word. The first searches and the warm rounds "
                     "ran ours then fast-resume, word by word. " + wp.MEASURES)
        section.note(f"A first search's answer (`--no-index`): the best of {rounds}, each with a new cache (the "
                     "machine's CPU time varies from run to run); the CPU of each: " + "; ".join(spreads) + ".")
        wp.close_section(section, loads, fr)
        section.data.update(json_pass=json_pass, raw=raw, index=index, store_bytes=store_bytes)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
