"""Isolation backends for untrusted code: bubblewrap, namespaces + setuid, rlimits only.

Everything an agent wrote runs through one of these backends, in the agent phase (the agent
edits its workspace) and in the test phase (hidden tests import the agent's code).

Three backends, strongest first (``get_backend("auto")`` probes once and picks the first
that works on this host)::

    name          as root                                     as a normal user
    bubblewrap    bwrap (mount/pid/net/ipc/uts namespaces),    bwrap --unshare-all
                  seccomp, rlimits, drop to uid 61000+slot    (user namespace), seccomp, rlimits
    namespaces    unshare(2) net/ipc/uts, seccomp, rlimits,   (not available)
                  drop to uid 61000+slot, sweep that uid
    none          rlimits + process-group kill only           the same

Every backend -- these, the warm jail, the container runtimes, a plugin -- has the lifecycle of
:mod:`~reliabench.sandbox.environment` (``refuse``, ``prepare``, ``start`` an environment;
``exec``, ``copy_in``, ``copy_out``, ``stop_processes``, ``close``); the host backends keep
``run()``, one command (``start`` + ``exec`` + ``close``).

What every host backend promises: the command runs with ``workdir`` as its cwd, a cleared
environment (then ``env``), the resource limits of :class:`Limits` (CPU, address space,
processes, file size; wall time and output size enforced by the parent), stdout and stderr
captured to *files* (an escaped grandchild holding a pipe would hang a pipe reader), and at
the end no process of the run is left (pid namespace for bubblewrap, a kill of every process
of the slot uid for namespaces, a process-group kill for none -- which a ``setsid()``
grandchild escapes: ``none`` says so in its name and warns).

Why the uid drop: ``RLIMIT_NPROC`` does nothing for root, even inside a user namespace that
root created, so a fork bomb run as root exhausts the host. As root, bubblewrap is started as
root *without* a user namespace (so that it can bind interpreters the slot uid could not reach
on the host, such as a pyenv build under the 0700 ``/root``), then ``prlimit`` and ``setpriv``
(util-linux) set the limits and drop to the slot uid inside the sandbox, with no capabilities
and ``no_new_privs``. The workspace is handed to the slot uid for the run and handed back to
the caller afterwards (files with several hard links are never chowned).

The package, one module per concern:

* :mod:`~reliabench.sandbox.environment` -- THE contract: environment specs, the
  :class:`~reliabench.sandbox.environment.EnvironmentBackend` and
  :class:`~reliabench.sandbox.environment.Environment` protocols with their lifecycle;
* :mod:`~reliabench.sandbox.base` -- :class:`Limits`, :class:`SandboxResult` and the
  one-command ``run()`` protocol (:class:`SandboxBackend`);
* :mod:`~reliabench.sandbox.host` -- the lifecycle over backends that run one command at a
  time on this host (:class:`~reliabench.sandbox.host.HostBackend`);
* :mod:`~reliabench.sandbox.rootfs` -- what a jail shows of the host (system folders, ``/etc``
  files, the interpreter);
* :mod:`~reliabench.sandbox.registry` -- the registry (:data:`BACKENDS`, plugins of the
  ``reliabench.sandboxes`` entry-point group), probing and ``auto``;
* :mod:`~reliabench.sandbox.supervision` -- rlimits, wall-time and output-size enforcement;
* :mod:`~reliabench.sandbox.slots` -- slot uids, slot locks, lending the workdir, uid sweeps,
  clearing the slot uid's kernel keyrings;
* :mod:`~reliabench.sandbox.seccomp` -- the seccomp filter every sandbox path installs (the
  keyring calls and Docker's list of denied calls);
* :mod:`~reliabench.sandbox.bubblewrap`, :mod:`~reliabench.sandbox.namespaces`,
  :mod:`~reliabench.sandbox.none` -- the built-in host backends. The warm jail's backend is
  :mod:`reliabench.warm.backend` (in the registry as ``warm``, not a ``--sandbox`` choice of
  a run: see its docstring).

See ``docs/threat-model.md`` for what each level does and does not stop.
"""

from reliabench.sandbox.base import (
    DEFAULT_PATH,
    MAX_SECONDS,
    Limits,
    SandboxBackend,
    SandboxResult,
)
from reliabench.sandbox.bubblewrap import BubblewrapBackend
from reliabench.sandbox.environment import (
    HOST,
    Environment,
    EnvironmentBackend,
    EnvironmentSpec,
    Mount,
    PreparedSpec,
)
from reliabench.sandbox.host import HostBackend
from reliabench.sandbox.namespaces import NamespacesBackend
from reliabench.sandbox.none import NoSandboxBackend
from reliabench.sandbox.registry import (
    BACKENDS,
    ENTRY_POINT_GROUP,
    SANDBOXES,
    available_backends,
    get_backend,
)
from reliabench.sandbox.slots import SLOT_UID_BASE, slot_uid

__all__ = [
    "BACKENDS",
    "DEFAULT_PATH",
    "ENTRY_POINT_GROUP",
    "HOST",
    "MAX_SECONDS",
    "SANDBOXES",
    "SLOT_UID_BASE",
    "BubblewrapBackend",
    "Environment",
    "EnvironmentBackend",
    "EnvironmentSpec",
    "HostBackend",
    "Limits",
    "Mount",
    "NamespacesBackend",
    "NoSandboxBackend",
    "PreparedSpec",
    "SandboxBackend",
    "SandboxResult",
    "available_backends",
    "get_backend",
    "slot_uid",
]
