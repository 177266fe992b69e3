"""The seccomp filter of every sandbox path: a classic-BPF program built here, in pure Python.

Every rollout of a slot runs as the same uid in the initial user namespace. What the kernel
keeps per *uid* rather than per process outlives a rollout, the sweeps of
:mod:`reliabench.sandbox.slots` cannot see it, and the next rollout of the slot (or of a later
run) reads it: the kernel keyrings are the case that was exploited (issue 20: the hidden test
file ``add_key``'d into the uid's user keyring, read back with ``keyctl`` by the next agent).
The filter closes the class at the system-call boundary, like Docker's default profile: the
calls below fail inside the sandbox, whatever their arguments.

The program (:func:`filter_program`) checks ``seccomp_data.arch`` first: a call of another
ABI (i386 through ``int 0x80`` or the x32 bit ``0x40000000`` on x86_64, AArch32 on aarch64)
kills the process, as those ABIs have their own numbers that a per-ABI table would not
catch. Then every denied call returns ``EPERM`` (``clone3`` ``ENOSYS``, so that glibc falls
back to ``clone``, whose flags the program can read); everything else is allowed.

What is denied, group by group (:data:`DENIED_GROUPS`), and why:

==================  ==========================================================================
group               reason
==================  ==========================================================================
keyring             ``add_key``, ``keyctl``, ``request_key``: the keyrings are per uid (user,
                    user-session, persistent keyring) or inherited from the harness (its
                    session keyring, which a ``setuid`` does not change) and outlive the
                    rollout: a channel between rollouts, slots and runs (issue 20, finding 3)
namespaces          ``unshare``, ``setns``, and ``clone`` with any ``CLONE_NEW*`` flag: a user
                    namespace makes the slot uid root of its own mount, net and pid namespaces
                    (a large kernel surface; Docker denies these without ``CAP_SYS_ADMIN``)
mount               ``mount``, ``umount2``, ``pivot_root`` and the new mount API (``fsopen``,
                    ``fsconfig``, ``fsmount``, ``fspick``, ``move_mount``, ``open_tree``,
                    ``mount_setattr``): the file-system view is the sandbox's, set up before
                    the filter
kernel_code         ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*``,
                    ``lookup_dcookie``: kernel attack surface (eBPF, perf, userfaultfd races,
                    io_uring, which also runs operations outside the filter's view)
modules             ``init_module``, ``finit_module``, ``delete_module``, ``create_module``,
                    ``get_kernel_syms``, ``query_module``, ``kexec_load``, ``kexec_file_load``
other_processes     ``ptrace``, ``process_vm_readv``, ``process_vm_writev``, ``kcmp``,
                    ``pidfd_getfd``, ``process_madvise``: reading or steering another process
                    (stricter than current Docker, which allows ``ptrace`` on kernels >= 4.8:
                    tests do not need a debugger)
file_handles        ``name_to_handle_at``, ``open_by_handle_at``: open a file by its handle,
                    past the directories that hide it (the "shocker" container escape)
numa                ``get_mempolicy``, ``set_mempolicy``, ``set_mempolicy_home_node``,
                    ``mbind``, ``migrate_pages``, ``move_pages``: Docker allows them with
                    ``CAP_SYS_NICE`` only, which the slot uid never has
host_admin          ``acct``, ``reboot``, ``swapon``, ``swapoff``, ``quotactl``,
                    ``quotactl_fd``, ``settimeofday``, ``clock_settime``, ``clock_adjtime``,
                    ``syslog``, ``vhangup``, ``nfsservctl``: the host's, never the rollout's
obsolete            ``_sysctl``, ``sysfs``, ``ustat``, ``uselib`` (x86_64 only; ``vm86``,
                    ``vm86old`` and ``stime`` exist on i386 only, whose ABI is killed anyway)
==================  ==========================================================================

``personality`` is allowed only with the values Docker allows (``0``, ``PER_LINUX32``,
``UNAME26`` and both, and the query ``0xffffffff``): ``ADDR_NO_RANDOMIZE`` and the other
flags are denied.

What the sandbox itself still does after the filter is in force, and so must stay allowed:
``bwrap`` loads it (``--seccomp FD``) after its own namespaces and mounts, then ``prlimit``
(``prlimit64``) and ``setpriv`` (``setresuid``, ``setgroups``, ``capset``, ``prctl``) run under
it; the ``namespaces`` backend installs it in the child right after its ``unshare``; the warm
child installs it last, after its mounts, ``pivot_root`` and the uid drop. Python itself,
threads (``clone``, ``clone3`` falling back), ``fork``, ``subprocess``, ``multiprocessing``,
numpy and pytest use none of the denied calls.

Tables of system-call numbers per machine (:data:`SYSCALL_NUMBERS`) cover x86_64 and aarch64;
on another machine there is no filter, and the sandbox result says so (``seccomp=False``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import logging
import os
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reliabench.errors import SandboxError

__all__ = [
    "AUDIT_ARCH",
    "CLONE_NAMESPACE_FLAGS",
    "DENIED_GROUPS",
    "RET_ALLOW",
    "RET_ERRNO",
    "RET_KILL_PROCESS",
    "SYSCALL_NUMBERS",
    "DeniedGroup",
    "active_filter",
    "filter_program",
    "filter_unavailable_reason",
    "install_filter",
    "preexec_confinement",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DeniedGroup:
    """System calls denied for one reason (see the module docstring).

    Attributes:
        name: Short name of the group.
        syscalls: The calls (names of the kernel's tables; a call a machine lacks is skipped).
        errno: What a denied call returns (``EPERM``; ``ENOSYS`` for ``clone3``).
    """

    name: str
    syscalls: tuple[str, ...]
    errno: int = errno.EPERM


DENIED_GROUPS: tuple[DeniedGroup, ...] = (
    DeniedGroup("keyring", ("add_key", "keyctl", "request_key")),
    DeniedGroup("namespaces", ("unshare", "setns")),
    DeniedGroup("namespaces_clone3", ("clone3",), errno.ENOSYS),
    DeniedGroup("mount", ("mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount",
                          "fspick", "move_mount", "open_tree", "mount_setattr")),
    DeniedGroup("kernel_code", ("bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
                                "io_uring_enter", "io_uring_register", "lookup_dcookie")),
    DeniedGroup("modules", ("init_module", "finit_module", "delete_module", "create_module",
                            "get_kernel_syms", "query_module", "kexec_load", "kexec_file_load")),
    DeniedGroup("other_processes", ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
                                    "pidfd_getfd", "process_madvise")),
    DeniedGroup("file_handles", ("name_to_handle_at", "open_by_handle_at")),
    DeniedGroup("numa", ("get_mempolicy", "set_mempolicy", "set_mempolicy_home_node", "mbind",
                         "migrate_pages", "move_pages")),
    DeniedGroup("host_admin", ("acct", "reboot", "swapon", "swapoff", "quotactl", "quotactl_fd",
                               "settimeofday", "clock_settime", "clock_adjtime", "syslog",
                               "vhangup", "nfsservctl")),
    DeniedGroup("obsolete", ("_sysctl", "sysfs", "ustat", "uselib")),
)
"""Every denied call, by group; ``clone`` with namespace flags and ``personality`` are
decided on their arguments (see the module docstring)."""

# the kernel's numbers (x86_64: arch/x86/entry/syscalls/syscall_64.tbl; aarch64: the generic
# table include/uapi/asm-generic/unistd.h)
_COMMON_NEW = {  # numbers shared by every architecture since the unified table (424+)
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "clone3": 435, "pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442,
    "quotactl_fd": 443, "set_mempolicy_home_node": 450,
}
SYSCALL_NUMBERS: Mapping[str, Mapping[str, int]] = {
    "x86_64": {
        **_COMMON_NEW,
        "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "setns": 308,
        "clone": 56, "personality": 135, "mount": 165, "umount2": 166, "pivot_root": 155,
        "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "lookup_dcookie": 212,
        "init_module": 175, "finit_module": 313, "delete_module": 176, "create_module": 174,
        "get_kernel_syms": 177, "query_module": 178, "kexec_load": 246, "kexec_file_load": 320,
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
        "name_to_handle_at": 303, "open_by_handle_at": 304, "get_mempolicy": 239,
        "set_mempolicy": 238, "mbind": 237, "migrate_pages": 256, "move_pages": 279,
        "acct": 163, "reboot": 169, "swapon": 167, "swapoff": 168, "quotactl": 179,
        "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305, "syslog": 103,
        "vhangup": 153, "nfsservctl": 180, "_sysctl": 156, "sysfs": 139, "ustat": 136,
        "uselib": 134, "setresuid": 117, "setresgid": 119,
    },
    "aarch64": {
        **_COMMON_NEW,
        "add_key": 217, "request_key": 218, "keyctl": 219, "unshare": 97, "setns": 268,
        "clone": 220, "personality": 92, "mount": 40, "umount2": 39, "pivot_root": 41,
        "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "lookup_dcookie": 18,
        "init_module": 105, "finit_module": 273, "delete_module": 106, "kexec_load": 104,
        "kexec_file_load": 294, "ptrace": 117, "process_vm_readv": 270,
        "process_vm_writev": 271, "kcmp": 272, "name_to_handle_at": 264,
        "open_by_handle_at": 265, "get_mempolicy": 236, "set_mempolicy": 237, "mbind": 235,
        "migrate_pages": 238, "move_pages": 239, "acct": 89, "reboot": 142, "swapon": 224,
        "swapoff": 225, "quotactl": 60, "settimeofday": 170, "clock_settime": 112,
        "clock_adjtime": 266, "syslog": 116, "vhangup": 58, "nfsservctl": 42,
        "setresuid": 147, "setresgid": 149,
    },
}
"""System-call numbers per machine (``os.uname().machine``): the denied calls, ``clone``,
``personality``, and the two calls the keyring clean-up of :mod:`reliabench.sandbox.slots`
makes (``setresuid``, ``setresgid``)."""

AUDIT_ARCH: Mapping[str, int] = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
"""``seccomp_data.arch`` of the native ABI of each machine (``AUDIT_ARCH_*``)."""

_X32_SYSCALL_BIT = 0x40000000
CLONE_NAMESPACE_FLAGS = 0x7E020000
"""``CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET`` (``CLONE_NEWTIME``
is 0x80, the exit-signal byte of ``clone``: only ``unshare`` and ``clone3`` take it)."""
_PERSONALITY_ALLOWED = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)  # Docker's list

# classic BPF (linux/filter.h, linux/seccomp.h)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # struct seccomp_data; arg 0 low word (little-endian)
_INSN = struct.Struct("=HBBI")  # struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return _INSN.pack(code, jt, jf, k)


def filter_program(machine: str | None = None) -> bytes:
    """The filter for ``machine`` as an array of ``struct sock_filter`` (what bwrap's ``--seccomp`` reads).

    Args:
        machine: ``x86_64`` or ``aarch64``; None: this machine.

    Returns:
        The program; 8 bytes per instruction.

    Raises:
        SandboxError: No table for ``machine``.
    """
    machine = os.uname().machine if machine is None else machine
    numbers = SYSCALL_NUMBERS.get(machine)
    if numbers is None:
        raise SandboxError(f"no seccomp system-call table for machine {machine!r}; "
                           f"known: {', '.join(sorted(SYSCALL_NUMBERS))}")
    prog = [
        _insn(_LD_W_ABS, _OFF_ARCH),
        _insn(_JEQ_K, AUDIT_ARCH[machine], jt=1),
        _insn(_RET_K, RET_KILL_PROCESS),
        _insn(_LD_W_ABS, _OFF_NR),
    ]
    if machine == "x86_64":  # the x32 ABI: same arch value, numbers with bit 30 set
        prog += [_insn(_JGE_K, _X32_SYSCALL_BIT, jf=1), _insn(_RET_K, RET_KILL_PROCESS)]
    for group in DENIED_GROUPS:
        for name in group.syscalls:
            if name in numbers:
                prog += [_insn(_JEQ_K, numbers[name], jf=1), _insn(_RET_K, RET_ERRNO | group.errno)]
    # clone: deny the namespace flags (flags are the first argument on both machines)
    prog += [
        _insn(_JEQ_K, numbers["clone"], jf=4),
        _insn(_LD_W_ABS, _OFF_ARG0),
        _insn(_JSET_K, CLONE_NAMESPACE_FLAGS, jf=1),
        _insn(_RET_K, RET_ERRNO | errno.EPERM),
        _insn(_RET_K, RET_ALLOW),
    ]
    n = len(_PERSONALITY_ALLOWED)
    prog += [_insn(_JEQ_K, numbers["personality"], jf=n + 3), _insn(_LD_W_ABS, _OFF_ARG0)]
    prog += [_insn(_JEQ_K, value, jt=n - i) for i, value in enumerate(_PERSONALITY_ALLOWED)]
    prog += [_insn(_RET_K, RET_ERRNO | errno.EPERM), _insn(_RET_K, RET_ALLOW)]
    prog.append(_insn(_RET_K, RET_ALLOW))
    return b"".join(prog)


# ---------------------------------------------------------------------------- installing it

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}
_SECCOMP_GET_ACTION_AVAIL = 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                        ctypes.c_ulong]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.syscall.restype = ctypes.c_long


def _errno_error(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


class _Installer:
    """A program held in C memory, and the calls that install it (nothing allocated at call time).

    Made in the parent, so that a ``preexec_fn`` in a forked child only makes system calls.
    """

    def __init__(self, program: bytes, unshare_flags: int = 0) -> None:
        self._buf = ctypes.create_string_buffer(program, len(program))
        self._prog = _SockFprog(len(program) // _INSN.size, ctypes.addressof(self._buf))
        self._addr = ctypes.addressof(self._prog)
        self._unshare_flags = unshare_flags

    def __call__(self) -> None:
        if self._unshare_flags and _libc.unshare(self._unshare_flags) != 0:
            raise _errno_error(f"unshare({self._unshare_flags:#x})")
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _errno_error("prctl(PR_SET_NO_NEW_PRIVS)")
        if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, self._addr, 0, 0) != 0:
            raise _errno_error("prctl(PR_SET_SECCOMP)")


def install_filter(program: bytes | None = None) -> None:
    """Install the filter on the calling thread (and what it starts), with ``no_new_privs``.

    Call it in a single-threaded process (a forked child before it runs anything untrusted):
    other threads of the process stay unfiltered.

    Args:
        program: A program from :func:`filter_program`; None: this machine's.

    Raises:
        OSError: The kernel refused the filter.
        SandboxError: No table for this machine.
    """
    _Installer(filter_program() if program is None else program)()


def preexec_confinement(unshare_flags: int = 0) -> Callable[[], None]:
    """A ``preexec_fn``: ``unshare(unshare_flags)`` (if any), ``no_new_privs``, the filter.

    Everything is prepared here, in the parent: the child only makes three system calls.

    Raises:
        SandboxError: No table for this machine.
    """
    return _Installer(filter_program(), unshare_flags)


@functools.cache
def filter_unavailable_reason() -> str | None:
    """Why this host cannot install the filter (no table, no seccomp filter mode), or None.

    Asks the kernel whether the two actions the filter returns exist
    (``seccomp(SECCOMP_GET_ACTION_AVAIL)``, Linux 4.14+), without installing anything.
    """
    machine = os.uname().machine
    if machine not in SYSCALL_NUMBERS:
        return f"no seccomp system-call table for machine {machine!r}"
    for action in (RET_KILL_PROCESS, RET_ERRNO):
        value = ctypes.c_uint32(action)
        rc = _libc.syscall(ctypes.c_long(_SYS_SECCOMP[machine]),
                           ctypes.c_long(_SECCOMP_GET_ACTION_AVAIL), ctypes.c_long(0),
                           ctypes.byref(value))
        if rc != 0:
            err = ctypes.get_errno()
            return f"the kernel has no seccomp filter action {action:#x}: {os.strerror(err)}"
    return None


def active_filter() -> bool:
    """Whether the sandboxes of this process install the filter (warns once when they cannot)."""
    why = filter_unavailable_reason()
    if why is not None:
        _warn_once(why)
    return why is None


@functools.cache
def _warn_once(why: str) -> None:
    logger.warning("sandboxes run without a seccomp filter (%s): the kernel keyrings and the "
                   "other calls of docs/threat-model.md are not denied", why)
