"""Safely extract untrusted tar archives."""

from __future__ import annotations

import os
import tarfile
from pathlib import PurePosixPath


class UnsafeArchiveError(ValueError):
    """Raised when an archive contains a member that must not be extracted."""


def safe_extract(archive_path: str | os.PathLike[str], dest_dir: str | os.PathLike[str]) -> list[str]:
    os.makedirs(dest_dir, exist_ok=True)
    with tarfile.open(archive_path, "r:*") as tar:
        tar.extractall(dest_dir)
        return sorted(PurePosixPath(m.name).as_posix() for m in tar.getmembers() if m.isfile())
