"""The workspace rules the catalog asks (core/sources/workspaces.py): the three built-in stores' rules
from their hooks, and a store that keeps its own map of folders (`mapped`), listed through a tiny
listing of this test: a group the map does not name is listed under an unknown folder with its own
name, never dropped, and a listing of some workspaces scans only their groups."""

from __future__ import annotations

import os
import time
from collections.abc import Collection
from pathlib import Path

import pytest

from reprise.core.catalog import Catalog
from reprise.core.folder_scan import FolderNames, FolderStats, scan_folder, with_suffix
from reprise.core.paths import OwnPaths, SessionRef, workspace_key
from reprise.core.sources.base import HeadKeys, ListedFile, ListingFields, ListingSource, SearchRecord, SessionFile
from reprise.core.sources.claude.listing import ClaudeListing
from reprise.core.sources.codex.listing import CodexListing
from reprise.core.sources.fractal.listing import FractalListing
from reprise.core.sources.fractal.store import Store
from reprise.core.sources.workspaces import (
    UNMAPPED_PREFIX,
    GroupRule,
    MappedRule,
    RecordedRule,
    unmapped_key,
)

ALPHA, GAMMA = "/work/alpha", "/work/gamma"


class MappedListing(ListingSource):
    """A store of `<group>/<id>.txt` files (one turn each) whose map of groups to folders is a dict:
    alpha and gamma are mapped, beta is not. Counts the groups it scans."""

    name = "claude"   # any source's name: the catalog only keys its rows by it

    def __init__(self, root: Path, data: Path, folders: dict[str, str]):
        self.root = root
        self.folders = folders
        self._own = OwnPaths(data, "claude")
        self.scanned: list[str] = []
        self.rule = MappedRule(self.groups, lambda: self.folders)

    @property
    def workspaces(self) -> MappedRule:
        return self.rule

    @property
    def own_paths(self) -> OwnPaths:
        return self._own

    def groups(self) -> list[str]:
        return sorted(entry.name for entry in os.scandir(self.root) if entry.is_dir())

    def file_stats(self, group: str, known: FolderNames | None = None) -> FolderStats:
        self.scanned.append(group)
        return scan_folder(f"{self.root}/{group}", "group", with_suffix(".txt"), known)

    def file_path(self, group: str, file_id: str) -> str:
        return f"{self.root}/{group}/{file_id}.txt"

    def read_listing(self, file: SessionFile, now_ns: int) -> ListedFile:
        info = os.stat(file.path)
        key = self.rule.key_of(file.group)
        text = Path(file.path).read_text(encoding="utf-8")
        return ListedFile(key, file.file_id, file.path, info.st_size, info.st_mtime_ns,
                          ListingFields(session_id=file.file_id, workspace_key=key, turns=1, first_message=text))

    def read_search_records(self, file: SessionFile) -> list[SearchRecord] | None:
        return [SearchRecord(1, "user", Path(file.path).read_text(encoding="utf-8"))]

    def workspace_path(self, key: str) -> str | None:
        return self.rule.folder_of(key)

    def title_and_pin(self, ref: SessionRef) -> tuple[str | None, bool]:
        return None, False


def write(root: Path, group: str, file_id: str, text: str) -> None:
    path = root / group / f"{file_id}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    past = time.time() - 100   # out of the clock's racy window: not read again on each listing
    os.utime(path, (past, past))


@pytest.fixture
def mapped(tmp_path: Path) -> tuple[MappedListing, Catalog]:
    root = tmp_path / "store"
    write(root, "alpha", "a1", "in alpha")
    write(root, "beta", "b1", "in beta")
    write(root, "gamma", "g1", "in gamma")
    listing = MappedListing(root, tmp_path / "data", {"alpha": ALPHA, "gamma": GAMMA})
    catalog = Catalog([listing], tmp_path / "cache")
    yield listing, catalog
    catalog.close()


def by_file(rows: list) -> dict[str, tuple[str, str | None]]:  # type: ignore[type-arg]
    return {row.file_id: (row.workspace_key, row.workspace_path) for row in rows}


