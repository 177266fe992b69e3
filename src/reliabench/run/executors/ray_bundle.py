"""What the Ray executor ships to its workers: the suite and the agents' files, packed and checked.

The driver packs them once (:func:`pack_run_bundle`) into a gzip'd tar that goes through Ray's
object store; each worker unpacks it into a private temporary folder on its node
(:func:`unpack_run_bundle`), checks every file against the manifest's sha256 and then loads the
suite (whose content hash the worker checks too) and the agents file from there. Files keep
their permission bits (less group and other write): a ``0600`` agents file stays private.

What is shipped:

- every file of the suite folder that the suite's content hash covers
  (:func:`reliabench.tasks.suite.suite_files`);
- the agents file, and each path the agents file refers to -- a ``replay`` agent's ``path``,
  a ``python`` agent's ``path`` folders, a ``command`` agent's program (a relative first
  argument) and ``readonly`` paths -- when it lies inside the agents file's folder. A file is
  shipped as is; a folder with its files except hidden ones (names starting with ``.``, so no
  ``.env`` or ``.git``), ``__pycache__``, ``*.pyc``, run directories (folders holding a
  ``reliabench.sqlite``) and the suite folder (shipped on its own).

What is not shipped, and must be on every node: reliabench itself with the extras the run
uses, absolute paths outside the agents file's folder (an agent CLI, a virtual environment
listed in ``readonly``), and Python agents' modules that are not under one of their ``path``
folders. A relative path that leads outside the agents file's folder is refused (it would
point somewhere else on the nodes). Environment variables are never shipped: the workers see
the environment of the ``ray start`` that started their node.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from reliabench.agents.config import load_agents, recording_paths
from reliabench.errors import SandboxError, UsageError
from reliabench.store import RunStore
from reliabench.tasks.suite import Suite, hash_suite_files, suite_files

__all__ = ["MAX_BUNDLE_BYTES", "BundleFile", "BundleManifest", "RunBundle", "UnpackedRun",
           "pack_run_bundle", "unpack_run_bundle"]

MAX_BUNDLE_BYTES = 256 * 1024 * 1024
"""Cap on the bundle's files (before compression): a larger one is refused with what is big."""

_SUITE = "suite"
_AGENTS = "agents"


@dataclass(frozen=True, slots=True)
class BundleFile:
    """One file of the bundle.

    Attributes:
        name: Its posix path inside the bundle (``suite/...`` or ``agents/...``).
        sha256: The hex sha256 of its content.
        size: Its size in bytes.
        mode: Its permission bits on the driver, without write bits for group and others
            (a ``0600`` agents file stays ``0600`` on the nodes).
    """

    name: str
    sha256: str
    size: int
    mode: int


@dataclass(frozen=True, slots=True)
class BundleManifest:
    """What a worker checks the unpacked files against (small; sent with every worker).

    Attributes:
        files: Every file of the bundle, sorted by name.
        suite_hash: The suite's content hash (checked again after the worker loads it).
        agents_file: The agents file's name inside the bundle.
        not_shipped: Paths the agents file refers to outside its folder: each node needs
            them at the same absolute path.
    """

    files: tuple[BundleFile, ...]
    suite_hash: str
    agents_file: str
    not_shipped: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        """Total size of the files, in bytes."""
        return sum(f.size for f in self.files)


@dataclass(frozen=True, slots=True)
class RunBundle:
    """The packed files (a gzip'd tar) and their manifest."""

    manifest: BundleManifest
    data: bytes


@dataclass(frozen=True, slots=True)
class UnpackedRun:
    """Where a worker unpacked a bundle."""

    root: Path
    suite_root: Path
    agents_file: Path


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _is_inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _normal(path: Path) -> Path:
    return Path(os.path.normpath(path.absolute()))


def _walk(top: Path, skip_dirs: set[Path]) -> Iterator[Path]:
    """Files under ``top`` that a folder reference ships (see the module docstring)."""
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and d != "__pycache__" and _normal(here / d) not in skip_dirs
            and not (here / d / RunStore.FILENAME).exists()
        )
        for name in sorted(filenames):
            p = here / name
            if not name.startswith(".") and not name.endswith(".pyc") and p.is_file():
                yield p


class _Packer:
    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, int]] = {}
        self.size = 0
        self.sizes: dict[str, int] = {}  # per reference, for the too-large message

    def add(self, name: str, path: Path, origin: str) -> None:
        if name in self.files:
            return
        try:
            data = path.read_bytes()
            mode = path.stat().st_mode
        except OSError as exc:
            raise UsageError(f"cannot read {path} to ship it to the Ray workers: "
                             f"{exc.strerror or exc}") from None
        self.files[name] = (data, stat.S_IMODE(mode) & 0o755)
        self.size += len(data)
        self.sizes[origin] = self.sizes.get(origin, 0) + len(data)
        if self.size > MAX_BUNDLE_BYTES:
            big = sorted(self.sizes.items(), key=lambda kv: -kv[1])[:3]
            raise UsageError(
                f"the files to ship to the Ray workers exceed {MAX_BUNDLE_BYTES / 2**20:g} MiB ("
                + ", ".join(f"{o}: {s / 2**20:.1f} MiB" for o, s in big)
                + "): give the agents file a folder of its own holding only what the agents need")


