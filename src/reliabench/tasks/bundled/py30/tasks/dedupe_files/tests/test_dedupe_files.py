"""Hidden tests for dedupe_files."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from dedupe_files import DuplicateGroup, find_duplicates, wasted_bytes


def write(root: Path, rel: str, data: bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_no_duplicates(tmp_path):
    write(tmp_path, "a.txt", b"alpha")
    write(tmp_path, "b.txt", b"beta")
    assert find_duplicates(tmp_path) == []


def test_simple_pair(tmp_path):
    write(tmp_path, "b.txt", b"same")
    write(tmp_path, "a.txt", b"same")
    assert find_duplicates(tmp_path) == [DuplicateGroup(4, sha(b"same"), ("a.txt", "b.txt"))]


def test_nested_relative_posix_paths(tmp_path):
    write(tmp_path, "photos/2023/img.jpg", b"JPEGDATA")
    write(tmp_path, "backup/img copy.jpg", b"JPEGDATA")
    write(tmp_path, "img.jpg", b"JPEGDATA")
    [group] = find_duplicates(str(tmp_path))
    assert group.paths == ("backup/img copy.jpg", "img.jpg", "photos/2023/img.jpg")


def test_same_size_different_content_not_grouped(tmp_path):
    write(tmp_path, "a", b"abcd")
    write(tmp_path, "b", b"abce")
    write(tmp_path, "c", b"abcd")
    assert find_duplicates(tmp_path) == [DuplicateGroup(4, sha(b"abcd"), ("a", "c"))]


def test_two_groups_with_same_size_are_separate(tmp_path):
    for name in ["x1", "x2"]:
        write(tmp_path, name, b"xxxx")
    for name in ["y1", "y2", "y3"]:
        write(tmp_path, name, b"yyyy")
    assert [g.paths for g in find_duplicates(tmp_path)] == [("x1", "x2"), ("y1", "y2", "y3")]


def test_groups_sorted_by_size_descending(tmp_path):
    write(tmp_path, "s1", b"s")
    write(tmp_path, "s2", b"s")
    write(tmp_path, "big/1", b"B" * 300)
    write(tmp_path, "big/2", b"B" * 300)
    write(tmp_path, "m1", b"m" * 20)
    write(tmp_path, "m2", b"m" * 20)
    assert [g.size for g in find_duplicates(tmp_path)] == [300, 20, 1]


def test_empty_files_ignored_by_default(tmp_path):
    write(tmp_path, "e1", b"")
    write(tmp_path, "e2", b"")
    assert find_duplicates(tmp_path) == []
    assert find_duplicates(tmp_path, min_size=0) == [DuplicateGroup(0, sha(b""), ("e1", "e2"))]


def test_min_size_filters_small_files(tmp_path):
    write(tmp_path, "a", b"tiny")
    write(tmp_path, "b", b"tiny")
    write(tmp_path, "c", b"large-enough")
    write(tmp_path, "d", b"large-enough")
    assert [g.paths for g in find_duplicates(tmp_path, min_size=5)] == [("c", "d")]


def test_symlinks_are_skipped(tmp_path):
    write(tmp_path, "real/a", b"content")
    os.symlink(tmp_path / "real" / "a", tmp_path / "link_to_a")
    os.symlink(tmp_path / "real", tmp_path / "link_dir")
    assert find_duplicates(tmp_path) == []


def test_hidden_files_included(tmp_path):
    write(tmp_path, ".cache/blob", b"hidden")
    write(tmp_path, ".blob", b"hidden")
    assert find_duplicates(tmp_path)[0].paths == (".blob", ".cache/blob")


def test_large_files_differing_at_end(tmp_path):
    data = os.urandom(1024) * 3000
    write(tmp_path, "one.bin", data)
    write(tmp_path, "two.bin", data[:-1] + bytes([data[-1] ^ 1]))
    write(tmp_path, "three.bin", data)
    assert find_duplicates(tmp_path) == [DuplicateGroup(len(data), sha(data), ("one.bin", "three.bin"))]


def test_root_must_be_directory(tmp_path):
    file_path = write(tmp_path, "f", b"x")
    with pytest.raises(NotADirectoryError):
        find_duplicates(file_path)
    with pytest.raises(NotADirectoryError):
        find_duplicates(tmp_path / "missing")


@pytest.mark.parametrize("min_size", [-1, True, 1.5])
def test_invalid_min_size(tmp_path, min_size):
    with pytest.raises(ValueError):
        find_duplicates(tmp_path, min_size=min_size)


def test_wasted_bytes():
    groups = [DuplicateGroup(100, "a" * 64, ("a", "b", "c")), DuplicateGroup(7, "b" * 64, ("d", "e"))]
    assert wasted_bytes(groups) == 207
    assert wasted_bytes([]) == 0
