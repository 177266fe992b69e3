"""Host-side access to files an agent wrote: never follow its links, never block, never recurse.

Every read of a rollout's workspace by the runner (tamper checks, change sets, diffs,
snapshots, chown and clean-up) goes through this module, because the runner is root on the
host and the workspace is the adversary's:

* :func:`read_bounded` opens with ``O_NOFOLLOW | O_NONBLOCK``, checks ``fstat`` for a regular
  file and reads at most ``limit + 1`` bytes: a symbolic link, FIFO, socket or device is
  never read through (a FIFO would block a plain ``open``; a link to ``/etc/shadow`` would
  leak it into an artifact);
* :func:`open_regular` and :func:`read_file` are the same rule for run directories, suites
  and folders of results that reliabench reads (reports, ``view``, exports, imports,
  ``score``, ``scan``, suite loading): with ``under=ROOT`` no component below ``ROOT`` is
  followed either (each directory is opened with ``O_NOFOLLOW`` relative to its parent), and
  a file larger than the caller's limit is refused, never read whole; failures are
  ``OSError`` subclasses with a ``strerror`` a message can quote (:class:`NotRegularFileError`,
  :class:`FileTooLargeError`);
* :func:`find_files` lists the regular files of a folder whose names match a pattern,
  without following links (``Path.rglob`` yields links, and ``is_file()`` follows them);
* :func:`walk_tree` lists a tree iteratively with ``lstat`` (``os.walk`` recurses in Python
  3.11 and raises ``RecursionError`` on a chain of a few thousand directories), stops at
  :data:`MAX_DEPTH` levels and reports what it could not list instead of raising;
* :func:`chown_tree` and :func:`remove_tree` never raise for what the tree holds: a path
  longer than ``PATH_MAX``, an un-chownable or undeletable file is counted, not fatal.
  :func:`remove_tree` hoists deep subdirectories to the top of the tree it removes, so
  paths stay short however deep the agent nested them.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final, Literal

__all__ = [
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "ChownReport",
    "FileTooLargeError",
    "NotRegularFileError",
    "TreeEntry",
    "chown_tree",
    "file_kind",
    "find_files",
    "open_regular",
    "read_bounded",
    "read_file",
    "remove_tree",
    "walk_tree",
]

MAX_DEPTH: Final = 128
"""Directories deeper than this below the root are reported, not listed."""

_NOFOLLOW_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)

MAX_DOCUMENT_BYTES: Final = 512 * 1024 * 1024
"""The largest document (JSON, TOML, a prompt) reliabench reads whole from a run, suite or folder."""

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)

Kind = Literal["file", "dir", "link", "special", "error"]


class NotRegularFileError(OSError):
    """The path is a symbolic link, a FIFO, a socket, a device or a directory: not read."""


class FileTooLargeError(OSError):
    """The file is larger than the caller's limit: not read."""


