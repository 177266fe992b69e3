"""Find duplicate files below a directory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class DuplicateGroup:
    size: int
    sha256: str
    paths: tuple[str, ...]


def find_duplicates(root: str | os.PathLike[str], *, min_size: int = 1) -> list[DuplicateGroup]:
    """Return groups of identical files below ``root``."""
    raise NotImplementedError


def wasted_bytes(groups: Iterable[DuplicateGroup]) -> int:
    """Return the bytes freed by keeping one file per group."""
    raise NotImplementedError
