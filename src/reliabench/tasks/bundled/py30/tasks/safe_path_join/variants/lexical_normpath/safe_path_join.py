"""Resolve and read user-supplied paths below a base directory."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_user_path(base_dir: str | os.PathLike[str], user_path: str) -> Path:
    if not os.path.isdir(base_dir):
        raise NotADirectoryError(str(base_dir))
    if not isinstance(user_path, str) or not user_path or "\x00" in user_path:
        raise ValueError("invalid path")
    if os.path.isabs(user_path):
        raise ValueError("absolute paths are not allowed")
    base = os.path.abspath(base_dir)
    target = os.path.normpath(os.path.join(base, user_path))
    if os.path.commonpath([base, target]) != base:
        raise ValueError("path escapes the base directory")
    # Symlinks inside the base are trusted; return the real location.
    return Path(target).resolve()


def read_user_file(base_dir: str | os.PathLike[str], user_path: str, *, max_bytes: int = 1_000_000) -> bytes:
    target = resolve_user_path(base_dir, user_path)
    if not target.exists():
        raise FileNotFoundError(user_path)
    if target.is_dir():
        raise IsADirectoryError(user_path)
    if target.stat().st_size > max_bytes:
        raise ValueError("file too large")
    return target.read_bytes()
