"""Writing a user-named output file: atomic for files, never replacing a device or a pipe.

``--output report.html`` is written to a temporary file beside it and renamed over it, so a
reader never sees half a file. That rename must not be done to something that is not a
regular file: run as root, ``--html /dev/null`` would replace the system's ``/dev/null``
with a regular file (mode 0600) and break every process that writes to it -- sandboxes
included. :func:`open_output` writes straight into an existing device, FIFO or socket path,
and atomically everywhere else.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = ["open_output"]


@contextlib.contextmanager
def open_output(path: str | Path) -> Iterator[IO[str]]:
    """Open ``path`` for writing UTF-8 text; see the module docstring.

    Example:
        >>> with open_output("/dev/null") as fh:
        ...     _ = fh.write("nothing")
        >>> import stat as _stat; _stat.S_ISCHR(os.stat("/dev/null").st_mode)
        True
    """
    dest = Path(path)
    try:
        mode = os.stat(dest).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(dest))
        with open(dest, "w", encoding="utf-8") as fh:  # a device, FIFO or socket: write through
            yield fh
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
        if mode is not None:
            with contextlib.suppress(OSError):
                os.chmod(tmp, stat.S_IMODE(mode))  # keep the replaced file's permissions
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
