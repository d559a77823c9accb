"""`read_regular_file` keeps to its root: a file reached through a linked folder inside the root
is read, one led out of it by a linked folder, or named outside the root, is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprise.core.session_files import ReadProblem, _symlink_between, read_regular_file


def test_a_linked_folder_between_the_root_and_the_file_is_noticed(tmp_path: Path):
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / "link").symlink_to(root / "a")
    assert not _symlink_between(root / "a" / "b", root)
    assert not _symlink_between(root, root)
    assert _symlink_between(root / "link" / "b", root)
    assert _symlink_between(tmp_path / "elsewhere", root)   # never passes the root


def test_a_file_through_a_linked_folder_is_read_inside_the_root_and_refused_outside(tmp_path: Path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a").mkdir(parents=True)
    outside.mkdir()
    (root / "a" / "s.jsonl").write_bytes(b"{}\n")
    (outside / "s.jsonl").write_bytes(b"{}\n")
    (root / "inner").symlink_to(root / "a")
    (root / "outer").symlink_to(outside)
    assert read_regular_file(root / "inner" / "s.jsonl", root)[0] == b"{}\n"
    with pytest.raises(ReadProblem) as refused:
        read_regular_file(root / "outer" / "s.jsonl", root)
    assert refused.value.code == "symlink_outside"
    with pytest.raises(ReadProblem) as named_outside:
        read_regular_file(outside / "s.jsonl", root)
    assert named_outside.value.code == "symlink_outside"
