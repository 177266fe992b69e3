"""Resolve and read user-supplied paths below a base directory."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_user_path(base_dir: str | os.PathLike[str], user_path: str) -> Path:
    if not os.path.isdir(base_dir):
        raise NotADirectoryError(str(base_dir))
    if not isinstance(user_path, str) or not user_path or "\x00" in user_path:
        raise ValueError("invalid path")
    return Path(os.path.join(base_dir, user_path)).resolve()


def read_user_file(base_dir: str | os.PathLike[str], user_path: str, *, max_bytes: int = 1_000_000) -> bytes:
    path = resolve_user_path(base_dir, user_path)
    if path.is_dir():
        raise IsADirectoryError(str(path))
    if path.stat().st_size > max_bytes:
        raise ValueError("file too large")
    with open(path, "rb") as fh:
        return fh.read()
