"""Semantic Versioning 2.0.0 parsing and precedence comparison."""

from __future__ import annotations

import functools
import re
from typing import Iterable, NamedTuple


class Version(NamedTuple):
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()


_CORE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")
_IDENT = re.compile(r"[0-9A-Za-z-]+")


def _split_identifiers(part: str, *, numeric_leading_zero_ok: bool) -> tuple[str, ...]:
    identifiers = part.split(".")
    for ident in identifiers:
        if not _IDENT.fullmatch(ident):
            raise ValueError(f"invalid identifier {ident!r}")
        if not numeric_leading_zero_ok and ident.isdigit() and len(ident) > 1 and ident[0] == "0":
            raise ValueError(f"numeric identifier with leading zero: {ident!r}")
    return tuple(identifiers)


def parse(version: str) -> Version:
    """Parse a semantic version string into a :class:`Version`."""
    if not isinstance(version, str):
        raise TypeError(f"expected str, got {type(version).__name__}")
    rest, plus, build_part = version.partition("+")
    core, dash, pre_part = rest.partition("-")
    match = _CORE.fullmatch(core)
    if match is None:
        raise ValueError(f"invalid version core in {version!r}")
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()
    if dash:
        prerelease = _split_identifiers(pre_part, numeric_leading_zero_ok=False)
    if plus:
        build = _split_identifiers(build_part, numeric_leading_zero_ok=True)
    major, minor, patch = (int(g) for g in match.groups())
    return Version(major, minor, patch, prerelease, build)


def _cmp(x: int | str, y: int | str) -> int:
    return (x > y) - (x < y)  # type: ignore[operator]


def _compare_identifier(a: str, b: str) -> int:
    a_num, b_num = a.isdigit(), b.isdigit()
    if a_num and b_num:
        return _cmp(int(a), int(b))
    if a_num:
        return -1
    if b_num:
        return 1
    return _cmp(a, b)


def _compare_versions(va: Version, vb: Version) -> int:
    for x, y in ((va.major, vb.major), (va.minor, vb.minor), (va.patch, vb.patch)):
        if x != y:
            return _cmp(x, y)
    pa, pb = va.prerelease, vb.prerelease
    if not pa and not pb:
        return 0
    if not pa:
        return 1
    if not pb:
        return -1
    for ia, ib in zip(pa, pb):
        result = _compare_identifier(ia, ib)
        if result:
            return result
    return _cmp(len(pa), len(pb))


def compare(a: str, b: str) -> int:
    """Return -1, 0 or 1 according to the semver precedence of ``a`` versus ``b``."""
    return _compare_versions(parse(a), parse(b))


def sort_versions(versions: Iterable[str]) -> list[str]:
    """Return the version strings sorted by ascending precedence (stable)."""
    parsed = [(parse(v), v) for v in versions]
    parsed.sort(key=functools.cmp_to_key(lambda p, q: _compare_versions(p[0], q[0])))
    return [v for _, v in parsed]
