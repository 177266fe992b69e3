"""Writing a user-named output file: atomic for files, never replacing a device or a pipe.

``--output report.html`` is written to a temporary file beside it and renamed over it, so a
reader never sees half a file. That rename must not be done to something that is not a
regular file: run as root, ``--html /dev/null`` would replace the system's ``/dev/null``
with a regular file (mode 0600) and break every process that writes to it -- sandboxes
included. :func:`open_output` writes straight into an existing device, FIFO or socket path,
and atomically everywhere else. A file that cannot be written (a full disk, a read-only or
missing place, no permission) is one :class:`~reliabench.errors.OutputError` naming it, never a
traceback, and leaves nothing half-written.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from reliabench.errors import OutputError

__all__ = ["open_output"]


def _cannot(dest: Path, exc: OSError) -> OutputError:
    return OutputError(f"{dest}: cannot write the output ({exc.strerror or exc}); free space, fix the "
                       "permissions or give another path")


@contextlib.contextmanager
def open_output(path: str | Path) -> Iterator[IO[str]]:
    """Open ``path`` for writing UTF-8 text; see the module docstring.

    Example:
        >>> with open_output("/dev/null") as fh:
        ...     _ = fh.write("nothing")
        >>> import stat as _stat; _stat.S_ISCHR(os.stat("/dev/null").st_mode)
        True

    Raises:
        OutputError: ``path`` is a directory, or cannot be written (an ``OSError`` while
            writing to it, inside the block too).
    """
    dest = Path(path)
    try:
        mode: int | None = os.stat(dest).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise _cannot(dest, exc) from None
    if mode is not None and not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):
            raise OutputError(f"{dest}: is a directory (give a file to write)")
        try:
            with open(dest, "w", encoding="utf-8") as fh:  # a device, FIFO or socket: write through
                yield fh
        except OSError as exc:
            raise _cannot(dest, exc) from None
        return
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    except OSError as exc:
        raise _cannot(dest, exc) from None
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
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _cannot(dest, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
