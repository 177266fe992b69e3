"""The per-rollout jail of a warm test worker: namespaces, a minimal root, a non-root uid.

Called only in processes forked from the warm server (root), never in the caller. The steps
(what ``bwrap`` does as root, done with system calls in an already warm Python process):

1. :func:`enter_namespaces` (in ``C``, forked by the server straight into new mount, pid and
   IPC namespaces, or unsharing them itself; the server already lives in
   its own empty network and UTS namespaces): ``unshare`` mount, pid and IPC namespaces;
   ``/`` becomes private (no mount event goes back to the host); a tmpfs becomes the new
   root with read-only binds of the system directories, a few ``/etc`` files, the
   interpreter's prefixes and the staged hidden tests, a writable bind of the workspace at
   its own path, a minimal ``/dev``, and private, sized tmpfs mounts on ``/tmp`` (mode 1733:
   not listable, so the names of the host folders bound below it are not shown) and
   ``/dev/shm``; then ``pivot_root`` and the old root is detached.
2. :func:`mount_proc` (in ``C``, pid 1 of the new pid namespace and the test runner): a
   ``/proc`` that shows only the rollout's processes. When ``C`` exits the kernel kills every
   process left in the namespace: nothing a rollout starts outlives it.
3. :func:`drop_privileges` (in ``C``, then): a new session, rlimits, an empty
   capability bounding set, no supplementary groups, the slot's uid and gid, and
   ``no_new_privs``.
4. :func:`confine_syscalls` (in ``C``, last, when the request asks for it): the seccomp
   filter of :mod:`reliabench.sandbox.seccomp`, after every mount, ``pivot_root`` and the uid
   drop above (which it denies), before anything of the rollout runs. A filter that cannot be
   installed fails the set-up: nothing of the rollout runs.
"""

from __future__ import annotations

import os
import resource
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reliabench.sandbox.seccomp import preexec_confinement
from reliabench.warm import _linux as lx

__all__ = ["NS_FLAGS", "TMP_MODE", "JailSpec", "RlimitSpec", "confine_syscalls", "drop_privileges",
           "enter_namespaces", "mount_proc", "syscall_confinement"]

_DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
_DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
              "stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"}
NS_FLAGS = lx.CLONE_NEWNS | lx.CLONE_NEWPID | lx.CLONE_NEWIPC
TMP_MODE = 0o1733
"""The jail's private ``/tmp``: sticky, writable and searchable by all, listable by none but root."""


@dataclass(frozen=True, slots=True)
class JailSpec:
    """What one rollout's root holds.

    Attributes:
        new_root: An empty host directory the new root tmpfs is mounted on (in the child's own
            mount namespace only).
        system: Read-only directories bound at the same path (``/usr``, ``/lib`` ...).
        symlinks: Top-level symlinks recreated as they are (``/bin -> usr/bin``).
        files: Read-only single files bound at the same path (``/etc/passwd`` ...).
        readonly: Further read-only directories (interpreter prefixes, the staged tests).
        workspace: The workspace, bound writable at its own path.
        tmp_bytes: Size of the private ``/tmp``.
        shm_bytes: Size of the private ``/dev/shm``.
        writable: Further host folders bound writable at their own path (the environment's
            channel folder).
    """

    new_root: str
    system: tuple[str, ...]
    symlinks: tuple[tuple[str, str], ...]
    files: tuple[str, ...]
    readonly: tuple[str, ...]
    workspace: str
    tmp_bytes: int
    shm_bytes: int
    writable: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RlimitSpec:
    """The rlimits of the test runner (see :class:`reliabench.sandbox.Limits`)."""

    cpu_s: int
    memory_bytes: int
    max_procs: int
    file_size_bytes: int


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _makedirs(root: str, path: str) -> None:
    """Create ``path`` (absolute) under ``root`` with mode 0755 directories."""
    current = root
    for part in path.strip("/").split("/"):
        current = os.path.join(current, part)
        try:
            os.mkdir(current, 0o755)
        except FileExistsError:
            continue


def _bind(root: str, src: str, *, readonly: bool, is_file: bool = False) -> None:
    target = root + src
    if is_file:
        _makedirs(root, os.path.dirname(src))
        if not os.path.lexists(target):
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
    else:
        _makedirs(root, src)
    lx.mount(src, target, None, lx.MS_BIND | lx.MS_REC)
    flags = lx.MS_BIND | lx.MS_REMOUNT | lx.MS_NOSUID | lx.MS_NODEV
    if readonly:
        flags |= lx.MS_RDONLY
    lx.mount(None, target, None, flags)


def _tmpfs(root: str, path: str, size: int, mode: int, flags: int) -> None:
    _makedirs(root, path)
    lx.mount("tmpfs", root + path, "tmpfs", flags, f"size={size},mode={mode:o}")


