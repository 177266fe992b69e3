"""Summarize the regular files found under a directory tree."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


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
    raise NotImplementedError
