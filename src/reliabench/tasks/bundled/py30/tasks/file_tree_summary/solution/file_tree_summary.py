"""Summarize the regular files found under a directory tree."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePath


@dataclass
class TreeSummary:
    total_size: int = 0
    file_count: int = 0
    dir_count: int = 0
    by_extension: dict[str, int] = field(default_factory=dict)
    bytes_by_extension: dict[str, int] = field(default_factory=dict)
    largest_files: list[tuple[str, int]] = field(default_factory=list)


def summarize_tree(
    root: str | os.PathLike[str],
    largest: int = 3,
    include_hidden: bool = True,
) -> TreeSummary:
    """Walk ``root`` recursively (ignoring symlinks) and summarize its regular files."""
    if largest < 0:
        raise ValueError(f"largest must be >= 0, got {largest}")
    base = Path(root)
    if not base.exists():
        raise FileNotFoundError(str(base))
    if not base.is_dir():
        raise NotADirectoryError(str(base))

    summary = TreeSummary()
    files: list[tuple[str, int]] = []
    pending: list[tuple[Path, str]] = [(base, "")]
    while pending:
        directory, prefix = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                if not include_hidden and entry.name.startswith("."):
                    continue
                relative = prefix + entry.name
                # follow_symlinks=False: symlinks are neither dirs nor files here.
                if entry.is_dir(follow_symlinks=False):
                    summary.dir_count += 1
                    pending.append((Path(entry.path), relative + "/"))
                elif entry.is_file(follow_symlinks=False):
                    size = entry.stat(follow_symlinks=False).st_size
                    extension = PurePath(entry.name).suffix.lower()
                    summary.file_count += 1
                    summary.total_size += size
                    summary.by_extension[extension] = summary.by_extension.get(extension, 0) + 1
                    summary.bytes_by_extension[extension] = (
                        summary.bytes_by_extension.get(extension, 0) + size
                    )
                    files.append((relative, size))

    files.sort(key=lambda item: (-item[1], item[0]))
    summary.largest_files = files[:largest]
    return summary
