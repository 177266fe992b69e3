"""Worker slots: the slot uid, its host-wide lock, lending it the workdir, sweeping its processes.

As root, every sandboxed run of worker slot ``s`` runs as uid ``SLOT_UID_BASE + s``; runs of
one slot never overlap (a host-wide lock), the workspace is handed to the slot uid for the run
and handed back afterwards, and at the end every process of the uid is killed.

The kernel keeps keyrings per uid (the user and user-session keyrings, and the persistent
keyring), and they outlive every process of the uid: what one rollout stored there, the next
rollout of the slot -- or a later run -- could read. The seccomp filter
(:mod:`reliabench.sandbox.seccomp`) denies the keyring calls inside every sandbox; on top of
that the slot's keyrings are cleared when the slot is taken and when it is given back, which
covers keys left by an earlier version, by a path without the filter, or by a host without one.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import logging
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from reliabench.errors import SandboxError
from reliabench.files.untrusted import ChownReport, chown_tree, remove_tree
from reliabench.sandbox import seccomp
from reliabench.sandbox.base import DEFAULT_PATH
from reliabench.sandbox.rootfs import ancestors

__all__ = [
    "SLOT_UID_BASE",
    "clear_keyrings",
    "hold_slot",
    "kill_uid",
    "lend_workdir",
    "procs_of_uid",
    "remove_files_of",
    "slot_uid",
    "uid_can_reach",
]

logger = logging.getLogger(__name__)

SLOT_UID_BASE = 61000
"""Worker slot ``s`` runs as uid and gid ``SLOT_UID_BASE + s`` when reliabench runs as root."""


def slot_uid(slot: int) -> int:
    """The dedicated uid (and gid) of worker slot ``slot`` when running as root.

    Args:
        slot: The worker slot, 0 <= slot < 4000.

    Returns:
        ``SLOT_UID_BASE + slot``.

    Raises:
        SandboxError: ``slot`` is out of range.
    """
    if not 0 <= slot < 4000:
        raise SandboxError(f"slot must be in [0, 4000), got {slot!r}")
    return SLOT_UID_BASE + slot



def procs_of_uid(uid: int) -> list[int]:
    """Live (non-zombie) processes whose /proc entry belongs to ``uid``."""
    pids: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):  # a zombie is dead; its parent reaps it
            pids.append(int(entry.name))
    return pids


def kill_uid(uid: int, *, timeout: float = 5.0) -> None:
    """Kill every process of ``uid``: ``kill(-1)`` run as that uid, then a /proc sweep.

    Raises:
        SandboxError: Processes of the uid survived ``timeout`` seconds of killing.
    """
    if uid == 0 or uid == os.getuid():
        raise SandboxError(f"refusing to kill every process of uid {uid}")
    kill = shutil.which("kill")
    if kill is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                [kill, "-KILL", "-1"],
                user=uid,
                group=uid,
                extra_groups=[],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
                env={"PATH": DEFAULT_PATH},
            )
    deadline = time.monotonic() + timeout
    while True:
        pids = procs_of_uid(uid)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise SandboxError(f"processes of uid {uid} survived the sweep: {pids[:10]}")
        time.sleep(0.01)


def _chown_tree(root: Path, uid: int, gid: int) -> ChownReport:
    """Hand a tree to ``uid``; never follows symlinks, skips files with several links.

    Never raises for what the tree holds (a chain deeper than PATH_MAX, a file that cannot be
    chowned): those are counted in the report -- the agent made them, the harness goes on.
    """
    return chown_tree(root, uid, gid)


def _lock_dir() -> Path:
    """A root-only directory for the slot locks (an agent must not be able to hold one)."""
    for candidate in (Path("/run/reliabench"), Path(tempfile.gettempdir()) / "reliabench-root"):
        with contextlib.suppress(OSError):
            candidate.mkdir(mode=0o700, exist_ok=True)
            st = os.lstat(candidate)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o077:
                return candidate
    raise SandboxError("cannot create a private directory for the sandbox slot locks")


@contextlib.contextmanager
def hold_slot(uid: int | None) -> Iterator[None]:
    """Hold the host-wide lock of a slot uid while it runs.

    Runs of one uid never overlap, even across processes: the final sweep kills every process
    of the uid, so a second run of the same slot would be killed by the first one's sweep.
    """
    if uid is None:
        yield
        return
    fd = os.open(_lock_dir() / f"slot-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        clear_keyrings(uid)
        try:
            yield
        finally:
            clear_keyrings(uid)
    finally:
        os.close(fd)


_KEY_SPEC_THREAD_KEYRING = -1
_KEY_SPEC_USER_KEYRING = -4
_KEY_SPEC_USER_SESSION_KEYRING = -5
_KEYCTL_CLEAR = 7
_KEYCTL_GET_PERSISTENT = 22
_NO_KEYS = (errno.ENOSYS, errno.EOPNOTSUPP)  # a kernel without keys or persistent keyrings


def clear_keyrings(uid: int) -> None:
    """Empty the user, user-session and persistent keyrings of ``uid`` (as root).

    The calls are made as ``uid`` by a short-lived thread that switches only its own
    credentials with the raw ``setresuid`` system call (glibc's wrapper would switch every
    thread of the process); the thread ends with them. Nothing here runs code of the uid.

    Raises:
        SandboxError: A keyring of the uid could not be cleared and no seccomp filter keeps
            the sandboxes from reading it (the uid may have taken the write permission off
            its own keyring).
    """
    numbers = seccomp.SYSCALL_NUMBERS.get(os.uname().machine)
    if numbers is None or os.geteuid() != 0:
        return
    failed: list[str] = []

    def call(*args: int) -> int:
        rc = int(seccomp._libc.syscall(*(ctypes.c_long(a) for a in args)))
        return rc if rc >= 0 else -ctypes.get_errno()

    def as_uid() -> None:
        if call(numbers["setresgid"], uid, uid, uid) < 0 or call(numbers["setresuid"], uid, uid, uid) < 0:
            failed.append(f"setresuid({uid}) failed")
            return
        rings = [_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING]
        persistent = call(numbers["keyctl"], _KEYCTL_GET_PERSISTENT, -1, _KEY_SPEC_THREAD_KEYRING)
        if persistent >= 0:
            rings.append(persistent)
        elif -persistent not in _NO_KEYS:
            failed.append(f"persistent keyring: {os.strerror(-persistent)}")
        for ring in rings:
            rc = call(numbers["keyctl"], _KEYCTL_CLEAR, ring)
            if rc < 0 and -rc not in _NO_KEYS:
                failed.append(f"keyring {ring}: {os.strerror(-rc)}")

    worker = threading.Thread(target=as_uid, name=f"rb-keyrings-{uid}", daemon=True)
    worker.start()
    worker.join()
    if not failed:
        return
    message = f"the keyrings of slot uid {uid} could not be cleared ({'; '.join(failed)})"
    if seccomp.active_filter():
        logger.warning("%s; the seccomp filter keeps the sandboxes from reading them", message)
        return
    raise SandboxError(message + " and no seccomp filter keeps the sandboxes from reading them")


@contextlib.contextmanager
def lend_workdir(workdir: Path, uid: int | None) -> Iterator[None]:
    """Give ``workdir`` to the slot uid (mode 0700) for the run, then give it back."""
    if uid is None:
        yield
        return
    st = os.stat(workdir)
    _chown_tree(workdir, uid, uid)
    os.chmod(workdir, 0o700)
    try:
        yield
    finally:
        _chown_tree(workdir, st.st_uid, st.st_gid)
        os.chmod(workdir, stat.S_IMODE(st.st_mode))


def uid_can_reach(path: str, uid: int, gid: int, *, need: int) -> str | None:
    """Return the first component that ``uid`` cannot traverse or use, or None if all is well.

    ``need`` is the permission bit triple wanted on the last component (4 r, 2 w, 1 x); ACLs
    and capabilities are ignored (a conservative check for a fresh, group-less uid).
    """

    def allowed(st: os.stat_result, bits: int) -> bool:
        mode = stat.S_IMODE(st.st_mode)
        if st.st_uid == uid:
            return (mode >> 6) & bits == bits
        if st.st_gid == gid:
            return (mode >> 3) & bits == bits
        return mode & bits == bits

    real = os.path.realpath(path)
    # The kernel walks the path as written (a symlink such as a venv's bin/python sits in a
    # directory that must be traversable too) and then the target it resolves to.
    literal = os.path.abspath(path)
    for anc in dict.fromkeys(["/", *ancestors(literal), *ancestors(real)]):
        try:
            if not allowed(os.stat(anc), 1):
                return anc
        except OSError:
            return anc
    try:
        if not allowed(os.stat(real), need):
            return real
    except OSError:
        return real
    return None


def remove_files_of(uid: int) -> None:
    """Remove what ``uid`` left at the top of ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (no link followed)."""
    for base in ("/tmp", "/var/tmp", "/dev/shm"):
        with contextlib.suppress(OSError):
            for entry in os.scandir(base):
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_uid != uid:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        remove_tree(Path(entry.path))
                    else:
                        os.unlink(entry.path)


