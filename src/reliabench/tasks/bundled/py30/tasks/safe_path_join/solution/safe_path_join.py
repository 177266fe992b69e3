"""Resolve and read user-supplied paths below a base directory."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_user_path(base_dir: str | os.PathLike[str], user_path: str) -> Path:
    """Return the resolved absolute path of ``user_path`` inside ``base_dir``."""
    base = Path(base_dir)
    if not base.is_dir():
        raise NotADirectoryError(f"base directory does not exist: {base}")
    if not isinstance(user_path, str) or not user_path:
        raise ValueError("path must be a non-empty string")
    if "\x00" in user_path:
        raise ValueError("path must not contain NUL characters")
    candidate = Path(user_path)
    if candidate.is_absolute() or os.path.isabs(user_path):
        raise ValueError("absolute paths are not allowed")
    real_base = base.resolve(strict=True)
    target = (real_base / candidate).resolve()
    if target != real_base and not target.is_relative_to(real_base):
        raise ValueError("path escapes the base directory")
    return target


def read_user_file(base_dir: str | os.PathLike[str], user_path: str, *, max_bytes: int = 1_000_000) -> bytes:
    """Return the content of the file ``user_path`` below ``base_dir``."""
    target = resolve_user_path(base_dir, user_path)
    if not target.exists():
        raise FileNotFoundError(f"no such file: {user_path}")
    if target.is_dir():
        raise IsADirectoryError(f"is a directory: {user_path}")
    size = target.stat().st_size
    if size > max_bytes:
        raise ValueError(f"file is larger than {max_bytes} bytes")
    return target.read_bytes()
