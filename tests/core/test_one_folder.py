"""A listing of one folder in a store that records the folder in each file (Claude Code, Codex) reads
only the files whose head names that folder, or whose head cannot tell; the rest stay unread until a
listing wants them, and its rows are the ones a listing of everything gives."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from reprise.core.catalog import Catalog
from reprise.core.paths import OwnPaths, workspace_key
from reprise.core.sources.base import ListedFile, ListingSource, SessionFile
from reprise.core.sources.claude.layout import slug
from reprise.core.sources.claude.listing import ClaudeListing
from reprise.core.sources.codex.listing import CodexListing
from tests.core.claude.builder import ClaudeFile
from tests.core.codex.builder import START, CodexRollout

A, B = "/work/alpha", "/work/my-beta"   # beta's project folder guesses /work/my/beta


class CountingClaude(ClaudeListing):
    """The Claude Code listing, counting the files it reads and the heads it looks at."""

    def __init__(self, root: Path, data: Path):
        super().__init__([root], OwnPaths(data, "claude"))
        self.read: list[str] = []
        self.heads: list[str] = []

    def read_listing(self, file: SessionFile, now_ns: int) -> ListedFile:
        self.read.append(Path(file.path).name)
        return super().read_listing(file, now_ns)

    def _head_key(self, file: SessionFile) -> str | None:
        self.heads.append(Path(file.path).name)
        return super()._head_key(file)


class CountingCodex(CodexListing):
    """The Codex listing, counting the files it reads."""

    def __init__(self, root: Path, data: Path):
        super().__init__([root], OwnPaths(data, "codex"))
        self.read: list[str] = []

    def read_listing(self, file: SessionFile, now_ns: int) -> ListedFile:
        self.read.append(Path(file.path).name)
        return super().read_listing(file, now_ns)


def settled(path: Path) -> Path:
    """A file written a while ago (one within the clock's racy window is read again on each listing)."""
    past = time.time() - 100
    os.utime(path, (past, past))
    return path


def claude_session(number: int, cwd: str | None) -> ClaudeFile:
    session = ClaudeFile(f"5e551011-0000-4000-8000-{number:012d}", cwd=cwd or "", seed=number)
    session.turn(f"prompt {number}", f"reply {number}")
    if cwd is None:   # a file that records no folder: listed under the one its project folder's name guesses
        for record in session.records:
            record.pop("cwd", None)
    return session


def write_claude(root: Path) -> dict[str, str]:
    """A store with two project folders; one file of alpha's project folder records beta as its folder,
    and one of beta's records none. {file name: the folder it is listed under}."""
    placed = {}
    for number, (project, cwd) in enumerate([(A, A), (A, A), (A, B), (B, B), (B, B), (B, None)], start=1):
        session = claude_session(number, cwd)
        path = settled(session.write(root / "projects" / slug(project) / f"{session.session_id}.jsonl"))
        placed[path.name] = cwd or "/" + slug(B).lstrip("-").replace("-", "/")
    return placed


def rows_by_id(catalog: Catalog, keys: list[str] | None) -> dict[str, tuple[str, object]]:
    rows = catalog.refresh(keys)
    catalog.load_details(rows)
    return {row.file_id: (row.workspace_key, row.fields) for row in rows}


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_one_folder_cold_reads_only_the_files_that_record_it(agent, tmp_path):
    # Claude Code: beta's own two files and the one in alpha's project folder that records beta, not
    # the one in beta's project folder that records no folder (its folder is guessed from the slug)
    root = tmp_path / agent
    placed = write_claude(root) if agent == "claude" else write_codex(root)
    counting, plain, name = (CountingClaude, ClaudeListing, "claude") if agent == "claude" else (
        CountingCodex, CodexListing, "codex")
    listing = counting(root, tmp_path / "data")
    catalog = Catalog([listing], tmp_path / "cache")
    beta = rows_by_id(catalog, [workspace_key(B)])
    of_beta = sorted(file for file, folder in placed.items() if workspace_key(folder) == workspace_key(B))
    assert sorted(listing.read) == of_beta and len(of_beta) == 3
    assert {key for key, _ in beta.values()} == {workspace_key(B)}
    whole = rows_by_id(Catalog([plain([root], OwnPaths(tmp_path / "data2", name))], tmp_path / "cache2"), None)
    assert beta == {file_id: row for file_id, row in whole.items() if row[0] == workspace_key(B)}
    # The next listing of everything reads the rest, once; the one after reads nothing.
    listing.read.clear()
    assert rows_by_id(catalog, None) == whole
    assert sorted(listing.read) == sorted(set(placed) - set(of_beta))
    listing.read.clear()
    assert rows_by_id(catalog, None) == whole and listing.read == []


def test_one_folder_looks_at_each_unread_head_once_until_the_file_changes(tmp_path):
    # the TUI lists its folder every second: the other folders' files are not looked at again
    root = tmp_path / "claude"
    placed = write_claude(root)
    listing = CountingClaude(root, tmp_path / "data")
    catalog = Catalog([listing], tmp_path / "cache")
    catalog.refresh([workspace_key(A)])
    assert sorted(listing.heads) == sorted(placed)
    listing.heads.clear()
    listing.read.clear()
    catalog.refresh([workspace_key(A)])
    assert listing.heads == [] and listing.read == []
    # nor does another process's listing of it: the catalog keeps what the heads told
    again = CountingClaude(root, tmp_path / "data")
    Catalog([again], tmp_path / "cache").refresh([workspace_key(A)])
    assert again.heads == [] and again.read == []
    # A file of beta rewritten to record alpha is looked at again, and read for alpha.
    moved = next(name for name, folder in placed.items() if folder == B)
    path = next(root.glob(f"projects/*/{moved}"))
    number = int(moved.split("-")[-1].split(".")[0])
    again = claude_session(number, A)
    again.turn("one more", "reply")
    again.write(path)
    rows = catalog.refresh([workspace_key(A)])
    assert listing.heads == [moved] and listing.read == [moved]
    assert moved.removesuffix(".jsonl") in {row.file_id for row in rows}


def test_a_warm_one_folder_search_looks_at_no_listed_files_head(tmp_path):
    # a search of one folder counts the files in scope not listed as they are: only theirs need a head
    root = tmp_path / "claude"
    placed = write_claude(root)
    listing = CountingClaude(root, tmp_path / "data")
    catalog = Catalog([listing], tmp_path / "cache")
    catalog.refresh(None)
    listing.heads.clear()
    hits = catalog.search("prompt", [workspace_key(A)])
    assert listing.heads == []
    of_alpha = {name.removesuffix(".jsonl") for name, folder in placed.items() if folder == A}
    assert {hit.row.file_id for hit in hits} == of_alpha and len(of_alpha) == 2


def test_a_head_that_does_not_tell_is_read_whole(tmp_path):
    # the first record naming a folder lies past the head: the file is read, and listed where it belongs
    root = tmp_path / "claude"
    session = claude_session(7, A)
    session.records[0]["padding"] = "x" * (5 << 20)   # a first line over the 4 MB head, before any cwd
    session.records[0].pop("cwd", None)
    path = session.write(root / "projects" / slug(B) / f"{session.session_id}.jsonl")
    listing = CountingClaude(root, tmp_path / "data")
    rows = Catalog([listing], tmp_path / "cache").refresh([workspace_key(B)])
    assert listing.read == [path.name] and rows == []   # read, and not beta's: it records alpha
    listing = CountingClaude(root, tmp_path / "data")
    assert [row.workspace_key for row in Catalog([listing], tmp_path / "cache3").refresh([workspace_key(A)])] == [
        workspace_key(A)]


def write_codex(root: Path) -> dict[str, str]:
    placed = {}
    for number, cwd in enumerate([A, B, A, B, B], start=1):
        rollout = CodexRollout(cwd=cwd, seed=number, start=START.replace(day=number))
        rollout.turn(f"prompt {number}", "ok")
        placed[settled(rollout.write(root)).name] = cwd
    empty = CodexRollout(seed=9, start=START.replace(day=9))
    path = empty.path_in(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")   # no session_meta: a problem row under the root's key, not read for a folder
    settled(path)
    placed[path.name] = str(root)
    return placed


def test_a_rollout_whose_first_session_meta_has_no_id_is_read_whole(tmp_path):
    # the fold then takes a later session_meta's folder: the head cannot tell which
    root = tmp_path / "codex"
    rollout = CodexRollout(cwd=A, seed=3)
    rollout.lines.insert(0, b'{"timestamp":"2026-11-20T10:00:00.000Z","type":"session_meta","payload":{"cwd":"/x"}}\n')
    rollout.turn("one", "ok")
    rollout.write(root)
    listing = CountingCodex(root, tmp_path / "data")
    assert Catalog([listing], tmp_path / "cache").refresh([workspace_key(B)]) == []
    assert listing.read == [rollout.file_name()]


def test_every_source_may_offer_all_its_changed_files_by_default(tmp_path):
    files = [SessionFile(None, "x", "/nowhere/x.json", 1, 1)]
    assert ListingSource.files_of_workspaces(object(), files, ["k"], {}) is files  # type: ignore[arg-type]