def enter_namespaces(spec: JailSpec, *, unshare: bool = True) -> None:
    """Unshare the namespaces and pivot into the rollout's minimal root (see the module doc).

    ``unshare=False``: the caller is already in new namespaces (:func:`_linux.fork_into`).

    Raises:
        OSError: A namespace or mount could not be made (the caller reports it).
    """
    if unshare:
        lx.unshare(NS_FLAGS)
    lx.mount(None, "/", None, lx.MS_REC | lx.MS_PRIVATE)
    root = spec.new_root
    lx.mount("tmpfs", root, "tmpfs", lx.MS_NOSUID | lx.MS_NODEV, "size=4m,mode=755")
    ro_done: list[str] = []
    for d in spec.system:
        _bind(root, d, readonly=True)
        ro_done.append(d)
    for link, target in spec.symlinks:
        os.symlink(target, root + link)
    for f in spec.files:
        _bind(root, f, readonly=True, is_file=os.path.isfile(f))
    nosuid = lx.MS_NOSUID | lx.MS_NODEV
    # /tmp first: the workspace, the staged tests, the channel folder and the interpreter (a
    # clone in a mktemp folder) may live under the host's /tmp, and their binds need mount
    # points there. Mode 1733: the rollout creates and uses files by name, but cannot list
    # /tmp, so the host's folder names behind those mount points are not shown to it.
    _tmpfs(root, "/tmp", spec.tmp_bytes, TMP_MODE, nosuid)
    binds = ([(p, True) for p in spec.readonly] + [(p, False) for p in spec.writable]
             + [(spec.workspace, False)])
    for path, ro in sorted(binds, key=lambda b: (b[0].count("/"), b[0])):
        if ro and any(_under(path, d) for d in ro_done):
            continue  # already visible through a read-only parent
        _bind(root, path, readonly=ro)
        if ro:
            ro_done.append(path)
    _makedirs(root, "/dev")
    lx.mount("tmpfs", root + "/dev", "tmpfs", lx.MS_NOSUID, "size=64k,mode=755")
    for name in _DEV_NODES:
        src = "/dev/" + name
        if os.path.exists(src) and stat.S_ISCHR(os.stat(src).st_mode):
            target = root + src
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o666))
            lx.mount(src, target, None, lx.MS_BIND)
    for name, target in _DEV_LINKS.items():
        os.symlink(target, root + "/dev/" + name)
    _tmpfs(root, "/dev/shm", spec.shm_bytes, 0o1777, nosuid | lx.MS_NOEXEC)
    _makedirs(root, "/proc")
    os.chdir(root)
    lx.pivot_root(".", ".")
    lx.umount2(".", lx.MNT_DETACH)
    os.chdir("/")


def mount_proc() -> None:
    """Mount a ``/proc`` of the new pid namespace (call it as its pid 1)."""
    lx.mount("proc", "/proc", "proc", lx.MS_NOSUID | lx.MS_NODEV | lx.MS_NOEXEC)


def drop_privileges(uid: int, limits: RlimitSpec, env: Mapping[str, str], cwd: str) -> None:
    """Become the rollout's test runner: rlimits, no capabilities, the slot uid, no_new_privs.

    Raises:
        OSError: A step failed (the caller must then exit without running anything).
    """
    os.setsid()
    pairs = (
        (resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1)),
        (resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes)),
        (resource.RLIMIT_NPROC, (limits.max_procs, limits.max_procs)),
        (resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes)),
        (resource.RLIMIT_CORE, (0, 0)),
    )
    for which, value in pairs:
        resource.setrlimit(which, value)
    lx.drop_bounding_set()
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # the effective and permitted capabilities go with uid 0
    lx.set_no_new_privs()
    if os.geteuid() == 0 or os.getegid() == 0:  # pragma: no cover - paranoia
        raise OSError(1, "the test runner is still root")
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)


def syscall_confinement() -> Callable[[], None]:
    """The seccomp filter, built and held in C memory once (the server's), for :func:`confine_syscalls`.

    Raises:
        SandboxError: No filter table for this machine.
    """
    return preexec_confinement()


def confine_syscalls(wanted: bool, install: Callable[[], None] | None = None) -> None:
    """Install the seccomp filter when ``wanted`` (call it last, after :func:`drop_privileges`).

    Args:
        wanted: Whether the request asks for the filter.
        install: The filter prepared once by :func:`syscall_confinement` (None: build it now).

    Raises:
        OSError: The kernel refused the filter (the caller must then exit without running
            anything).
        SandboxError: No filter table for this machine.
    """
    if wanted:
        (install or syscall_confinement())()
