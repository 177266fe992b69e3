"""Safely extract untrusted tar archives."""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path, PurePosixPath


class UnsafeArchiveError(ValueError):
    """Raised when an archive contains a member that must not be extracted."""


def _relative_parts(member: tarfile.TarInfo) -> tuple[str, ...]:
    name = member.name
    if not name or name.startswith(("/", "\\")) or PurePosixPath(name).is_absolute() or os.path.isabs(name):
        raise UnsafeArchiveError(f"absolute member name: {name!r}")
    parts = tuple(part for part in PurePosixPath(name).parts if part not in ("", "."))
    if ".." in parts:
        raise UnsafeArchiveError(f"member name contains '..': {name!r}")
    return parts


def _check_member(member: tarfile.TarInfo, root: Path) -> tuple[str, ...]:
    if member.issym() or member.islnk():
        raise UnsafeArchiveError(f"links are not allowed: {member.name!r}")
    if not (member.isfile() or member.isdir()):
        raise UnsafeArchiveError(f"unsupported member type: {member.name!r}")
    parts = _relative_parts(member)
    target = root.joinpath(*parts).resolve()
    if target != root and not target.is_relative_to(root):
        raise UnsafeArchiveError(f"member escapes destination: {member.name!r}")
    return parts


def safe_extract(archive_path: str | os.PathLike[str], dest_dir: str | os.PathLike[str]) -> list[str]:
    """Extract ``archive_path`` into ``dest_dir``; return the sorted relative file paths."""
    with tarfile.open(archive_path, "r:*") as archive:
        members = archive.getmembers()
        dest = Path(dest_dir)
        root = dest.resolve()
        plan = [(member, _check_member(member, root)) for member in members]

        dest.mkdir(parents=True, exist_ok=True)
        root = dest.resolve(strict=True)
        extracted: list[str] = []
        for member, parts in plan:
            target = root.joinpath(*parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            source = archive.extractfile(member)
            if source is None:  # pragma: no cover - regular files always have data
                raise UnsafeArchiveError(f"cannot read member: {member.name!r}")
            with source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink)
            extracted.append("/".join(parts))
    return sorted(extracted)
