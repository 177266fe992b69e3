"""Safely extract untrusted tar archives."""

from __future__ import annotations

import os


class UnsafeArchiveError(ValueError):
    """Raised when an archive contains a member that must not be extracted."""


def safe_extract(archive_path: str | os.PathLike[str], dest_dir: str | os.PathLike[str]) -> list[str]:
    """Extract ``archive_path`` into ``dest_dir``; return the sorted relative file paths."""
    raise NotImplementedError
