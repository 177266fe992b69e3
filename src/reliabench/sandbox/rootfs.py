"""What a sandbox shows of the host: the read-only system folders, a few ``/etc`` files, the interpreter.

Every jail that builds its own root -- the ``bubblewrap`` backend and the warm test workers'
jail (:mod:`reliabench.warm.jail`) -- shows the same things read-only, chosen here once:

* :data:`SYSTEM_DIRS` (``/usr``, ``/lib`` ...; a top-level link such as ``/bin -> usr/bin`` is
  recreated as a link);
* the files of :data:`ETC_FILES` that exist (users and groups, name resolution, the dynamic
  linker's cache, certificates);
* the interpreter's prefixes (:func:`python_prefixes`: the venv, the base installation);

and a private ``/dev/shm`` of :data:`SHM_BYTES`. :func:`under` and :func:`ancestors` are the
path arithmetic both use to order their binds.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

__all__ = ["ETC_FILES", "SHM_BYTES", "SYSTEM_DIRS", "ancestors", "python_prefixes", "under"]

ETC_FILES: Final = (
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/localtime",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/mime.types",
    "/etc/gitconfig",
)
"""The ``/etc`` files a sandbox shows read-only (those that exist on the host)."""

SYSTEM_DIRS: Final = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""The system folders a sandbox shows read-only (a top-level link is recreated as a link)."""

SHM_BYTES: Final = 64 * 1024**2
"""Size of a sandbox's private ``/dev/shm``."""


def under(path: str, base: str) -> bool:
    """Whether ``path`` is ``base`` or below it (both absolute and normalised).

    Examples:
        >>> under("/usr/lib", "/usr"), under("/usr", "/usr"), under("/usrx", "/usr")
        (True, True, False)
    """
    return path == base or path.startswith(base.rstrip("/") + "/")


def ancestors(path: str) -> list[str]:
    """The proper ancestors of the absolute ``path`` below ``/``, outermost first.

    Examples:
        >>> ancestors("/a/b/c")
        ['/a', '/a/b']
    """
    parts = Path(path).parts[1:]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def python_prefixes() -> list[str]:
    """The real paths a sandbox must show for this interpreter to run: its prefixes and its folder.

    ``sys.prefix`` (a venv), the base installation and the folder of the executable, without
    ``/`` and without one that lies below another.
    """
    out: list[str] = []
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        real = os.path.realpath(prefix)
        if real not in out and real != "/":
            out.append(real)
    exe_dir = os.path.dirname(os.path.realpath(sys.executable))
    if exe_dir and exe_dir != "/" and not any(under(exe_dir, p) for p in out):
        out.append(exe_dir)
    return out
