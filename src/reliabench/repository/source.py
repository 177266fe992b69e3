"""A repository at its base commit, from a tarball, a folder or a git repository.

:func:`checkout` puts the repository's tree at ``base_commit`` into a new folder and makes it
a git repository with that tree as its one commit (the agent's ``git diff`` / ``git status``
work; the checkout has no history an agent could read the fix from). Where the source can
say which commit it holds, it must be ``base_commit``, or :class:`RepositorySourceError` is
raised before anything runs (the harness's fault, never an agent's):

* a ``.tar``/``.tar.gz``/``.tgz`` from ``git archive`` carries its commit id (``git
  get-tar-commit-id``); one top folder is stripped; members outside the tree, links that
  point out of it, devices and FIFOs are refused (``tarfile``'s ``data`` filter);
* a git repository (a mirror, a bare or a working clone): ``git archive base_commit`` of it;
* a plain folder: copied (links kept as links, never followed); if it is a git work tree,
  its ``HEAD`` must be ``base_commit`` and it must be clean.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import Final, Literal

from reliabench.errors import SandboxError
from reliabench.files.untrusted import remove_tree
from reliabench.repository.patches import git_env

__all__ = ["RepositorySourceError", "SourceKind", "checkout", "source_kind", "tree_id"]

SourceKind = Literal["tarball", "git", "folder"]
_TAR_SUFFIXES: Final = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
_MAX_TAR_BYTES: Final = 4 * 1024**3


class RepositorySourceError(SandboxError):
    """The repository cannot be put at its base commit (missing, other commit, unreadable)."""


def source_kind(path: Path) -> SourceKind:
    """``tarball``, ``git`` (a repository or mirror) or ``folder``.

    Raises:
        RepositorySourceError: ``path`` does not exist.
    """
    if path.is_file() and path.name.endswith(_TAR_SUFFIXES):
        return "tarball"
    if path.is_dir():
        if (path / "HEAD").is_file() and (path / "objects").is_dir():
            return "git"  # bare or mirror
        if (path / ".git").exists() and _git(path, "rev-parse", "--verify", "-q", "HEAD")[0] == 0:
            return "git"
        return "folder"
    raise RepositorySourceError(f"{path}: no such repository (a tarball, a folder or a git repository)")


def _git(cwd: Path, *args: str, data: bytes | None = None, timeout: float = 600) -> tuple[int, bytes]:
    try:
        done = subprocess.run(
            ["git", "-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*", *args],
            cwd=cwd,
            input=data,
            capture_output=True,
            env=git_env(),
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, str(exc).encode()
    return done.returncode, done.stdout if done.returncode == 0 else done.stderr


def _tar_commit(data: bytes) -> str | None:
    with tempfile.TemporaryDirectory() as tmp:
        rc, out = _git(Path(tmp), "get-tar-commit-id", data=data)
    text = out.decode("ascii", "replace").strip()
    return text if rc == 0 and len(text) == 40 else None


def _decompressed(data: bytes, name: str, where: str) -> bytes:
    try:
        if name.endswith((".gz", ".tgz")):
            return gzip.decompress(data)
        if name.endswith(".bz2"):
            return bz2.decompress(data)
        if name.endswith(".xz"):
            return lzma.decompress(data)
    except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
        raise RepositorySourceError(f"{where}: cannot decompress ({exc})") from None
    return data


def _inside(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return bool(parts) and not PurePosixPath(name).is_absolute() and ".." not in parts


def _check_member(m: tarfile.TarInfo, where: str) -> None:
    """Refuse what ``tarfile``'s ``data`` filter refuses (Python 3.11.2 has no filter).

    Paths and links out of the tree, devices and FIFOs; modes are made plain.
    """
    if not _inside(m.name):
        raise RepositorySourceError(f"{where}: member {m.name!r} lies outside the tree")
    if m.issym():
        target = str(PurePosixPath(m.name).parent / m.linkname)
        if PurePosixPath(m.linkname).is_absolute() or not _inside(os.path.normpath(target)):
            raise RepositorySourceError(f"{where}: link {m.name!r} points out of the tree ({m.linkname!r})")
    elif m.islnk():
        if not _inside(m.linkname):
            raise RepositorySourceError(f"{where}: hard link {m.name!r} points out of the tree")
    elif not (m.isfile() or m.isdir()):
        raise RepositorySourceError(f"{where}: member {m.name!r} is a device or FIFO")
    m.mode = 0o755 if m.isdir() or m.mode & 0o111 else 0o644
    m.uid = m.gid = 0
    m.uname = m.gname = ""


def _extract(data: bytes, dest: Path, where: str) -> None:
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            members = tf.getmembers()
            tops = {m.name.split("/", 1)[0] for m in members if m.name not in ("", ".", "pax_global_header")}
            strip = len(tops) == 1 and any(m.name.startswith(next(iter(tops)) + "/") for m in members)
            prefix = next(iter(tops)) + "/" if strip else ""
            kept = []
            for m in members:
                if m.name == "pax_global_header" or (strip and m.name == prefix[:-1]):
                    continue
                if strip:
                    m.name = m.name[len(prefix) :]
                    if m.islnk() and m.linkname.startswith(prefix):
                        m.linkname = m.linkname[len(prefix) :]
                kept.append(m)
            for m in kept:
                _check_member(m, where)
            tf.extractall(dest, members=kept)
    except (tarfile.TarError, OSError, ValueError) as exc:
        raise RepositorySourceError(f"{where}: cannot unpack ({type(exc).__name__}: {exc})") from None


def checkout(source: Path, base_commit: str, dest: Path, *, where: str | None = None) -> SourceKind:
    """Put the repository ``source`` at ``base_commit`` into the new folder ``dest`` (module docstring).

    Returns:
        The kind of source read.

    Raises:
        RepositorySourceError: Not found, not at ``base_commit``, or cannot be read.
    """
    where = where or str(source)
    kind = source_kind(source)
    if dest.exists():
        raise RepositorySourceError(f"{dest}: exists")
    dest.mkdir(parents=True)
    try:
        if kind == "tarball":
            size = source.stat().st_size
            if size > _MAX_TAR_BYTES:
                raise RepositorySourceError(f"{where}: {size} bytes, more than {_MAX_TAR_BYTES}")
            data = source.read_bytes()
            raw = _decompressed(data, source.name, where)  # the commit id is in the tar header
            commit = _tar_commit(raw)
            if commit is not None and commit != base_commit:
                raise RepositorySourceError(
                    f"{where}: holds commit {commit}, the task's base_commit is "
                    f"{base_commit} (a tarball of another commit)"
                )
            _extract(data, dest, where)
        elif kind == "git":
            rc, out = _git(source, "rev-parse", "--verify", "-q", f"{base_commit}^{{commit}}")
            if rc != 0:
                raise RepositorySourceError(
                    f"{where}: has no commit {base_commit} (fetch it into the mirror)"
                )
            rc, out = _git(source, "archive", "--format=tar", base_commit)
            if rc != 0:
                raise RepositorySourceError(
                    f"{where}: git archive {base_commit} failed: "
                    f"{out.decode('utf-8', 'replace').strip()[-200:]}"
                )
            _extract(out, dest, where)
        else:
            shutil.copytree(
                source, dest, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git")
            )
        _commit(dest, where)
    except BaseException:
        remove_tree(dest)
        raise
    return kind


def _commit(tree: Path, where: str) -> None:
    """Make ``tree`` a git repository with one commit of everything it holds (``base``)."""
    for args in (
        ("init", "-q", "-b", "base"),
        ("add", "-A", "-f", "."),
        ("commit", "-q", "--no-verify", "--allow-empty", "-m", "base commit"),
    ):
        rc, out = _git(tree, *args)
        if rc != 0:
            raise RepositorySourceError(
                f"{where}: git {args[0]} failed: {out.decode('utf-8', 'replace').strip()[-200:]}"
            )
    # the checkout is handed to every rollout: no hook or config of ours may run in it
    for hook in (tree / ".git" / "hooks").glob("*"):
        hook.unlink()
    os.chmod(tree, 0o755)


def tree_id(tree: Path) -> str:
    """The git tree hash of a checkout made by :func:`checkout`: what its files hold, exactly.

    The cache key of a task's environment uses it (a trimmed tree at the same base commit is
    another tree).

    Raises:
        RepositorySourceError: ``tree`` is not such a checkout.
    """
    rc, out = _git(tree, "rev-parse", "HEAD^{tree}")
    if rc != 0:
        raise RepositorySourceError(
            f"{tree}: not a checkout ({out.decode('utf-8', 'replace').strip()[-120:]})"
        )
    return out.decode("ascii").strip()
