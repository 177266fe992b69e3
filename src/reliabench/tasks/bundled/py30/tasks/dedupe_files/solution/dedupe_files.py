"""Find duplicate files below a directory."""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

CHUNK_SIZE = 1 << 16


@dataclass(frozen=True)
class DuplicateGroup:
    size: int
    sha256: str
    paths: tuple[str, ...]


def _regular_files(root: Path) -> Iterator[tuple[Path, int]]:
    stack = [root]
    while stack:
        directory = stack.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    yield Path(entry.path), entry.stat(follow_symlinks=False).st_size


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK_SIZE), b""):
            digest.update(chunk)
    return digest.hexdigest()


def find_duplicates(root: str | os.PathLike[str], *, min_size: int = 1) -> list[DuplicateGroup]:
    """Return groups of identical files below ``root``."""
    base = Path(root)
    if not base.is_dir():
        raise NotADirectoryError(f"not a directory: {base}")
    if isinstance(min_size, bool) or not isinstance(min_size, int) or min_size < 0:
        raise ValueError("min_size must be a non-negative integer")

    by_size: dict[int, list[Path]] = defaultdict(list)
    for path, size in _regular_files(base):
        if size >= min_size:
            by_size[size].append(path)

    groups: list[DuplicateGroup] = []
    for size, candidates in by_size.items():
        if len(candidates) < 2:
            continue
        by_hash: dict[str, list[str]] = defaultdict(list)
        for path in candidates:
            by_hash[_sha256(path)].append(path.relative_to(base).as_posix())
        for digest, paths in by_hash.items():
            if len(paths) > 1:
                groups.append(DuplicateGroup(size=size, sha256=digest, paths=tuple(sorted(paths))))

    groups.sort(key=lambda group: (-group.size, group.paths[0]))
    return groups


def wasted_bytes(groups: Iterable[DuplicateGroup]) -> int:
    """Return the bytes freed by keeping one file per group."""
    return sum(group.size * (len(group.paths) - 1) for group in groups)
