"""Thin ctypes wrappers for the Linux calls Python 3.11 lacks: unshare, mount, pivot_root, prctl.

Only the warm test workers use these, in processes forked from the warm server and never in
the calling process. Every wrapper raises ``OSError`` with the errno on failure.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = [
    "CLONE_NEWIPC",
    "CLONE_NEWNET",
    "CLONE_NEWNS",
    "CLONE_NEWPID",
    "CLONE_NEWUTS",
    "MNT_DETACH",
    "MS_BIND",
    "MS_NODEV",
    "MS_NOEXEC",
    "MS_NOSUID",
    "MS_PRIVATE",
    "MS_RDONLY",
    "MS_REC",
    "MS_REMOUNT",
    "drop_bounding_set",
    "fork_into",
    "mount",
    "pivot_root",
    "prctl",
    "set_no_new_privs",
    "umount2",
    "unshare",
]

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38

_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_SYS_CLONE = {"x86_64": 56, "aarch64": 220}
_SIGCHLD = 17

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                        ctypes.c_ulong]
_libc.syscall.restype = ctypes.c_long
_pylibc = ctypes.PyDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_pylibc.syscall.restype = ctypes.c_long


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _b(value: str | None) -> bytes | None:
    return None if value is None else os.fsencode(value)


def fork_into(flags: int) -> int:
    """``fork()`` straight into new namespaces: ``clone(flags | SIGCHLD)`` with Python's fork hooks.

    One process instead of a fork that unshares and forks again (with ``CLONE_NEWPID`` the
    child is pid 1 of the new pid namespace). The call holds the GIL (``PyDLL``) and runs
    ``PyOS_BeforeFork``/``PyOS_AfterFork_*`` around the system call, as ``os.fork`` does;
    glibc's own fork handlers do not run, so the caller must be single-threaded.

    Returns:
        0 in the child, the child's pid in the parent.

    Raises:
        OSError: The clone failed (or the machine's syscall number is unknown).
    """
    number = _SYS_CLONE.get(os.uname().machine)
    if number is None:
        raise OSError(38, f"clone: unknown syscall number on {os.uname().machine}")
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = int(_pylibc.syscall(number, ctypes.c_ulong(flags | _SIGCHLD), 0, 0, 0, 0))
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    err = ctypes.get_errno()
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(err, f"clone({flags:#x}): {os.strerror(err)}")
    return pid


def unshare(flags: int) -> None:
    """``unshare(2)``: move the caller into new namespaces."""
    _check(_libc.unshare(flags), f"unshare({flags:#x})")


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    """``mount(2)``."""
    _check(_libc.mount(_b(source), _b(target), _b(fstype), flags, _b(data)),
           f"mount {source} on {target}")


def umount2(target: str, flags: int) -> None:
    """``umount2(2)``."""
    _check(_libc.umount2(_b(target), flags), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    """``pivot_root(2)`` through ``syscall(2)`` (glibc has no wrapper)."""
    number = _SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(38, f"pivot_root: unknown syscall number on {os.uname().machine}")
    _check(int(_libc.syscall(number, _b(new_root), _b(put_old))), "pivot_root")


def prctl(option: int, arg2: int = 0) -> None:
    """``prctl(2)`` with one argument."""
    _check(_libc.prctl(option, arg2, 0, 0, 0), f"prctl({option})")


def set_no_new_privs() -> None:
    """``PR_SET_NO_NEW_PRIVS``: no exec can ever gain privileges (setuid bits, file caps)."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def drop_bounding_set() -> None:
    """Drop every capability from the bounding set (needs ``CAP_SETPCAP``)."""
    cap = 0
    while _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1
    if cap == 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_CAPBSET_DROP): {os.strerror(err)}")
