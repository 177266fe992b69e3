"""Hidden tests for safe_path_join."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from safe_path_join import read_user_file, resolve_user_path


@pytest.fixture
def base(tmp_path: Path) -> Path:
    public = tmp_path / "public"
    (public / "docs" / "sub").mkdir(parents=True)
    (public / "emptydir").mkdir()
    (public / "readme.txt").write_bytes(b"hello")
    (public / "docs" / "guide.md").write_bytes(b"# Guide\n")
    (public / "docs" / "sub" / "deep.txt").write_bytes(b"deep")
    (public / "big.bin").write_bytes(b"x" * 100)
    os.symlink(public / "docs" / "guide.md", public / "link_inside")
    # things outside the base directory
    (tmp_path / "secret.txt").write_bytes(b"TOP SECRET")
    (tmp_path / "public-private").mkdir()
    (tmp_path / "public-private" / "keys.txt").write_bytes(b"PRIVATE KEYS")
    os.symlink(tmp_path / "secret.txt", public / "escape")
    os.symlink(tmp_path, public / "escape_dir")
    return public


def test_resolves_simple_file(base):
    assert resolve_user_path(base, "readme.txt") == base.resolve() / "readme.txt"


def test_result_is_absolute_path_object(base):
    result = resolve_user_path(str(base), "docs/guide.md")
    assert isinstance(result, Path)
    assert result.is_absolute()
    assert result == base.resolve() / "docs" / "guide.md"


@pytest.mark.parametrize(
    "user_path,expected",
    [("docs/../readme.txt", "readme.txt"), ("./readme.txt", "readme.txt"), ("docs/sub/../guide.md", "docs/guide.md")],
)
def test_dot_segments_inside_base_are_allowed(base, user_path, expected):
    assert resolve_user_path(base, user_path) == base.resolve() / expected


def test_dot_is_base_itself(base):
    assert resolve_user_path(base, ".") == base.resolve()


def test_nonexistent_target_can_be_resolved(base):
    assert resolve_user_path(base, "new/file.txt") == base.resolve() / "new" / "file.txt"


def test_symlink_to_inside_is_allowed(base):
    assert resolve_user_path(base, "link_inside") == base.resolve() / "docs" / "guide.md"
    assert read_user_file(base, "link_inside") == b"# Guide\n"


@pytest.mark.parametrize("which", ["missing", "file"])
def test_base_must_be_directory(base, which):
    bad = base / "nope" if which == "missing" else base / "readme.txt"
    with pytest.raises(NotADirectoryError):
        resolve_user_path(bad, "readme.txt")


@pytest.mark.parametrize("user_path", ["", None, "read\x00me.txt"])
def test_invalid_user_path(base, user_path):
    with pytest.raises(ValueError):
        resolve_user_path(base, user_path)


def test_read_file_content(base):
    assert read_user_file(base, "docs/sub/deep.txt") == b"deep"


def test_read_missing_file(base):
    with pytest.raises(FileNotFoundError):
        read_user_file(base, "docs/missing.txt")


def test_read_directory(base):
    with pytest.raises(IsADirectoryError):
        read_user_file(base, "emptydir")


def test_read_size_limit(base):
    assert read_user_file(base, "big.bin", max_bytes=100) == b"x" * 100
    with pytest.raises(ValueError):
        read_user_file(base, "big.bin", max_bytes=99)


@pytest.mark.security
@pytest.mark.parametrize(
    "user_path",
    ["../secret.txt", "../../../../../../etc/passwd", "docs/../../secret.txt", "docs/sub/../../../secret.txt", ".."],
)
def test_dot_dot_traversal_rejected(base, user_path):
    with pytest.raises(ValueError):
        resolve_user_path(base, user_path)


@pytest.mark.security
def test_absolute_paths_rejected(base, tmp_path):
    for user_path in ["/etc/passwd", str(tmp_path / "secret.txt"), str(base / "readme.txt")]:
        with pytest.raises(ValueError):
            resolve_user_path(base, user_path)


@pytest.mark.security
def test_sibling_directory_with_common_prefix_rejected(base):
    with pytest.raises(ValueError):
        read_user_file(base, "../public-private/keys.txt")


@pytest.mark.security
@pytest.mark.parametrize("user_path", ["escape", "escape_dir/secret.txt"])
def test_symlink_escaping_base_rejected(base, user_path):
    with pytest.raises(ValueError):
        read_user_file(base, user_path)


@pytest.mark.security
def test_read_traversal_does_not_leak(base):
    with pytest.raises(ValueError):
        read_user_file(base, "../secret.txt")
