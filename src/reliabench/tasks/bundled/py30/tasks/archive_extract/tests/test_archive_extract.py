"""Hidden tests for archive_extract. Archives are built in memory with tarfile."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from archive_extract import UnsafeArchiveError, safe_extract


def file_member(name: str, data: bytes = b"data") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    return info, data


def dir_member(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    return info, None


def link_member(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def make_tar(path: Path, members, mode: str = "w") -> Path:
    with tarfile.open(path, mode) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def all_files(root: Path) -> list[str]:
    if not root.exists():
        return []
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


SITE = [
    dir_member("docs"),
    file_member("index.html", b"<h1>hi</h1>"),
    file_member("docs/guide.md", b"# guide"),
    file_member("docs/img/logo.svg", b"<svg/>"),
]


def test_extracts_file_contents(tmp_path):
    archive = make_tar(tmp_path / "site.tar", SITE)
    dest = tmp_path / "out"
    safe_extract(archive, dest)
    assert (dest / "index.html").read_bytes() == b"<h1>hi</h1>"
    assert (dest / "docs" / "img" / "logo.svg").read_bytes() == b"<svg/>"


def test_returns_sorted_relative_file_paths(tmp_path):
    archive = make_tar(tmp_path / "site.tar", SITE)
    assert safe_extract(archive, tmp_path / "out") == ["docs/guide.md", "docs/img/logo.svg", "index.html"]


def test_dot_slash_prefix_and_root_dir_member(tmp_path):
    archive = make_tar(tmp_path / "a.tar", [dir_member("."), dir_member("./css"), file_member("./css/site.css", b"body{}")])
    dest = tmp_path / "out"
    assert safe_extract(archive, dest) == ["css/site.css"]
    assert (dest / "css" / "site.css").read_bytes() == b"body{}"


def test_empty_directory_member_created(tmp_path):
    archive = make_tar(tmp_path / "a.tar", [dir_member("uploads"), file_member("a.txt")])
    dest = tmp_path / "out"
    safe_extract(archive, dest)
    assert (dest / "uploads").is_dir()


@pytest.mark.parametrize("mode", ["w:gz", "w:bz2", "w:xz"])
def test_compressed_archives(tmp_path, mode):
    archive = make_tar(tmp_path / "site.tar.x", SITE, mode)
    assert safe_extract(str(archive), str(tmp_path / "out")) == ["docs/guide.md", "docs/img/logo.svg", "index.html"]


def test_creates_nested_destination(tmp_path):
    archive = make_tar(tmp_path / "a.tar", [file_member("a.txt")])
    dest = tmp_path / "users" / "42" / "assets"
    safe_extract(archive, dest)
    assert (dest / "a.txt").read_bytes() == b"data"


def test_existing_files_kept_and_overwritten(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "keep.txt").write_bytes(b"keep")
    (dest / "a.txt").write_bytes(b"old")
    archive = make_tar(tmp_path / "a.tar", [file_member("a.txt", b"new")])
    safe_extract(archive, dest)
    assert (dest / "keep.txt").read_bytes() == b"keep"
    assert (dest / "a.txt").read_bytes() == b"new"


def test_empty_archive(tmp_path):
    archive = make_tar(tmp_path / "empty.tar", [])
    assert safe_extract(archive, tmp_path / "out") == []


def test_not_a_tar_archive(tmp_path):
    bogus = tmp_path / "bogus.tar"
    bogus.write_bytes(b"this is not a tar archive at all" * 40)
    with pytest.raises(tarfile.TarError):
        safe_extract(bogus, tmp_path / "out")


def test_missing_archive(tmp_path):
    with pytest.raises(FileNotFoundError):
        safe_extract(tmp_path / "nope.tar", tmp_path / "out")


def test_unsafe_archive_error_is_value_error():
    assert issubclass(UnsafeArchiveError, ValueError)


@pytest.mark.security
@pytest.mark.parametrize("name", ["../evil.txt", "docs/../../evil.txt", "./../evil.txt"])
def test_dot_dot_member_rejected(tmp_path, name):
    archive = make_tar(tmp_path / "a.tar", [file_member(name, b"pwned")])
    with pytest.raises(UnsafeArchiveError):
        safe_extract(archive, tmp_path / "box" / "out")
    assert not (tmp_path / "box" / "evil.txt").exists()
    assert not (tmp_path / "evil.txt").exists()


@pytest.mark.security
def test_absolute_member_rejected(tmp_path):
    target = tmp_path / "abs_evil.txt"
    archive = make_tar(tmp_path / "a.tar", [file_member(str(target), b"pwned")])
    with pytest.raises(UnsafeArchiveError):
        safe_extract(archive, tmp_path / "out")
    assert not target.exists()


@pytest.mark.security
def test_symlink_member_rejected(tmp_path):
    archive = make_tar(tmp_path / "a.tar", [link_member("passwd", "/etc/passwd")])
    with pytest.raises(UnsafeArchiveError):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "passwd").is_symlink()


@pytest.mark.security
def test_symlink_then_write_through_it_rejected(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = make_tar(
        tmp_path / "a.tar",
        [link_member("uploads", str(outside)), file_member("uploads/evil.txt", b"pwned")],
    )
    with pytest.raises(UnsafeArchiveError):
        safe_extract(archive, tmp_path / "out")
    assert not (outside / "evil.txt").exists()


@pytest.mark.security
def test_hard_link_member_rejected(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"secret")
    archive = make_tar(tmp_path / "a.tar", [link_member("copy.txt", str(secret), tarfile.LNKTYPE)])
    with pytest.raises(UnsafeArchiveError):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "copy.txt").exists()


@pytest.mark.security
def test_fifo_member_rejected(tmp_path):
    info = tarfile.TarInfo("pipe")
    info.type = tarfile.FIFOTYPE
    archive = make_tar(tmp_path / "a.tar", [file_member("ok.txt"), (info, None)])
    with pytest.raises(UnsafeArchiveError):
        safe_extract(archive, tmp_path / "out")


@pytest.mark.security
def test_existing_symlink_in_destination_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "uploads").symlink_to(outside, target_is_directory=True)
    archive = make_tar(tmp_path / "a.tar", [file_member("uploads/evil.txt", b"pwned")])
    with pytest.raises(UnsafeArchiveError):
        safe_extract(archive, dest)
    assert not (outside / "evil.txt").exists()


@pytest.mark.security
def test_nothing_extracted_when_later_member_is_unsafe(tmp_path):
    archive = make_tar(tmp_path / "a.tar", SITE + [file_member("../evil.txt", b"pwned")])
    dest = tmp_path / "out"
    with pytest.raises(UnsafeArchiveError):
        safe_extract(archive, dest)
    assert all_files(dest) == []
    assert not (tmp_path / "evil.txt").exists()
