"""Semantic Versioning 2.0.0 parsing and precedence comparison."""

from __future__ import annotations

from typing import Iterable, NamedTuple


class Version(NamedTuple):
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()


def parse(version: str) -> Version:
    """Parse a semantic version string into a :class:`Version`."""
    raise NotImplementedError


def compare(a: str, b: str) -> int:
    """Return -1, 0 or 1 according to the semver precedence of ``a`` versus ``b``."""
    raise NotImplementedError


def sort_versions(versions: Iterable[str]) -> list[str]:
    """Return the version strings sorted by ascending precedence (stable)."""
    raise NotImplementedError
