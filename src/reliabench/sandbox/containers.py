"""Container environments: what the ``podman`` and ``docker`` backends share.

One environment (one rollout phase) is one container, started from a prepared image and
removed at :meth:`ContainerEnvironment.close`. Each container gets, whatever the runtime:

* labels ``org.reliabench.owner`` (pid, start time and boot id of the reliabench process that
  made it), ``org.reliabench.created``, ``org.reliabench.slot`` and ``org.reliabench.channel``,
  so that :meth:`ContainerBackend.sweep` removes what a ``kill -9``'d reliabench left;
* ``--network none`` (only ``lo``) unless the network mode is ``host``; for ``endpoint`` the
  relay's socket folder arrives as a :class:`~reliabench.sandbox.environment.Mount`;
* ``--cap-drop ALL``, ``no-new-privileges`` and a seccomp profile made from
  :mod:`reliabench.sandbox.seccomp` (:func:`seccomp_profile`: the same calls denied as on every
  host path, the same ``clone`` and ``personality`` rules, other ABIs killed);
* memory (no swap), processes and CPUs bounded by the runtime's cgroups (``--memory``,
  ``--pids-limit``, ``--cpus``), a sized ``/tmp`` tmpfs, a 64 MiB ``/dev/shm``;
* a read-only root unless the spec has ``writable_root``; the workspace bind-mounted at the
  spec's ``workdir`` (``/workspace``; a host task's at its own host path), the channel folder
  at ``/run/reliabench``;
* as its first process (pid 1) the host's static ``catatonit -P``, bind-mounted read-only and
  run as ``nobody`` (uid 65534): it reaps orphans, runs nothing, and no command of the
  container can signal it (commands run as the slot uid or as a root without capabilities),
  so a rollout cannot end its own container.

Commands (:meth:`ContainerEnvironment.exec`) run through ``RUNTIME exec`` as the spec's user
-- by default the slot uid (61000+slot, numerically, so the workspace lent to it on the host
is writable inside), ``root`` when the spec says so -- with exactly the environment given
(variables through a private ``--env-file``, never on a command line; ``env -u`` removes what
the runtime and the image would add), under ``prlimit`` (CPU seconds, address space,
processes, file size) when the image has it. Wall time and output size are enforced on
this side, like :mod:`reliabench.sandbox.supervision`: output goes to files, cut head and
tail, and a command stopped by a limit has every process it started in the container killed
from the host (found by the container's pid namespace). A command killed by the container's
memory cgroup reports ``memory limit``.

The host must run the runtime rootful and in the host's pid namespace (reliabench reads the
container's processes and cgroups from ``/proc``); reliabench must run as root.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import logging
import os
import posixpath
import resource
import shutil
import signal
import stat
import subprocess
import tarfile
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, Final

from reliabench.errors import SandboxError
from reliabench.files.untrusted import chown_tree, open_regular, remove_tree, walk_tree
from reliabench.records import Isolation
from reliabench.sandbox.base import DEFAULT_PATH, Limits, SandboxResult, minimal_env
from reliabench.sandbox.environment import (
    CONTAINER_CHANNEL_DIR,
    CONTAINER_WORKDIR,
    HOST,
    EnvironmentSpec,
    ImageRef,
    Mount,
    NetworkMode,
    PreparedSpec,
)
from reliabench.sandbox.host import copy_tree_bounded
from reliabench.sandbox.images import (
    CliResult,
    ImageInfo,
    build_image,
    inspect_image,
    output_tail,
    run_cli,
)
from reliabench.sandbox.seccomp import (
    _PERSONALITY_ALLOWED,
    CLONE_NAMESPACE_FLAGS,
    DENIED_GROUPS,
    SYSCALL_NUMBERS,
    filter_unavailable_reason,
)
from reliabench.sandbox.slots import hold_slot, lend_workdir, slot_uid
from reliabench.sandbox.supervision import rlimit_args, run_supervised

__all__ = [
    "DEFAULT_TEST_IMAGE",
    "INIT_TARGET",
    "INIT_UID",
    "LABEL_OWNER",
    "ContainerBackend",
    "ContainerEnvironment",
    "owner_alive",
    "owner_token",
    "seccomp_profile",
]

logger = logging.getLogger(__name__)

DEFAULT_TEST_IMAGE: Final = "reliabench/python3-pytest:bookworm"
"""The image of host tasks and of :meth:`ContainerBackend.run` (the containment self-check):
Debian bookworm with python3 and pytest, built offline by ``scripts/containers/images.sh``.
``RELIABENCH_CONTAINER_IMAGE`` names another."""

INIT_TARGET: Final = "/run/reliabench-init"
"""Where the host's ``catatonit`` is shown read-only in every container (its pid 1)."""
INIT_UID: Final = 65534
"""The uid of the containers' pid 1 (``nobody``): never a command's uid, so no command signals it."""

LABEL_OWNER: Final = "org.reliabench.owner"
"""``PID:START:BOOT`` of the reliabench process that made the container (see :func:`owner_token`)."""
_LABEL_CREATED: Final = "org.reliabench.created"
_LABEL_SLOT: Final = "org.reliabench.slot"
_LABEL_CHANNEL: Final = "org.reliabench.channel"
_CHANNEL_PREFIX: Final = "rb-chan-"

_PIDS_SLACK: Final = 4  # pid 1 and what an exec starts before the command (env, prlimit: exec'd)
_SHM_BYTES: Final = 64 * 1024**2
_NOFILE: Final = 20000  # reliabench's containers.conf asks for these; capped at the host's hard limits
_NPROC: Final = 32768
_CALL_TIMEOUT_S: Final = 120.0
_KILL_TIMEOUT_S: Final = 15.0
_COPY_TIMEOUT_S: Final = 600.0
_READY_TTL_S: Final = 10.0
_CATATONIT_PATHS: Final = ("/usr/bin/catatonit", "/usr/libexec/podman/catatonit",
                           "/usr/libexec/catatonit/catatonit")


# --------------------------------------------------------------------------------------------
# the seccomp profile: reliabench's filter in the runtimes' JSON format
# --------------------------------------------------------------------------------------------

_SCMP_ARCH: Final = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}


def _rule(name: str, err: int, args: list[dict[str, int | str]] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"names": [name], "action": "SCMP_ACT_ERRNO", "errnoRet": err}
    if args:
        rule["args"] = args
    return rule


