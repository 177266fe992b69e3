"""A repository at its base commit from a tarball, a git repository or a folder; refusals."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from reliabench.repository.patches import git_env
from reliabench.repository.source import RepositorySourceError, checkout, source_kind


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(), capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str, str]:
    r = tmp_path / "repo"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    (r / "m.py").write_text("v = 1\n")
    _git(r, "add", "-A")
    _git(r, "commit", "-qm", "one")
    first = _git(r, "rev-parse", "HEAD")
    (r / "m.py").write_text("v = 2\n")
    _git(r, "commit", "-qam", "two")
    return r, first, _git(r, "rev-parse", "HEAD")


def test_git_repository_at_an_older_commit(repo: tuple[Path, str, str], tmp_path: Path) -> None:
    r, first, _ = repo
    assert source_kind(r) == "git"
    assert checkout(r, first, tmp_path / "co") == "git"
    assert (tmp_path / "co" / "m.py").read_text() == "v = 1\n"
    # one commit of its own: no history to read the fix from, a clean status
    assert _git(tmp_path / "co", "rev-list", "--count", "HEAD") == "1"
    assert _git(tmp_path / "co", "status", "--porcelain") == ""


def test_git_repository_without_the_commit_is_refused(repo: tuple[Path, str, str], tmp_path: Path) -> None:
    with pytest.raises(RepositorySourceError, match="has no commit"):
        checkout(repo[0], "0" * 40, tmp_path / "co")
    assert not (tmp_path / "co").exists()


def test_tarball_commit_id_must_match(repo: tuple[Path, str, str], tmp_path: Path) -> None:
    r, first, second = repo
    tar = tmp_path / "r.tar.gz"
    subprocess.run(
        ["git", "archive", "--format=tar.gz", "--prefix=proj/", "-o", str(tar), second],
        cwd=r,
        env=git_env(),
        check=True,
    )
    assert checkout(tar, second, tmp_path / "ok") == "tarball"
    assert (tmp_path / "ok" / "m.py").read_text() == "v = 2\n"  # the one top folder stripped
    with pytest.raises(RepositorySourceError, match=f"holds commit {second}"):
        checkout(tar, first, tmp_path / "bad")


def test_tarball_members_escaping_the_tree_are_refused(tmp_path: Path) -> None:
    tar = tmp_path / "evil.tar"
    with tarfile.open(tar, "w") as tf:
        info = tarfile.TarInfo("a/link")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tf.addfile(info)
    with pytest.raises(RepositorySourceError, match="points out of the tree"):
        checkout(tar, "1" * 40, tmp_path / "co")
    with tarfile.open(tar, "w") as tf:
        tf.addfile(tarfile.TarInfo("../../x"))
    with pytest.raises(RepositorySourceError, match="outside the tree"):
        checkout(tar, "1" * 40, tmp_path / "co")


def test_folder_is_copied_links_kept_not_followed(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text("x\n")
    os.symlink("/etc/hostname", src / "l")
    assert checkout(src, "2" * 40, tmp_path / "co") == "folder"
    assert os.readlink(tmp_path / "co" / "l") == "/etc/hostname"


def test_missing_source(tmp_path: Path) -> None:
    with pytest.raises(RepositorySourceError, match="no such repository"):
        checkout(tmp_path / "nope", "3" * 40, tmp_path / "co")
