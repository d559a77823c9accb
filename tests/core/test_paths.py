from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reprise.core.errors import InvalidIdError
from reprise.core.paths import (
    SessionRef,
    fractal_state_root,
    guess_workspace_path,
    keys_resolved_once,
    validate_session_id,
    workspace_key,
)
from reprise.core.sources.fractal.layout import StorePaths


def test_state_root_follows_fractal_resolution_order(tmp_path):
    assert fractal_state_root({"FRACTAL_STATE_HOME": "/x/y", "XDG_STATE_HOME": "/z"}) == Path("/x/y")
    assert fractal_state_root({"XDG_STATE_HOME": "/z"}) == Path("/z/fractal")
    assert fractal_state_root({"FRACTAL_STATE_HOME": "", "XDG_STATE_HOME": ""}) == Path.home() / ".local/state/fractal"


def test_workspace_key_matches_the_documented_algorithm_for_odd_paths(tmp_path):
    target = tmp_path / "real project"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    for path, slug_start in ((target, "tmp-"), (link, "tmp-")):
        resolved = str(Path(path).resolve())
        key = workspace_key(path)
        assert key.endswith("--" + hashlib.sha256(resolved.encode()).hexdigest()[:16])
        assert key.startswith(slug_start)
    assert workspace_key(link) == workspace_key(target)
    assert workspace_key("/") == "workspace--" + hashlib.sha256(b"/").hexdigest()[:16]
    assert workspace_key("/漢字/日本").startswith("workspace--")
    long_key = workspace_key("/" + "a" * 300)
    assert long_key.split("--")[0] == "a" * 80


def test_ids_that_could_leave_a_folder_are_rejected():
    for bad in ("", ".", "..", "a/b", "a\\b", "x\x00", "x\x1b[31m", "a" * 129, "foo.json", "\n"):
        with pytest.raises(InvalidIdError):
            validate_session_id(bad)
    for good in ("0123456789abcdef0123456789abcdef", "..x", "unicode-é", "with space"):
        assert validate_session_id(good) == good


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=200))
def test_no_accepted_id_builds_a_path_outside_the_sessions_folder(text):
    paths = StorePaths(Path("/state"), "fractal")
    key = workspace_key("/home/dev/p")
    try:
        ref = SessionRef(key, text, "fractal")
    except InvalidIdError:
        return
    for path in (paths.session_file(ref), paths.meta_file(ref), paths.lock_file(ref), paths.archive_dir(ref)):
        resolved = Path(os.path.normpath(path))
        assert resolved.is_relative_to(paths.workspace(key)), path
        assert resolved.parent.name in ("sessions", "meta", "locks", "archive")


def test_workspace_keys_that_are_not_keys_are_rejected():
    for bad in ("..", "../x--0123456789abcdef", "x", "a/b--0123456789abcdef"):
        with pytest.raises(InvalidIdError):
            SessionRef(bad, "abcd", "fractal")


def test_folder_is_recovered_from_a_plain_key_and_not_guessed_for_a_lossy_one():
    assert guess_workspace_path(workspace_key("/home/dev/my-app")) == "/home/dev/my-app"
    assert guess_workspace_path(workspace_key("/home/dev/my app")) is None


def test_a_batch_resolves_each_folder_once_and_the_next_batch_sees_a_moved_link(tmp_path):
    # a listing's batch of reads keys each folder once; after it, a folder a link now points elsewhere
    # has its new key
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "a")
    with keys_resolved_once():
        first = workspace_key(str(link))
        assert first == workspace_key(str(tmp_path / "a"))
        link.unlink()
        link.symlink_to(tmp_path / "b")
        assert workspace_key(str(link)) == first   # within the batch: as first resolved
        assert workspace_key(link) == workspace_key(str(tmp_path / "b"))   # a Path is not kept
    assert workspace_key(str(link)) == workspace_key(str(tmp_path / "b"))