def _open_nofollow(path: str | os.PathLike[str], under: str | os.PathLike[str] | None) -> int:
    """A descriptor of the regular file ``path``; no link followed (below ``under`` either)."""
    target = os.fspath(path)
    parent_fd: int | None = None
    name = target
    try:
        if under is not None:
            rel = os.path.relpath(os.path.abspath(target), os.path.abspath(os.fspath(under)))
            parts = rel.split(os.sep)
            if rel == os.curdir or os.pardir in parts or os.path.isabs(rel):
                raise NotRegularFileError(errno.EINVAL, "not a file inside the folder read", target)
            parent_fd = os.open(os.fspath(under), os.O_RDONLY | os.O_DIRECTORY)
            for part in parts[:-1]:
                try:
                    fd = os.open(part, _DIR_FLAGS, dir_fd=parent_fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise NotRegularFileError(errno.ELOOP, "a symbolic link or not a folder on the "
                                                  "way (not followed)", target) from None
                    raise
                os.close(parent_fd)
                parent_fd = fd
            name = parts[-1]
        try:
            fd = os.open(name, _NOFOLLOW_FLAGS, dir_fd=parent_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise NotRegularFileError(errno.ELOOP, "a symbolic link (not followed)", target) from None
            if exc.errno == errno.ENXIO:  # a socket
                raise NotRegularFileError(errno.ENXIO, "not a regular file (not read)", target) from None
            raise
    finally:
        if parent_fd is not None:
            os.close(parent_fd)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise NotRegularFileError(errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL,
                                  f"{what} (not read)", target)
    os.set_blocking(fd, True)
    return fd


@contextlib.contextmanager
def open_regular(path: str | os.PathLike[str], *,
                 under: str | os.PathLike[str] | None = None) -> Iterator[BinaryIO]:
    """Open a regular file for reading without following a link (nor one below ``under``).

    Args:
        path: The file.
        under: A folder that ``path`` lies in (the run directory, the suite, the folder of
            results the user named): no component between it and the file is followed.

    Raises:
        NotRegularFileError: ``path`` (or a folder on the way) is a link, a FIFO, a socket,
            a device or a directory.
        OSError: it does not exist or cannot be opened (``FileNotFoundError``, ...).
    """
    fd = _open_nofollow(path, under)
    with os.fdopen(fd, "rb") as fh:
        yield fh


def read_file(path: str | os.PathLike[str], limit: int = MAX_DOCUMENT_BYTES, *,
              under: str | os.PathLike[str] | None = None) -> bytes:
    """The whole content of a regular file of at most ``limit`` bytes (see :func:`open_regular`).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = (Path(d) / "f").write_bytes(b"abc")
        ...     (Path(d) / "l").symlink_to(Path(d) / "f")
        ...     try:
        ...         read_file(Path(d) / "l")
        ...     except NotRegularFileError as exc:
        ...         print(read_file(Path(d) / "f", under=d), exc.strerror)
        b'abc' a symbolic link (not followed)

    Raises:
        FileTooLargeError: the file holds more than ``limit`` bytes.
        NotRegularFileError, OSError: as :func:`open_regular`.
    """
    with open_regular(path, under=under) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(errno.EFBIG, f"larger than {limit} bytes (not read)", os.fspath(path))
    return data


def find_files(root: Path, pattern: str, *, max_depth: int = MAX_DEPTH) -> list[Path]:
    """The regular files below ``root`` whose names match ``pattern`` (``fnmatch``), sorted.

    Links (to files or folders) are neither listed nor followed; see :func:`walk_tree`.
    """
    found = [root / e.rel for e in walk_tree(root, max_depth=max_depth)
             if e.kind == "file" and fnmatch.fnmatchcase(e.rel.rsplit("/", 1)[-1], pattern)]
    return sorted(found)


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """Up to ``limit + 1`` bytes of a regular file, without following links; None if unreadable.

    Reading ``limit + 1`` bytes lets the caller tell "exactly ``limit``" from "larger".
    Symbolic links, FIFOs, sockets and devices give None without being read.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = Path(d) / "f"
        ...     _ = p.write_bytes(b"abcdef")
        ...     os.mkfifo(Path(d) / "fifo")
        ...     read_bounded(p, 3), read_bounded(Path(d) / "fifo", 3)
        (b'abcd', None)
    """
    try:
        fd = os.open(path, _NOFOLLOW_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def file_kind(path: str | os.PathLike[str]) -> Kind:
    """``file``, ``dir``, ``link``, ``special`` (FIFO, socket, device) or ``error``, by ``lstat``."""
    try:
        return _kind_of(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return "error"


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One entry below the root of :func:`walk_tree`.

    Attributes:
        rel: POSIX path relative to the root (non-UTF-8 bytes as lone surrogates, the
            ``os.fsdecode`` convention, so ``os.fsencode(rel)`` gives the real name back).
        kind: ``file``, ``dir``, ``link``, ``special`` or ``error`` (could not be listed or
            examined: too deep, path too long, vanished, permission).
        size: ``st_size`` for a regular file, else 0.
        mode: ``st_mode`` (0 for ``error``).
        nlink: ``st_nlink`` (0 for ``error``).
        error: Why a ``kind == "error"`` entry could not be examined.
    """

    rel: str
    kind: Kind
    size: int = 0
    mode: int = 0
    nlink: int = 0
    error: str = ""


def _kind_of(mode: int) -> Kind:
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    return "special"


def walk_tree(root: Path, *, max_depth: int = MAX_DEPTH,
              skip_dir: object = None) -> Iterator[TreeEntry]:
    """Every entry below ``root``, parents before children, without following links.

    Iterative (no recursion limit), ``lstat`` only. A directory that cannot be listed, or that
    lies deeper than ``max_depth``, is yielded once more as an ``error`` entry and not
    descended into; nothing raises for what the tree holds.

    Args:
        root: The directory to walk (trusted: the runner made it).
        max_depth: Directories at this depth (1 = directly under ``root``) are not listed.
        skip_dir: An optional callable ``(rel) -> bool``; True keeps a directory's content out.

    Yields:
        ``TreeEntry`` objects in a stable (sorted) order.
    """
    stack: list[tuple[str, int]] = [("", 0)]
    while stack:
        rel_dir, depth = stack.pop()
        base = os.path.join(root, rel_dir) if rel_dir else os.fspath(root)
        if depth >= max_depth:
            yield TreeEntry(rel_dir, "error", error=f"deeper than {max_depth} directory levels: not read")
            continue
        try:
            with os.scandir(base) as it:
                names = sorted(e.name for e in it)
        except (OSError, ValueError) as exc:
            if rel_dir:
                yield TreeEntry(rel_dir, "error", error=f"cannot list: {_why(exc)}")
            continue
        subdirs: list[str] = []
        for name in names:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            try:
                st = os.lstat(os.path.join(base, name))
            except (OSError, ValueError) as exc:
                yield TreeEntry(rel, "error", error=f"cannot examine: {_why(exc)}")
                continue
            kind = _kind_of(st.st_mode)
            yield TreeEntry(rel, kind, st.st_size if kind == "file" else 0, st.st_mode, st.st_nlink)
            if kind == "dir" and not (callable(skip_dir) and skip_dir(rel)):
                subdirs.append(rel)
        stack.extend((d, depth + 1) for d in reversed(subdirs))


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__


@dataclass(frozen=True, slots=True)
class ChownReport:
    """What :func:`chown_tree` did: entries changed and entries it could not change."""

    changed: int
    failed: int
    first_error: str = ""


def chown_tree(root: Path, uid: int, gid: int) -> ChownReport:
    """Hand every entry of a tree to ``uid:gid``; never follows links, never raises for entries.

    Files with several hard links are skipped (a hard link could point outside the tree), and
    set-uid/set-gid bits are cleared on regular files. ``root`` itself is the caller's and
    must be chowned (an ``OSError`` there propagates: the harness's own directory is broken).
    """
    os.lchown(root, uid, gid)
    changed = failed = 0
    first = ""
    for entry in walk_tree(root):
        if entry.kind == "error":
            failed += 1
            first = first or f"{entry.rel}: {entry.error}"
            continue
        if entry.kind == "file" and entry.nlink > 1:
            continue
        path = os.path.join(root, entry.rel)
        try:
            os.lchown(path, uid, gid)
            if entry.kind == "file" and entry.mode & 0o6000:
                os.chmod(path, stat.S_IMODE(entry.mode) & ~0o6000)
            changed += 1
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            failed += 1
            first = first or f"{entry.rel}: {_why(exc)}"
    return ChownReport(changed, failed, first)


def remove_tree(root: Path) -> bool:
    """Remove ``root`` and everything below it; True if it is gone. Never raises.

    Works through directory descriptors: each directory's subdirectories are first moved up
    to ``root`` itself (renamed to a fresh name), so no path is ever longer than two levels,
    whatever depth the agent built; non-directories are unlinked where they are. Modes are
    reset so that a directory the agent made unreadable (as the slot uid) can be emptied.
    """
    top = os.fspath(root)
    try:
        if not stat.S_ISDIR(os.lstat(top).st_mode):
            os.unlink(top)
            return True
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        top_fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        pending: list[str] = [""]
        guard = 0
        while pending:
            guard += 1
            if guard > 10_000_000:  # pragma: no cover - a tree that grows while we remove it
                return False
            name = pending[-1]
            try:
                fd = (os.dup(top_fd) if not name
                      else os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top_fd))
            except OSError:
                pending.pop()
                if name:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=top_fd)
                continue
            hoisted = False
            try:
                with contextlib.suppress(OSError):
                    os.fchmod(fd, 0o700)
                with os.scandir(fd) as it:
                    entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
                for child, is_dir in entries:
                    if not is_dir:
                        with contextlib.suppress(OSError):
                            os.unlink(child, dir_fd=fd)
                        continue
                    fresh = f".rb-rm-{uuid.uuid4().hex}"
                    try:
                        os.rename(child, fresh, src_dir_fd=fd, dst_dir_fd=top_fd)
                    except OSError:
                        continue
                    pending.append(fresh)
                    hoisted = True
            except OSError:
                pass
            finally:
                os.close(fd)
            if hoisted:
                continue  # empty the hoisted directories first, then come back to this one
            pending.pop()
            if name:
                with contextlib.suppress(OSError):
                    os.rmdir(name, dir_fd=top_fd)
    finally:
        os.close(top_fd)
    with contextlib.suppress(OSError):
        os.rmdir(top)
    return not os.path.lexists(top)
