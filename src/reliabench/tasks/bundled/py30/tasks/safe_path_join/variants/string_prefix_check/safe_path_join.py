"""Resolve and read user-supplied paths below a base directory."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_user_path(base_dir: str | os.PathLike[str], user_path: str) -> Path:
    base = Path(base_dir)
    if not base.is_dir():
        raise NotADirectoryError(str(base))
    if not isinstance(user_path, str) or not user_path or "\x00" in user_path:
        raise ValueError("invalid path")
    if user_path.startswith(("/", "\\")):
        raise ValueError("absolute paths are not allowed")
    real_base = base.resolve()
    target = (real_base / user_path).resolve()
    if not str(target).startswith(str(real_base)):
        raise ValueError("path escapes the base directory")
    return target


def read_user_file(base_dir: str | os.PathLike[str], user_path: str, *, max_bytes: int = 1_000_000) -> bytes:
    target = resolve_user_path(base_dir, user_path)
    if not target.exists():
        raise FileNotFoundError(user_path)
    if target.is_dir():
        raise IsADirectoryError(user_path)
    data = target.read_bytes()
    if len(data) > max_bytes:
        raise ValueError("file too large")
    return data
