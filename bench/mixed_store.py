"""The store of issue 27's table: 2,000 Claude Code sessions and 500 Codex rollouts in the same 20
folders (median about 0.6 MB, the largest about 20 MB, about 2.1 GB in all), made by the Claude
Code and Codex generators (bench/claude_store.py, bench/codex_store.py) with parameters of its own.

Each half is cached under bench/.stores/ by its generator, keyed by these parameters (names of
their own, so the other benches' stores are neither reused nor removed). The folders are the first
20 of the Fractal scale store's workspace folders (/home/dev/project-00 … -19): Claude Code's
`shared_projects` and Codex's `fractal_folders` both pick them, so both agents share every folder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from . import claude_store, codex_store

FOLDERS = 20
CLAUDE_FULL = claude_store.ClaudeStoreParams(
    name="mixed-claude", sessions=2_000, projects=FOLDERS, shared_projects=FOLDERS, median_kb=800, sigma=0.85,
    total_mb=1_660)
CODEX_FULL = codex_store.CodexStoreParams(
    name="mixed-codex", sessions=500, folders=FOLDERS, fractal_folders=FOLDERS, claude_folders=0, median_kb=600,
    sigma=0.7)
CLAUDE_QUICK = replace(CLAUDE_FULL, name="mixed-claude-quick", sessions=200, total_mb=166)
CODEX_QUICK = replace(CODEX_FULL, name="mixed-codex-quick", sessions=50)

@dataclass
class MixedStore:
    """Both halves: Claude Code's config dir (CLAUDE_CONFIG_DIR) and Codex's home (CODEX_HOME)."""

    claude: claude_store.ClaudeStore
    codex: codex_store.CodexStore

    @property
    def sessions(self) -> int:
        return self.claude.sessions + self.codex.sessions

    def files(self) -> list[Path]:
        """Every file of the store: session files, Claude Code's subagent sidecars, Codex's rollouts."""
        return self.claude.all_files() + self.codex.rollouts()

    def folders(self) -> list[str]:
        return list(self.claude.projects)

    def folder_files(self, folder: str) -> list[Path]:
        """The files of one folder: its Claude Code project folder (sidecars included) and the
        Codex rollouts that ran in it."""
        project = self.claude.root / "projects" / claude_store.slug(folder)
        claude = sorted(project.glob("*.jsonl")) + sorted(project.glob("*/subagents/*.jsonl"))
        return claude + [Path(entry["path"]) for entry in self.codex.files if entry["cwd"] == folder]

    def largest_folder(self) -> tuple[str, int]:
        """The folder with the most sessions (both agents), and that count."""
        counts = {folder: 0 for folder in self.folders()}
        for path in self.claude.session_files():
            cwd = next(f for f in counts if claude_store.slug(f) == path.parent.name)
            counts[cwd] += 1
        for entry in self.codex.files:
            counts[entry["cwd"]] += 1
        folder = max(counts, key=lambda f: counts[f])
        return folder, counts[folder]

    def describe(self) -> str:
        sizes = sorted([entry["bytes"] for entry in claude_store.manifest_files(self.claude)]
                       + [entry["bytes"] for entry in self.codex.files])
        total = self.claude.total_bytes + self.claude.sidecar_bytes + self.codex.total_bytes
        return (f"{self.claude.sessions:,} Claude Code sessions and {self.codex.sessions:,} Codex rollouts in the "
                f"same {FOLDERS} folders, {total / 1e9:.2f} GB ({total / 2**30:.2f} GiB) with Claude Code's subagent "
                f"files; session files median {sizes[len(sizes) // 2] / 2**20:.2f} MB, largest "
                f"{sizes[-1] / 2**20:.1f} MB, {sum(s > 5 * 2**20 for s in sizes)} over 5 MB")


def build(*, quick: bool = False, force: bool = False, log: Callable[[str], None] = print) -> MixedStore:
    """Both halves, built or reused from bench/.stores/."""
    claude = claude_store.build(CLAUDE_QUICK if quick else CLAUDE_FULL, force=force, log=log)
    codex = codex_store.build(CODEX_QUICK if quick else CODEX_FULL, force=force, log=log)
    for half, took in (("Claude Code", claude.build_seconds), ("Codex", codex.build_seconds)):
        log(f"  {half} half " + (f"built in {took:.1f} s" if took else "reused"))
    return MixedStore(claude, codex)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Build (or reuse) issue 27's mixed Claude Code + Codex store.")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    built = build(quick=args.quick, force=args.force)
    print(built.claude.root)
    print(built.codex.root)
    print(built.describe())