def seccomp_profile(machine: str | None = None) -> dict[str, Any]:
    """The filter of :mod:`reliabench.sandbox.seccomp` as a seccomp profile for podman and docker.

    Everything is allowed but the calls of :data:`~reliabench.sandbox.seccomp.DENIED_GROUPS`
    (``EPERM``; ``clone3``: ``ENOSYS``), ``clone`` with any ``CLONE_NEW*`` flag, and
    ``personality`` with a value outside Docker's list; only the machine's native ABI is
    listed, so a call of another ABI (i386, x32, AArch32) kills the process, as on the host.
    A profile rule cannot say "not one of these values", so the ``personality`` rule is
    spelled as: some flag bit outside the allowed values set while the next such bit is clear
    (a chain over those bits), plus the three values with every such bit set.

    Args:
        machine: ``x86_64`` or ``aarch64``; None: this machine.

    Raises:
        SandboxError: No system-call table for ``machine``.
    """
    machine = os.uname().machine if machine is None else machine
    numbers = SYSCALL_NUMBERS.get(machine)
    if numbers is None or machine not in _SCMP_ARCH:
        raise SandboxError(f"no seccomp system-call table for machine {machine!r}")
    rules: list[dict[str, Any]] = []
    for group in DENIED_GROUPS:
        names = [n for n in group.syscalls if n in numbers]
        if names:
            rules.append({"names": names, "action": "SCMP_ACT_ERRNO", "errnoRet": group.errno})
    for bit in range(64):
        flag = 1 << bit
        if CLONE_NAMESPACE_FLAGS & flag:
            rules.append(_rule("clone", errno.EPERM,
                               [{"index": 0, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}]))
    query = 0xFFFFFFFF
    allowed_bits = 0
    for value in _PERSONALITY_ALLOWED:
        if value != query:
            allowed_bits |= value
    outside = [1 << i for i in range(32) if not allowed_bits & (1 << i)]
    for i, bit in enumerate(outside):
        nxt = outside[(i + 1) % len(outside)]
        rules.append(_rule("personality", errno.EPERM,
                           [{"index": 0, "value": bit | nxt, "valueTwo": bit, "op": "SCMP_CMP_MASKED_EQ"}]))
    inside = [1 << i for i in range(32) if allowed_bits & (1 << i)]
    for mask in range(1, 1 << len(inside)):
        value = query
        for j, bit in enumerate(inside):
            if mask & (1 << j):
                value &= ~bit
        rules.append(_rule("personality", errno.EPERM,
                           [{"index": 0, "value": value, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]))
    return {"defaultAction": "SCMP_ACT_ALLOW", "architectures": [_SCMP_ARCH[machine]], "syscalls": rules}


# --------------------------------------------------------------------------------------------
# the owner of a container: a reliabench process, identified beyond pid reuse and reboots
# --------------------------------------------------------------------------------------------


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:  # pragma: no cover - every Linux has it
        return "unknown"


def _start_ticks(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def owner_token(pid: int | None = None) -> str:
    """``PID:START:BOOT`` of process ``pid`` (default: this one).

    Its pid, its start time in clock ticks since boot, and the boot id: together unique across
    pid reuse and reboots.
    """
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{_start_ticks(pid) or 0}:{_boot_id()}"


def _owner_stem() -> str:
    """``PID-TICKS`` of this process, in the names of the folders it makes (see ``_sweep_private_dirs``)."""
    pid = os.getpid()
    return f"{pid}-{_start_ticks(pid) or 0}"


def owner_alive(token: str) -> bool:
    """Whether the process a :func:`owner_token` names still runs (False for a malformed token)."""
    parts = token.split(":")
    if len(parts) != 3 or not parts[0].isdigit():
        return False
    pid, start, boot = int(parts[0]), parts[1], parts[2]
    return boot == _boot_id() and _start_ticks(pid) == start


# --------------------------------------------------------------------------------------------
# a container's processes and cgroups, seen from the host
# --------------------------------------------------------------------------------------------


def _pid_ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited and only waits to be reaped (a zombie), or is gone.

    A process of an ``exec`` whose runtime helper died (the client killed on a limit) is
    reparented outside the container, to the host's nearest reaper; where that reaper does
    not reap (a machine whose pid 1 is no init), it stays a zombie for good. A zombie runs
    nothing, holds no file and cannot be killed: it is not a live process of the container.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return True
    state = stat[stat.rfind(b")") + 2:][:1]
    return state in (b"Z", b"X", b"x")


def _parent(pid: int) -> int | None:
    """The parent pid of ``pid`` (host pids), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        return int(stat[stat.rfind(b")") + 2:].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _descends_from(pid: int, ancestors: set[int]) -> bool:
    """Whether one of ``ancestors`` is the parent, grandparent, ... of ``pid`` (a bounded walk)."""
    current: int | None = pid
    for _ in range(4096):
        current = _parent(current) if current is not None else None
        if current is None or current <= 1:
            return False
        if current in ancestors:
            return True
    return False


def _ns_pids(ns: str) -> set[int]:
    """Host pids of the live processes in the pid namespace ``ns`` (zombies left out: :func:`_exited`)."""
    found: set[int] = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and _pid_ns(int(entry.name)) == ns and not _exited(int(entry.name)):
            found.add(int(entry.name))
    return found


def _kill_in_ns(pid: int, ns: str) -> None:
    """SIGKILL ``pid`` if it is (still) in ``ns``; a pid reused meanwhile is never signalled."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        if _pid_ns(pid) == ns:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
    finally:
        os.close(fd)


def _mountinfo() -> list[list[str]]:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            return [line.split() for line in fh]
    except OSError:  # pragma: no cover - every Linux has it
        return []


def _cgroup_dir(pid: int, controller: str) -> Path | None:
    """The host folder of ``pid``'s cgroup for ``controller`` (v1 hierarchy, else v2), or None."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as fh:
            lines = [line.rstrip("\n").split(":", 2) for line in fh]
    except OSError:
        return None
    v1 = next((p[2] for p in lines if len(p) == 3 and controller in p[1].split(",")), None)
    v2 = next((p[2] for p in lines if len(p) == 3 and p[0] == "0" and p[1] == ""), None)
    for fields in _mountinfo():
        if "-" not in fields:
            continue
        sep = fields.index("-")
        fstype, options = fields[sep + 1], fields[sep + 3] if len(fields) > sep + 3 else ""
        root, mountpoint = fields[3], fields[4]
        if v1 is not None and fstype == "cgroup" and controller in options.split(","):
            rel = os.path.relpath(v1, root) if root != "/" else v1.lstrip("/")
            return Path(mountpoint) / rel
    if v2 is not None:
        for fields in _mountinfo():
            if "-" in fields and fields[fields.index("-") + 1] == "cgroup2":
                candidate = Path(fields[4]) / v2.lstrip("/")
                if (candidate / "cgroup.controllers").exists() and controller in \
                        (candidate / "cgroup.controllers").read_text().split():
                    return candidate
    return None


def _oom_kills(memory_dir: Path | None) -> int:
    """The ``oom_kill`` count of a memory cgroup (v1 ``memory.oom_control``, v2 ``memory.events``)."""
    if memory_dir is None:
        return 0
    for name in ("memory.oom_control", "memory.events"):
        try:
            text = (memory_dir / name).read_text()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return 0


# --------------------------------------------------------------------------------------------
# what a container backend does with its runtime's command line
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tools:
    """What an image offers the environment (probed once per image and user)."""

    env: str
    prlimit: str | None
    default_keys: frozenset[str]


class _Cli:
    """The runtime's command line bound to its backend (a :class:`~reliabench.sandbox.images.RuntimeCli`)."""

    def __init__(self, backend: ContainerBackend) -> None:
        self._backend = backend
        self.name = backend.runtime

    def __call__(self, args: Sequence[str], *, timeout: float,
                 env: Mapping[str, str] | None = None) -> CliResult:
        return self._backend._call(args, timeout=timeout, env=env)

    def build_args(self, *, dockerfile: Path, context: Path, tag: str,
                   labels: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        return self._backend._build_args(dockerfile=dockerfile, context=context, tag=tag, labels=labels)


def _host_hard_limit(which: int, want: int) -> int:
    hard = resource.getrlimit(which)[1]
    return want if hard == resource.RLIM_INFINITY else max(1, min(want, hard))


class ContainerBackend:
    """An :class:`~reliabench.sandbox.environment.EnvironmentBackend` over a container runtime's CLI.

    Subclasses (:class:`~reliabench.sandbox.podman.PodmanBackend`,
    :class:`~reliabench.sandbox.docker.DockerBackend`) say how to reach the runtime and what
    differs in its flags; everything else is here.

    Args:
        default_image: The image of host tasks and of :meth:`run` (default
            ``$RELIABENCH_CONTAINER_IMAGE`` or :data:`DEFAULT_TEST_IMAGE`).
        cpus: CPUs each container may use (``--cpus``).
        build_timeout_s: Seconds a Dockerfile build may take.
    """

    name: str
    runtime: str
    """The runtime's command (``podman`` or ``docker``)."""
    install_fix: str
    """How to install the runtime (one line)."""

    def __init__(self, *, default_image: str | None = None, cpus: float = 1.0,
                 build_timeout_s: float = 1800.0) -> None:
        if not 0 < cpus <= 1024:
            raise SandboxError(f"cpus must be in (0, 1024], got {cpus!r}")
        self.default_image = (default_image or os.environ.get("RELIABENCH_CONTAINER_IMAGE")
                              or DEFAULT_TEST_IMAGE)
        self.cpus = cpus
        self.build_timeout_s = build_timeout_s
        self._cli = _Cli(self)
        self._lock = threading.Lock()
        self._images: dict[str, ImageInfo] = {}
        self._tools: dict[str, _Tools] = {}
        self._ready_at = 0.0
        self._private: Path | None = None
        self._host_prepared: PreparedSpec | None = None

    # ---------------------------------------------------------------- subclass hooks

    def _client_env(self) -> dict[str, str]:
        """The environment of the runtime's client (nothing of the host's but what it needs)."""
        return {"PATH": os.environ.get("PATH", DEFAULT_PATH), "LANG": "C.UTF-8"}

    def _not_ready(self) -> str | None:
        """Why the runtime cannot run containers now (one line with the fix), or None."""
        return None

    def _create_flags(self, *, read_only: bool) -> list[str]:
        """Flags of ``run`` that differ between runtimes."""
        return []

    def _remove_args(self, ids: Sequence[str]) -> list[str]:
        return ["rm", "-f", "-v", *ids]

    def _build_args(self, *, dockerfile: Path, context: Path, tag: str,
                    labels: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError  # pragma: no cover - each runtime defines it

    def _explain(self, stderr: str) -> str | None:
        """A misconfiguration the runtime's error shows, as one line with the fix, or None."""
        return None

    def _runtime_failed(self, returncode: int, stderr: str) -> bool:
        """Whether an ``exec`` result may be the runtime's own failure (then its health is checked)."""
        return False

    # ---------------------------------------------------------------- the command line

    def _binary(self) -> str | None:
        return shutil.which(self.runtime, path=os.environ.get("PATH", DEFAULT_PATH))

    def _call(self, args: Sequence[str], *, timeout: float = _CALL_TIMEOUT_S,
              env: Mapping[str, str] | None = None) -> CliResult:
        binary = self._binary()
        if binary is None:
            raise SandboxError(f"{self.runtime} is not installed: {self.install_fix}")
        client_env = self._client_env()
        if env:
            client_env.update(env)
        return run_cli([binary, *args], env=client_env, timeout=timeout, what=f"{self.runtime} {args[0]}",
                       cwd=self._private_dir())

    def _private_dir(self) -> Path:
        """A 0700 folder of this backend for the seccomp profile, env files and stdin."""
        with self._lock:
            if self._private is None or not self._private.is_dir():
                # the owner in the name: sweep removes the folders of processes that are gone
                path = Path(tempfile.mkdtemp(prefix=f"rb-{self.runtime}-{_owner_stem()}-"))
                self._private = path
                weakref.finalize(self, shutil.rmtree, path, True)
                atexit.register(shutil.rmtree, path, True)
            return self._private

    def _seccomp_path(self) -> Path | None:
        """The profile file of :func:`seccomp_profile`, or None where this host has no filter."""
        if filter_unavailable_reason() is not None:
            return None
        path = self._private_dir() / "seccomp.json"
        if not path.exists():  # threads starting containers at once: each writes its own file, swaps it in
            fd, tmp = tempfile.mkstemp(prefix="seccomp-", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(json.dumps(seccomp_profile()))
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        return path

    # ---------------------------------------------------------------- refuse / prepare

    def _why_not_here(self, *, ask_runtime: bool = True) -> str | None:
        """Why this host cannot run the backend at all, or None.

        ``ask_runtime``: also ask the runtime whether it works (a call of its CLI, cached for a
        few seconds when it does); ``start`` does not, and asks only when its container fails.
        """
        if self._binary() is None:
            return f"{self.runtime} is not installed: {self.install_fix}"
        if os.geteuid() != 0:
            return (f"the {self.name} backend needs root (rootful {self.runtime}, the workspace lent to the "
                    "slot uid): run reliabench as root, or use --sandbox bubblewrap")
        if _catatonit() is None:
            return "catatonit (the containers' init process) is not installed: apt-get install catatonit"
        if not ask_runtime or time.monotonic() - self._ready_at < _READY_TTL_S:
            return None
        why = self._not_ready()
        if why is None:
            self._ready_at = time.monotonic()
        return why

    def unavailable(self) -> str | None:
        """Why the runtime cannot run containers here (one line with the fix), or None.

        Installed, reliabench as root, catatonit there, the runtime answering (asked at most
        every few seconds): what ``--sandbox auto`` asks before it picks a runtime.
        """
        return self._why_not_here()

    def refuse(self, spec: EnvironmentSpec) -> str | None:
        """Why this backend cannot run ``spec`` (one line with the fix), or None.

        Checks the runtime (installed, root, answering), the spec (``workdir`` absolute and
        not a system folder, a Dockerfile that exists) and, for an ``image``, that the
        image is in the runtime's local storage. A host spec runs in :attr:`default_image`.
        """
        where = spec.source or "the task"
        if spec.workdir is not None:
            why = _bad_workdir(spec.workdir)
            if why is not None:
                return f"{where}: workdir = {spec.workdir!r}: {why}"
        if spec.user not in (None, "root"):
            return f"{where}: user = {spec.user!r}: expected \"root\" or nothing (the slot's own uid)"
        why = self._why_not_here()
        if why is not None:
            return why
        if spec.kind == "dockerfile":
            assert spec.dockerfile is not None
            if not spec.dockerfile.is_file():
                return f"{where}: the Dockerfile {spec.dockerfile} does not exist"
            return None
        reference = spec.image if spec.image is not None else self.default_image
        try:
            self._image_info(reference, source=spec.source)
        except SandboxError as exc:
            fix = "" if spec.image is not None else \
                " (build reliabench's test images: scripts/containers/images.sh)"
            return f"{exc}{fix}"
        return None

    def _image_info(self, reference: str, *, source: str = "") -> ImageInfo:
        info = inspect_image(self._cli, reference, source=source)
        with self._lock:
            self._images[info.ref.digest] = info
        return info

    def prepare(self, spec: EnvironmentSpec) -> PreparedSpec:
        """Find the image of ``spec`` (an ``image``, the default for a host spec) or build its Dockerfile.

        Raises:
            SandboxError: The runtime cannot run here, the image is missing, the build failed.
        """
        why = self._why_not_here()
        if why is not None:
            raise SandboxError(why)
        if spec.workdir is not None and _bad_workdir(spec.workdir) is not None:
            raise SandboxError(f"{spec.source or 'the task'}: workdir = {spec.workdir!r}: "
                               f"{_bad_workdir(spec.workdir)}")
        if spec.kind == "dockerfile":
            assert spec.dockerfile is not None
            info = build_image(self._cli, spec.dockerfile, source=spec.source, timeout=self.build_timeout_s)
            with self._lock:
                self._images[info.ref.digest] = info
        else:
            info = self._image_info(spec.image if spec.image is not None else self.default_image,
                                    source=spec.source)
        return PreparedSpec(spec=spec, backend=self.name, image=info.ref)

    # ---------------------------------------------------------------- start

    def start(self, prepared: PreparedSpec, *, workspace: Path, slot: int, mounts: Sequence[Mount] = (),
              network: NetworkMode = "none", limits: Limits = Limits()) -> ContainerEnvironment:
        """Start the container of one rollout phase on the host folder ``workspace``.

        Holds the slot's host-wide lock until :meth:`ContainerEnvironment.close` (the
        container's commands run as the slot uid), lends the workspace to that uid (unless
        the spec's user is root) and makes the channel folder. A second environment of the
        same slot in this process is refused (the lock would wait for itself).

        Raises:
            SandboxError: It could not be started (the harness's failure), or the slot is
                held by another open environment of this process.
        """
        if prepared.backend != self.name:
            raise SandboxError(f"a spec prepared by {prepared.backend!r} given to {self.name!r}")
        if prepared.image is None:
            raise SandboxError(f"the {self.name} backend needs a prepared image")
        if network not in ("none", "endpoint", "host"):
            raise SandboxError(f"network must be none, endpoint or host, got {network!r}")
        why = self._why_not_here(ask_runtime=False)
        if why is not None:
            raise SandboxError(why)
        spec = prepared.spec
        uid = slot_uid(slot)
        user = "0:0" if spec.user == "root" else f"{uid}:{uid}"
        ws = Path(os.path.realpath(workspace))
        if not ws.is_dir():
            raise SandboxError(f"workspace is not a directory: {workspace}")
        workdir = spec.workdir or (str(ws) if spec.kind == "host" else CONTAINER_WORKDIR)
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(_slot_of_this_process(slot))
            stack.enter_context(hold_slot(uid))
            if spec.user is None:
                stack.enter_context(lend_workdir(ws, uid))
            # the owner in the name: sweep removes it even if the kill came before the container
            parent = Path(tempfile.mkdtemp(prefix=f"{_CHANNEL_PREFIX}{_owner_stem()}-"))
            stack.callback(remove_tree, parent)
            os.chmod(parent, 0o711)
            channel = parent / "channel"
            channel.mkdir(mode=0o700)
            if spec.user is None:
                os.chown(channel, uid, uid)
            name = f"rb-{self.runtime}-{slot}-{os.getpid()}-{os.urandom(4).hex()}"
            stack.callback(self._remove, name)
            args = self._run_args(name=name, image=prepared.image, workspace=ws, workdir=workdir,
                                  channel=channel, mounts=mounts, network=network, limits=limits,
                                  read_only=not spec.writable_root, slot=slot)
            result = self._call(args)
            if result.returncode != 0:
                raise SandboxError(self._explain(result.stderr) or self._not_ready() or
                                   f"{self.runtime} could not start a container of "
                                   f"{prepared.image.reference}: {output_tail(result.stderr, 3)}")
            init_pid, container_id = self._started(name)
            tools = self._image_tools(prepared.image, container_id, user)
            info = self._images.get(prepared.image.digest)
            return ContainerEnvironment(
                self, stack, container_id=container_id, init_pid=init_pid, image=prepared.image,
                workspace=ws, workdir=workdir, channel=channel, user=user, tools=tools,
                image_env=dict(info.env) if info is not None else {})
        except BaseException:
            stack.close()  # the environment owns the stack only once it exists
            raise

    def _run_args(self, *, name: str, image: ImageRef, workspace: Path, workdir: str, channel: Path,
                  mounts: Sequence[Mount], network: NetworkMode, limits: Limits, read_only: bool,
                  slot: int) -> list[str]:
        """The ``run`` arguments of one environment's container (see the module docstring)."""
        init = _catatonit()
        assert init is not None  # _why_not_here checked it
        binds = [_bind(Path(init), INIT_TARGET, writable=False), _bind(workspace, workdir, writable=True),
                 _bind(channel, CONTAINER_CHANNEL_DIR, writable=True)]
        for m in mounts:
            binds.append(_bind(Path(os.path.realpath(m.source)), m.target or str(m.source),
                               writable=m.writable))
        tmp_bytes = min(limits.tmp_bytes, limits.memory_bytes)
        nofile = _host_hard_limit(resource.RLIMIT_NOFILE, _NOFILE)
        nproc = _host_hard_limit(resource.RLIMIT_NPROC, _NPROC)
        labels = {LABEL_OWNER: owner_token(), _LABEL_CREATED: f"{time.time():.0f}", _LABEL_SLOT: str(slot),
                  _LABEL_CHANNEL: str(channel.parent)}
        security = ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
        profile = self._seccomp_path()
        if profile is not None:
            security += ["--security-opt", f"seccomp={profile}"]
        args = ["run", "-d", "--name", name, "--pull", "never", "--hostname", "rollout"]
        for key, value in labels.items():
            args += ["--label", f"{key}={value}"]
        args += ["--network", "host" if network == "host" else "none", *security]
        if read_only:
            args.append("--read-only")
        args += self._create_flags(read_only=read_only)
        args += ["--tmpfs", f"/tmp:rw,nosuid,nodev,size={tmp_bytes},mode=1777", "--shm-size", str(_SHM_BYTES),
                 "--memory", str(limits.memory_bytes), "--memory-swap", str(limits.memory_bytes),
                 "--pids-limit", str(limits.max_procs + _PIDS_SLACK), "--cpus", f"{self.cpus:g}",
                 "--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}",
                 "--user", f"{INIT_UID}:{INIT_UID}", "--workdir", "/"]
        for bind in binds:
            args += ["--mount", bind]
        args += ["--entrypoint", INIT_TARGET, image.digest if image.digest.startswith("sha256:") else
                 image.reference, "-P"]
        return args

    def _started(self, name: str) -> tuple[int, str]:
        """The pid of the container's init on this host and the container's id; checks both."""
        result = self._call(["inspect", "--format", "{{.State.Pid}} {{.Id}} {{.State.Running}}", name])
        fields = result.stdout.split()
        if result.returncode != 0 or len(fields) != 3 or not fields[0].isdigit():
            raise SandboxError(f"{self.runtime} inspect {name}: "
                               f"{output_tail(result.stderr or result.stdout, 2)}")
        pid, container_id, running = int(fields[0]), fields[1], fields[2]
        if running != "true" or pid <= 1:
            raise SandboxError(f"the container {name} is not running after its start")
        ns = _pid_ns(pid)
        if ns is None:
            raise SandboxError(f"the container's first process (host pid {pid}) is not visible from "
                               f"here: reliabench must run in the pid namespace of the host that runs "
                               f"{self.runtime}")
        if ns == _pid_ns(os.getpid()):
            raise SandboxError(f"the container {name} shares this process's pid namespace: refused")
        return pid, container_id

    def _image_tools(self, image: ImageRef, container_id: str, user: str) -> _Tools:
        """``env`` and ``prlimit`` of the image, and the variables every exec gets (probed once per image)."""
        key = image.digest
        with self._lock:
            known = self._tools.get(key)
        if known is not None:
            return known
        env_bin = None
        default_keys: frozenset[str] = frozenset()
        for candidate in ("/usr/bin/env", "/bin/env"):
            probe = self._call(["exec", "--user", user, container_id, candidate])
            if probe.returncode == 0:
                env_bin = candidate
                default_keys = frozenset(line.partition("=")[0] for line in probe.stdout.splitlines()
                                         if "=" in line)
                break
        if env_bin is None:
            raise SandboxError(f"the image {image.reference} has no /usr/bin/env or /bin/env (coreutils "
                               "or busybox), which reliabench needs to give each command exactly its "
                               "environment")
        prlimit = None
        for candidate in ("/usr/bin/prlimit", "/bin/prlimit"):
            if self._call(["exec", "--user", user, container_id, candidate, "--version"]).returncode == 0:
                prlimit = candidate
                break
        if prlimit is None:
            logger.warning("the image %s has no prlimit (util-linux): commands in it run without per-process "
                           "rlimits (the container's cgroup limits still hold)", image.reference)
        tools = _Tools(env_bin, prlimit, default_keys | {"HOSTNAME", "HOME", "container", "TERM"})
        with self._lock:
            self._tools[key] = tools
        return tools

    def _remove(self, ref: str) -> None:
        """Remove a container and its anonymous volumes (no error if it is gone already).

        Raises:
            SandboxError: The runtime could not remove it.
        """
        result = self._call(self._remove_args([ref]))
        if result.returncode != 0 and not _gone(result.stderr):
            raise SandboxError(f"{self.runtime} could not remove the container {ref}: "
                               f"{output_tail(result.stderr, 2)}")

    # ---------------------------------------------------------------- sweep

    def sweep(self) -> int:
        """Remove containers (and their channel and private folders) whose reliabench process is gone.

        Returns:
            How many containers were removed (0 when the runtime cannot run here).
        """
        if self._why_not_here() is not None:
            return 0
        self._sweep_private_dirs()
        listed = self._call(["ps", "-a", "-q", "--no-trunc", "--filter", f"label={LABEL_OWNER}"])
        ids = listed.stdout.split()
        if listed.returncode != 0 or not ids:
            return 0
        inspected = self._call(["inspect", *ids])
        try:
            items = json.loads(inspected.stdout) if inspected.stdout.strip() else []
        except ValueError:
            items = []
        stale: list[tuple[str, str]] = []
        for item in items if isinstance(items, list) else []:
            labels = (item.get("Config") or {}).get("Labels") or {}
            token = labels.get(LABEL_OWNER)
            if isinstance(token, str) and not owner_alive(token):
                stale.append((str(item.get("Id")), str(labels.get(_LABEL_CHANNEL, ""))))
        removed = 0
        for container_id, channel in stale:
            try:
                self._remove(container_id)
            except SandboxError as exc:
                logger.warning("sweep: %s", exc)
                continue
            removed += 1
            parent = Path(channel)
            if parent.parent == Path(tempfile.gettempdir()) and parent.name.startswith(_CHANNEL_PREFIX):
                remove_tree(parent)
        return removed

    def _sweep_private_dirs(self) -> None:
        """Remove the private folders (:meth:`_private_dir`) and channel folders of processes that are gone.

        Both are named ``rb-KIND-PID-TICKS-RANDOM``; a channel folder whose container was made
        is also removed with it (:meth:`sweep`), this catches one whose owner died before.
        """
        with contextlib.suppress(OSError):
            for entry in os.scandir(tempfile.gettempdir()):
                parts = entry.name.split("-")
                if (len(parts) == 5 and parts[0] == "rb" and parts[1] in (self.runtime, "chan")
                        and parts[2].isdigit() and _start_ticks(int(parts[2])) != parts[3]
                        and entry.is_dir(follow_symlinks=False)):
                    remove_tree(Path(entry.path))

    # ---------------------------------------------------------------- one command (SandboxBackend)

    def run(self, argv: Sequence[str], *, workdir: Path, readonly: Sequence[Path] = (),
            env: Mapping[str, str] | None = None, limits: Limits = Limits(), network: bool = False,
            slot: int = 0, pass_fds: Sequence[int] = (), stdin: Path | None = None) -> SandboxResult:
        """One command in a fresh container of :attr:`default_image`, removed afterwards.

        The convenience of the one-command contract (:class:`~reliabench.sandbox.base.SandboxBackend`):
        ``workdir`` is shown at its own path and is the command's cwd, ``readonly`` paths at
        theirs. What the containment self-check runs.

        Raises:
            SandboxError: ``pass_fds`` given (descriptors cannot enter a container: use the
                channel folder), or the container could not be started.
        """
        if pass_fds:
            raise SandboxError(f"the {self.name} backend cannot pass file descriptors into a container "
                               "(pass_fds): use the environment's channel folder")
        if not argv:
            raise SandboxError("argv must not be empty")
        if not os.path.isdir(workdir):
            raise SandboxError(f"workdir is not a directory: {workdir}")
        with self._lock:
            prepared = self._host_prepared
        if prepared is None:
            prepared = self.prepare(HOST)
            with self._lock:
                self._host_prepared = prepared
        data = stdin.read_bytes() if stdin is not None else None
        environment = self.start(prepared, workspace=workdir, slot=slot,
                                 mounts=[Mount(Path(p)) for p in readonly],
                                 network="host" if network else "none", limits=limits)
        try:
            return environment.exec(argv, env=env, stdin=data, limits=limits)
        finally:
            environment.close()


_HELD_SLOTS: set[int] = set()
_HELD_LOCK = threading.Lock()


@contextlib.contextmanager
def _slot_of_this_process(slot: int) -> Iterator[None]:
    """Mark ``slot`` taken by an environment of this process (its host-wide lock would deadlock).

    Raises:
        SandboxError: Another environment of this process holds the slot.
    """
    with _HELD_LOCK:
        if slot in _HELD_SLOTS:
            raise SandboxError(f"slot {slot} is held by another open environment of this process: "
                               "environments of one slot never overlap (close the first)")
        _HELD_SLOTS.add(slot)
    try:
        yield
    finally:
        with _HELD_LOCK:
            _HELD_SLOTS.discard(slot)


def _catatonit() -> str | None:
    for path in _CATATONIT_PATHS:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.realpath(path)
    return None


def _bad_workdir(workdir: str) -> str | None:
    norm = posixpath.normpath(workdir)
    if not workdir.startswith("/") or norm != workdir.rstrip("/") or norm == "/":
        return "expected an absolute, normalised path other than /"
    for system in ("/proc", "/sys", "/dev", CONTAINER_CHANNEL_DIR, INIT_TARGET):
        if norm == system or norm.startswith(system + "/"):
            return f"{system} is the container's own"
    if "," in norm:
        return "a comma cannot be part of a mount target"
    return None


def _bind(source: Path, target: str, *, writable: bool) -> str:
    for path in (str(source), target):
        if "," in path or "\n" in path:
            raise SandboxError(f"cannot bind-mount {path!r} into a container (a comma or newline in "
                               "the path)")
    return f"type=bind,source={source},target={target}" + ("" if writable else ",readonly")


def _gone(stderr: str) -> bool:
    text = stderr.lower()
    return "no such container" in text or "no container with name or id" in text


# --------------------------------------------------------------------------------------------
# one started container
# --------------------------------------------------------------------------------------------


class ContainerEnvironment:
    """One rollout phase in one container (see the module docstring); made by :meth:`ContainerBackend.start`.

    Attributes:
        container_id: The runtime's id of the container.
        image_env: The variables the image's configuration sets; a command given ``env=None``
            gets them over :func:`~reliabench.sandbox.base.minimal_env`.
    """

    keeps_processes: bool = True

    def __init__(self, backend: ContainerBackend, stack: contextlib.ExitStack, *, container_id: str,
                 init_pid: int, image: ImageRef, workspace: Path, workdir: str, channel: Path, user: str,
                 tools: _Tools, image_env: Mapping[str, str]) -> None:
        self._backend = backend
        self._stack = stack
        self.backend = backend.name
        self.isolation: Isolation = backend.name
        self.container_id = container_id
        self.image: ImageRef | None = image
        self.workdir = workdir
        self.channel_dir = CONTAINER_CHANNEL_DIR
        self.channel_host = channel
        self.image_env = dict(image_env)
        self._workspace = workspace
        self._user = user
        self._uid = int(user.split(":")[0])
        self._tools = tools
        self._init_pid = init_pid
        ns = _pid_ns(init_pid)
        if ns is None:
            raise SandboxError(f"the container {container_id[:12]} stopped right after its start")
        self._ns = ns
        self._memory = _cgroup_dir(init_pid, "memory")
        self._closed = False
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- helpers

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError("the environment is closed")

    def processes(self) -> set[int]:
        """Host pids of the container's processes other than its init."""
        return _ns_pids(self._ns) - {self._init_pid}

    def cgroup_value(self, controller: str, name: str) -> str | None:
        """The content of the container's cgroup file ``name`` of ``controller``, or None.

        For instance ``cgroup_value("pids", "pids.max")``; None when it cannot be read.
        """
        folder = _cgroup_dir(self._init_pid, controller)
        if folder is None:
            return None
        try:
            return (folder / name).read_text().strip()
        except OSError:
            return None

    def _kill(self, keep: set[int]) -> None:
        """SIGKILL every process of the container but its init, ``keep`` and theirs, until none is left.

        ``keep`` are the processes that ran before a command that is being stopped (background
        processes of earlier commands, alive until :meth:`stop_processes`); what they start
        meanwhile is theirs, not the command's (a loop that starts a ``sleep`` every 50 ms would
        otherwise never leave the container empty of new processes). What the stopped command
        left behind is killed however it detached: a process it double-forked is reparented to
        the container's init, never to a process of ``keep``.

        Raises:
            SandboxError: Processes survived :data:`_KILL_TIMEOUT_S` seconds of killing.
        """
        deadline = time.monotonic() + _KILL_TIMEOUT_S
        while True:
            left = {pid for pid in self.processes() - keep if not _descends_from(pid, keep)}
            if not left:
                return
            for pid in left:
                _kill_in_ns(pid, self._ns)
            if time.monotonic() > deadline:
                raise SandboxError(f"processes of the container {self.container_id[:12]} survived "
                                   f"{_KILL_TIMEOUT_S:g} s of killing: {sorted(left)[:10]}")
            time.sleep(0.005)

    def _alive(self) -> bool:
        return _pid_ns(self._init_pid) == self._ns

    def _command_env(self, env: Mapping[str, str] | None) -> dict[str, str]:
        full = {**minimal_env(), **self.image_env} if env is None else dict(env)
        full.setdefault("PATH", DEFAULT_PATH)
        for key, value in full.items():
            if not key or "=" in key or key.startswith("#") or any(c.isspace() or c == "\0" for c in key):
                raise SandboxError(f"environment variable name {key!r} cannot be given to a container")
            if any(c in value for c in "\n\r\0"):
                raise SandboxError(f"environment variable {key}: a newline, carriage return or NUL in its "
                                   "value cannot be given to a container (variables go one per line)")
        return full

    def _inner(self, argv: Sequence[str], env: Mapping[str, str], limits: Limits) -> list[str]:
        unset = sorted(self._tools.default_keys - set(env))
        inner = [self._tools.env]
        for key in unset:
            inner += ["-u", key]
        if self._tools.prlimit is not None:
            nproc = min(limits.max_procs, _host_hard_limit(resource.RLIMIT_NPROC, _NPROC))
            inner += [self._tools.prlimit, *rlimit_args(limits, nproc), "--"]
        return [*inner, *argv]

    # ---------------------------------------------------------------- the contract

    def exec(self, argv: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             stdin: bytes | None = None, limits: Limits = Limits()) -> SandboxResult:
        """Run ``argv`` in the container; see :class:`~reliabench.sandbox.environment.Environment`.

        Raises:
            SandboxError: The environment is closed, the container stopped, or the runtime
                does not answer (the harness's failure).
        """
        self._check_open()
        if not argv:
            raise SandboxError("argv must not be empty")
        if cwd is not None and not cwd.startswith("/"):
            raise SandboxError(f"cwd must be an absolute path inside the environment, got {cwd!r}")
        full_env = self._command_env(env)
        private = self._backend._private_dir()
        fd, env_name = tempfile.mkstemp(prefix="env-", dir=private)
        stdin_path: Path | None = None
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.writelines(f"{k}={v}\n" for k, v in full_env.items())
            if stdin is not None:
                sfd, sname = tempfile.mkstemp(prefix="stdin-", dir=private)
                with os.fdopen(sfd, "wb") as sfh:
                    sfh.write(stdin)
                stdin_path = Path(sname)
            binary = self._backend._binary()
            if binary is None:
                raise SandboxError(f"{self._backend.runtime} is not installed: {self._backend.install_fix}")
            cmd = [binary, "exec", *(["-i"] if stdin is not None else []), "--user", self._user,
                   "--workdir", cwd or self.workdir, "--env-file", env_name, self.container_id,
                   *self._inner(argv, full_env, limits)]
            before = self.processes()
            ooms = _oom_kills(self._memory)

            def cleanup(proc: subprocess.Popen[bytes]) -> None:
                if proc.returncode is not None and proc.returncode < 0:  # the client was killed on a limit
                    self._kill(before)

            result = run_supervised(cmd, cwd=private, env=self._backend._client_env(), limits=limits,
                                     isolation=self.isolation, pass_fds=(), preexec_fn=None, user=None,
                                     cleanup=cleanup, stdin=stdin_path,
                                     seccomp=self._backend._seccomp_path() is not None)
        finally:
            Path(env_name).unlink(missing_ok=True)
            if stdin_path is not None:
                stdin_path.unlink(missing_ok=True)
        if result.returncode == 128 + signal.SIGKILL and _oom_kills(self._memory) > ooms:
            result = replace(result, killed_reason="memory limit")
        if result.returncode != 0 and not result.timed_out:
            self._check_health(result)
        return result

    def _check_health(self, result: SandboxResult) -> None:
        """Raise when a failed command was the container's or the runtime's failure, not the command's."""
        if not self._alive():
            raise SandboxError(f"the {self._backend.runtime} container {self.container_id[:12]} stopped "
                               f"(exit status {result.returncode}: {output_tail(result.stderr, 2)})")
        if result.returncode is not None and self._backend._runtime_failed(result.returncode, result.stderr):
            probe = self._backend._call(["inspect", "--format", "{{.State.Running}}", self.container_id],
                                        timeout=60)
            if probe.returncode != 0 or probe.stdout.strip() != "true":
                why = self._backend._not_ready() or output_tail(probe.stderr or result.stderr, 2)
                raise SandboxError(f"{self._backend.runtime} failed to run a command in the container "
                                   f"{self.container_id[:12]}: {why}")

    def stop_processes(self) -> None:
        """End every process in the container but its init; its files (``/tmp`` included) stay.

        Raises:
            SandboxError: The environment is closed, or processes survived the kill.
        """
        self._check_open()
        self._kill(set())

    def close(self) -> None:
        """Kill every process, remove the container and everything else of it; idempotent.

        Removes the container and its volumes, gives the workspace back, removes the channel
        folder and releases the slot.

        Raises:
            SandboxError: The container could not be removed (everything else was done; a
                later :meth:`ContainerBackend.sweep` removes it once this process is gone).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            with contextlib.suppress(SandboxError):
                self._kill(set())
        finally:
            self._stack.close()

    # ---------------------------------------------------------------- copies

    def _host_path(self, path: str) -> Path | None:
        """The host path of a path inside the workspace or the channel folder, else None.

        Raises:
            SandboxError: A component below the workspace or channel folder is a link.
        """
        norm = posixpath.normpath(path)
        if not norm.startswith("/"):
            raise SandboxError(f"{path}: expected an absolute path inside the environment")
        for inside, host in ((self.workdir, self._workspace), (self.channel_dir, self.channel_host)):
            if norm == inside or norm.startswith(inside.rstrip("/") + "/"):
                rel = posixpath.relpath(norm, inside)
                real = host if rel == "." else host / rel
                probe = host
                for part in Path(rel).parts[:-1] if rel != "." else ():
                    probe = probe / part
                    if probe.is_symlink():
                        raise SandboxError(f"{path}: {probe} is a link (never followed)")
                return real
        return None

    def copy_in(self, source: Path, target: str) -> None:
        """Copy a host file or folder to ``target`` inside (parents made).

        Into the workspace or the channel folder: a host copy, handed to the environment's
        user. Elsewhere (the container's own ``/tmp`` or root): a tar stream unpacked by
        ``tar`` in the container as the environment's user, merged into what is there.

        Raises:
            SandboxError: It could not be copied.
        """
        self._check_open()
        dest = self._host_path(target)
        if dest is not None and dest in (self._workspace, self.channel_host):
            raise SandboxError(f"copying {source} in: {target} is the workspace or channel folder itself "
                               "(copy into it, not onto it)")
        try:
            if dest is not None:
                if os.path.lexists(dest):
                    remove_tree(dest) if dest.is_dir() and not dest.is_symlink() else dest.unlink()
                copy_tree_bounded(source, dest, max_bytes=1 << 40)
                if self._uid != 0:
                    chown_tree(dest, self._uid, self._uid)
                return
        except OSError as exc:
            raise SandboxError(f"copying {source} in: {exc}") from None
        norm = posixpath.normpath(target)
        if norm == "/":
            raise SandboxError("cannot copy onto / of a container")
        self._no_link_on_the_way(norm)
        fd, tar_name = tempfile.mkstemp(prefix="in-", suffix=".tar", dir=self._backend._private_dir())
        try:
            with os.fdopen(fd, "wb") as fh:
                _write_tar(source, norm.lstrip("/"), fh)
            result = self._tar_exec(["tar", "-x", "-f", "-", "-C", "/", "-o"], stdin=Path(tar_name),
                                    stdout=None, cap=0)
        finally:
            Path(tar_name).unlink(missing_ok=True)
        if result.returncode != 0:
            raise SandboxError(f"copying {source} to {target} in the container failed: "
                               f"{output_tail(result.stderr, 3)}")

    def copy_out(self, source: str, target: Path, *, max_bytes: int) -> None:
        """Copy a file or folder from inside to the host path ``target`` (bounded, no link followed).

        Raises:
            FileNotFoundError: ``source`` does not exist inside.
            SandboxError: It could not be copied, or it is larger than ``max_bytes``.
        """
        self._check_open()
        if os.path.lexists(target):
            raise SandboxError(f"copying {source} out: {target} exists")
        src = self._host_path(source)
        if src is not None:
            if not os.path.lexists(src):
                raise FileNotFoundError(source)
            try:
                copy_tree_bounded(src, target, max_bytes=max_bytes, under=src.parent)
            except FileNotFoundError:
                raise
            except (OSError, ValueError) as exc:
                raise SandboxError(f"copying {source} out: {exc}") from None
            return
        norm = posixpath.normpath(source)
        parent, name = posixpath.split(norm)
        if not name:
            raise SandboxError(f"copying {source} out: not a file or folder")
        self._no_link_on_the_way(norm)
        fd, tar_name = tempfile.mkstemp(prefix="out-", suffix=".tar", dir=self._backend._private_dir())
        os.close(fd)
        try:
            cap = 2 * max_bytes + 64 * 1024**2
            result = self._tar_exec(["tar", "-c", "-f", "-", "-C", parent or "/", f"./{name}"], stdin=None,
                                    stdout=Path(tar_name), cap=cap)
            if result.timed_out:
                raise SandboxError(f"copying {source} out: more than {max_bytes} bytes or too slow")
            if result.returncode != 0 and "No such file" in result.stderr:
                raise FileNotFoundError(source)
            if result.returncode != 0:
                raise SandboxError(f"copying {source} out of the container failed: "
                                   f"{output_tail(result.stderr, 3)}")
            _extract_bounded(Path(tar_name), name, target, max_bytes=max_bytes, what=source)
        finally:
            Path(tar_name).unlink(missing_ok=True)

    def _no_link_on_the_way(self, path: str) -> None:
        """Raise when a folder on the way to ``path`` in the container is a link.

        ``realpath -m`` in the container, as the environment's user, must give ``path`` back
        (a link as the last component is not followed by the copies themselves).

        Raises:
            SandboxError: A link is on the way, or the check could not run.
        """
        parent = posixpath.dirname(path)
        result = self._backend._call(["exec", "--user", self._user, self.container_id, self._tools.env, "-i",
                                      f"PATH={DEFAULT_PATH}", "realpath", "-m", "--", parent], timeout=60)
        if result.returncode != 0:
            raise SandboxError(f"{path}: could not check it for links in the container (realpath, from "
                               f"coreutils or busybox): {output_tail(result.stderr, 2)}")
        if result.stdout.rstrip("\n") != parent:
            raise SandboxError(f"{path}: {parent} is a link or lies below one in the container "
                               "(never followed)")

    def _tar_exec(self, inner: list[str], *, stdin: Path | None, stdout: Path | None,
                  cap: int) -> SandboxResult:
        """Run ``tar`` in the container with a fixed environment, raw output to ``stdout``.

        The size of ``stdout`` is bounded by ``cap``: the client and the tar are killed beyond it.
        """
        binary = self._backend._binary()
        if binary is None:
            raise SandboxError(f"{self._backend.runtime} is not installed")
        cmd = [binary, "exec", *(["-i"] if stdin is not None else []), "--user", self._user,
               "--workdir", "/", self.container_id, self._tools.env, "-i", f"PATH={DEFAULT_PATH}", "LC_ALL=C",
               *inner]
        before = self.processes()
        start = time.monotonic()
        with tempfile.TemporaryFile() as err, \
                (open(stdin, "rb") if stdin is not None else open(os.devnull, "rb")) as in_fh, \
                (open(stdout, "wb") if stdout is not None else open(os.devnull, "wb")) as out_fh:
            proc = subprocess.Popen(cmd, stdin=in_fh, stdout=out_fh, stderr=err,
                                    cwd=self._backend._private_dir(), env=self._backend._client_env(),
                                    start_new_session=True)
            stopped = False
            try:
                while proc.poll() is None:
                    over = stdout is not None and stdout.stat().st_size > cap
                    if over or time.monotonic() - start > _COPY_TIMEOUT_S:
                        proc.kill()
                        stopped = True
                        break
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=0.05)
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
                if stopped:
                    self._kill(before)
            err.seek(0)
            stderr = err.read(1 << 20).decode("utf-8", "replace")
        return SandboxResult(returncode=proc.returncode, timed_out=stopped, wall_s=time.monotonic() - start,
                             stdout="", stderr=stderr, isolation=self.isolation)


# --------------------------------------------------------------------------------------------
# tar streams: into a container from trusted host files, out of it into a fresh host folder
# --------------------------------------------------------------------------------------------


def _write_tar(source: Path, arcroot: str, out: IO[bytes]) -> None:
    """A tar of the regular files and folders of ``source`` under ``arcroot`` (links skipped).

    Raises:
        SandboxError: ``source`` is neither a regular file nor a folder.
    """
    def add_file(tar: tarfile.TarFile, path: Path, arcname: str, under: Path | None) -> None:
        with open_regular(path, under=under) as fh:
            st = os.fstat(fh.fileno())
            info = tarfile.TarInfo(arcname)
            info.size, info.mode, info.mtime = st.st_size, stat.S_IMODE(st.st_mode), int(st.st_mtime)
            tar.addfile(info, fh)

    def add_dir(tar: tarfile.TarFile, arcname: str) -> None:
        info = tarfile.TarInfo(arcname)
        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
        tar.addfile(info)

    st = os.lstat(source)
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        if stat.S_ISDIR(st.st_mode):
            add_dir(tar, arcroot)
            for entry in walk_tree(source):
                if entry.kind == "dir":
                    add_dir(tar, f"{arcroot}/{entry.rel}")
                elif entry.kind == "file":
                    add_file(tar, source / entry.rel, f"{arcroot}/{entry.rel}", source)
        elif stat.S_ISREG(st.st_mode):
            add_file(tar, source, arcroot, None)
        else:
            raise SandboxError(f"{source}: not a regular file or folder (never followed)")


def _extract_bounded(archive: Path, name: str, target: Path, *, max_bytes: int, what: str) -> None:
    """Unpack the members ``name`` and ``name/...`` of ``archive`` into the fresh host path ``target``.

    Regular files and folders only (links, devices, FIFOs skipped), at most ``max_bytes`` of
    file content, never outside ``target`` (member names with ``..`` or a leading ``/`` are
    refused); files are created with ``O_EXCL | O_NOFOLLOW`` in folders made here.

    Raises:
        SandboxError: The first member is not a regular file or folder, or more than
            ``max_bytes`` would be written (what was written is removed).
    """
    total = 0
    first = True
    try:
        with tarfile.open(archive, mode="r:") as tar:
            for member in tar:
                rel = posixpath.normpath(member.name)
                rel = rel[2:] if rel.startswith("./") else rel
                parts = rel.split("/")
                if rel.startswith("/") or ".." in parts or (rel != name and not rel.startswith(name + "/")):
                    raise SandboxError(f"copying {what} out: the archive holds {member.name!r}")
                sub = rel[len(name):].lstrip("/")
                dest = target / sub if sub else target
                if first:
                    first = False
                    if not (member.isdir() or member.isreg()) or sub:
                        raise SandboxError(f"copying {what} out: not a regular file or folder "
                                           "(never followed)")
                    if member.isreg():
                        target.parent.mkdir(parents=True, exist_ok=True)
                if member.isdir():
                    with contextlib.suppress(FileExistsError):
                        dest.mkdir(parents=True, mode=0o755)
                elif member.isreg():
                    total += member.size
                    if total > max_bytes:
                        raise SandboxError(f"copying {what} out: more than {max_bytes} bytes")
                    try:
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                    except (FileExistsError, NotADirectoryError):
                        continue
                    src = tar.extractfile(member)
                    with os.fdopen(out, "wb") as out_fh:
                        while src is not None and (chunk := src.read(1 << 20)):
                            out_fh.write(chunk)
        if first:
            raise FileNotFoundError(what)
    except BaseException:
        remove_tree(target)  # what was written (never raises; a missing target is fine)
        raise