def test_an_unmapped_group_is_listed_under_an_unknown_folder_with_its_name(mapped):
    listing, catalog = mapped
    rows = catalog.refresh(None)
    beta = unmapped_key("beta")
    assert by_file(rows) == {"a1": (workspace_key(ALPHA), ALPHA), "b1": (beta, None),
                             "g1": (workspace_key(GAMMA), GAMMA)}
    assert beta.startswith(f"{UNMAPPED_PREFIX}beta--")
    assert beta in catalog.workspace_keys()
    assert by_file(catalog.stored_rows(None)) == by_file(rows)


def test_a_listing_of_some_workspaces_scans_only_their_groups(mapped):
    listing, catalog = mapped
    catalog.refresh(None)
    listing.scanned.clear()
    assert by_file(catalog.refresh([unmapped_key("beta")])) == {"b1": (unmapped_key("beta"), None)}
    assert listing.scanned == ["beta"]
    listing.scanned.clear()
    assert by_file(catalog.refresh([workspace_key(ALPHA)])) == {"a1": (workspace_key(ALPHA), ALPHA)}
    assert listing.scanned == ["alpha"]
    assert by_file(catalog.stored_rows([workspace_key(GAMMA)])) == {"g1": (workspace_key(GAMMA), GAMMA)}


def test_a_first_listing_of_one_workspace_reads_only_its_group(mapped):
    listing, catalog = mapped
    assert by_file(catalog.refresh([workspace_key(GAMMA)])) == {"g1": (workspace_key(GAMMA), GAMMA)}
    assert listing.scanned == ["gamma"]
    assert len(catalog.refresh(None)) == 3   # the others were not dropped, only not read yet


def test_the_mapped_rule_answers_from_the_map():
    folders = {"alpha": ALPHA}
    rule = MappedRule(lambda: ["alpha", "beta"], lambda: folders)
    assert rule.kind == "mapped"
    assert rule.groups_for(None) is None
    assert rule.groups_for([workspace_key(ALPHA), unmapped_key("beta")]) == ["alpha", "beta"]
    assert rule.groups_for(["elsewhere--0123456789abcdef"]) == []
    assert rule.folder_of(workspace_key(ALPHA)) == ALPHA and rule.folder_of(unmapped_key("beta")) is None
    folders["beta"] = "/work/beta"   # the agent added it to its map: seen on the next question
    assert rule.key_of("beta") == workspace_key("/work/beta")
    files = [SessionFile(None, "x", "/x", 1, 1, group="alpha")]
    assert rule.narrow(files, ["k"], {}) is files


@pytest.mark.parametrize("name", ["beta", "a b/c", "ünï", "-", "x" * 300])
def test_an_unmapped_key_is_a_valid_key_of_no_folder(name):
    key = unmapped_key(name)
    SessionRef(key, "s", "claude")   # valid: rows of the group can be named
    assert key != workspace_key(f"/{name}") and key != unmapped_key(name + "2")


def test_the_built_in_stores_rules_come_from_their_hooks(tmp_path):
    fractal = FractalListing(Store(tmp_path / "state"))
    assert isinstance(fractal.workspaces, GroupRule)
    assert fractal.workspaces.groups_for(["k"]) == ["k"] and fractal.workspaces.groups_for(None) is None
    assert fractal.workspaces.folder_of(workspace_key(ALPHA)) == fractal.workspace_path(workspace_key(ALPHA))
    own = OwnPaths(tmp_path / "data", "claude")
    for listing in (ClaudeListing([tmp_path / "claude"], own), CodexListing([tmp_path / "codex"], own)):
        rule = listing.workspaces
        assert isinstance(rule, RecordedRule) and rule.groups_for(["k"]) is None and rule.folder_of("k") is None
    calls: list[Collection[str]] = []

    def narrowing(files: list[SessionFile], keys: Collection[str], known: HeadKeys) -> list[SessionFile]:
        calls.append(keys)
        return files[:0]

    assert RecordedRule(narrowing).narrow([SessionFile(None, "x", "/x", 1, 1)], ["k"], {}) == []
    assert calls == [["k"]]