def pack_run_bundle(suite: Suite, agents_file: str | Path, agents_hash: str = "") -> RunBundle:
    """Pack the suite and the agents' files for Ray workers (see the module docstring).

    Args:
        suite: The run's suite; its folder must still have the content it was loaded with.
        agents_file: The agents file the run's agents were loaded from.
        agents_hash: The agents file's sha256 when the run started (empty: not checked).

    Returns:
        The bundle.

    Raises:
        UsageError: the suite or the agents file changed since the run loaded them, a
            relative path in the agents file leads outside its folder, a file cannot be read,
            or the files exceed :data:`MAX_BUNDLE_BYTES`.
    """
    agents_path = _normal(Path(agents_file))
    folder = agents_path.parent
    packer = _Packer()
    suite_root = _normal(suite.root)
    suite_pairs: list[tuple[str, bytes]] = []
    for p in suite_files(suite_root):
        rel = p.relative_to(suite_root).as_posix()
        packer.add(f"{_SUITE}/{rel}", p, f"suite {suite_root}")
        suite_pairs.append((rel, packer.files[f"{_SUITE}/{rel}"][0]))
    got = hash_suite_files(suite_pairs)
    if got != suite.content_hash:
        raise UsageError(f"the suite folder {suite_root} changed since the run loaded it (content hash "
                         f"{got[:12]} != {suite.content_hash[:12]}): run the command again")
    agents_name = f"{_AGENTS}/{agents_path.name}"
    packer.add(agents_name, agents_path, f"agents file {agents_path}")
    if agents_hash and _sha256(packer.files[agents_name][0]) != agents_hash:
        raise UsageError(f"the agents file {agents_path} changed since the run loaded it: "
                         "run the command again")
    with recording_paths() as refs:
        load_agents(agents_path)
    not_shipped: list[str] = []
    for ref in refs:
        target = _normal(ref.resolved)
        if not _is_inside(target, folder):
            if not Path(ref.written).expanduser().is_absolute():
                raise UsageError(
                    f"{agents_path}: {ref.field}: {ref.written!r} leads outside the agents file's "
                    f"folder ({target}); the Ray executor ships only files under {folder}: move it "
                    "there, or give an absolute path that exists on every node")
            not_shipped.append(str(target))
            continue
        origin = f"{ref.field} {target}"
        if target.is_file():
            packer.add(f"{_AGENTS}/{target.relative_to(folder).as_posix()}", target, origin)
        elif target.is_dir():
            for p in _walk(target, {suite_root}):
                packer.add(f"{_AGENTS}/{_normal(p).relative_to(folder).as_posix()}", p, origin)
    buf = io.BytesIO()
    files: list[BundleFile] = []
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        for name in sorted(packer.files):
            data, mode = packer.files[name]
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
            files.append(BundleFile(name, _sha256(data), len(data), mode))
    manifest = BundleManifest(tuple(files), suite.content_hash, agents_name,
                              tuple(sorted(set(not_shipped))))
    return RunBundle(manifest, buf.getvalue())


def _safe_name(name: str) -> bool:
    p = PurePosixPath(name)
    return (not p.is_absolute() and ".." not in p.parts and len(p.parts) >= 2
            and p.parts[0] in (_SUITE, _AGENTS))


def unpack_run_bundle(manifest: BundleManifest, data: bytes, dest: Path) -> UnpackedRun:
    """Unpack a bundle into the empty folder ``dest`` and check every file against ``manifest``.

    Raises:
        SandboxError: an entry is not in the manifest, a file's sha256 differs, or a file is
            missing; the message names the file.
    """
    expected = {f.name: f for f in manifest.files}
    seen: set[str] = set()
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar:
                name = member.name
                if not member.isfile() or name not in expected or name in seen or not _safe_name(name):
                    raise SandboxError(f"the shipped run files hold an unexpected entry {name!r}")
                stream = tar.extractfile(member)
                content = stream.read() if stream is not None else b""
                want = expected[name]
                got = _sha256(content)
                if got != want.sha256:
                    raise SandboxError(f"the shipped file {name} differs after unpacking "
                                       f"(sha256 {got[:12]} != {want.sha256[:12]})")
                target = dest.joinpath(*PurePosixPath(name).parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
                target.chmod(want.mode & 0o755)
                seen.add(name)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise SandboxError(f"cannot unpack the shipped run files into {dest}: {exc}") from None
    missing = sorted(expected.keys() - seen)
    if missing:
        raise SandboxError(f"the shipped run files lack {missing[0]}"
                           + (f" and {len(missing) - 1} more" if len(missing) > 1 else ""))
    for dirpath, _, _ in os.walk(dest):
        os.chmod(dirpath, 0o755)
    os.chmod(dest, 0o711)
    suite_root = dest / _SUITE
    suite_root.mkdir(exist_ok=True)
    return UnpackedRun(dest, suite_root, dest.joinpath(*PurePosixPath(manifest.agents_file).parts))
