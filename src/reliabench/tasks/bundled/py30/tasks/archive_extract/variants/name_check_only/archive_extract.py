"""Safely extract untrusted tar archives."""

from __future__ import annotations

import os
import tarfile
from pathlib import PurePosixPath


class UnsafeArchiveError(ValueError):
    """Raised when an archive contains a member that must not be extracted."""


def safe_extract(archive_path: str | os.PathLike[str], dest_dir: str | os.PathLike[str]) -> list[str]:
    with tarfile.open(archive_path, "r:*") as tar:
        members = tar.getmembers()
        for member in members:
            path = PurePosixPath(member.name)
            if path.is_absolute() or ".." in path.parts:
                raise UnsafeArchiveError(f"unsafe member {member.name}")
        os.makedirs(dest_dir, exist_ok=True)
        for member in members:
            tar.extract(member, dest_dir)
        return sorted(path.as_posix() for path in (PurePosixPath(m.name) for m in members if m.isfile()))
