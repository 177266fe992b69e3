"""Resolve and read user-supplied paths below a base directory."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_user_path(base_dir: str | os.PathLike[str], user_path: str) -> Path:
    """Return the resolved absolute path of ``user_path`` inside ``base_dir``."""
    raise NotImplementedError


def read_user_file(base_dir: str | os.PathLike[str], user_path: str, *, max_bytes: int = 1_000_000) -> bytes:
    """Return the content of the file ``user_path`` below ``base_dir``."""
    raise NotImplementedError
