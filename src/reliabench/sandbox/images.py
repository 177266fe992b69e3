"""Container images for the podman and docker backends: find one, or build one from a Dockerfile.

Runs are offline: an image is never pulled. A task's ``image = "REF"`` must already be in the
runtime's local storage (:func:`inspect_image` reads its id, recorded as the digest of every
rollout that ran in it, and the variables its configuration sets). A task's
``dockerfile = "environment/Dockerfile"`` is built by the runtime with the network off and
without pulling (:func:`build_image`), its folder as the context, and tagged by a hash of
everything the build reads (:func:`context_hash`: the files of the context, the Dockerfile's
name and the ids of its base images), so a second ``prepare`` of an unchanged context finds
the tag and builds nothing. A build that fails raises :class:`~reliabench.errors.SandboxError`
with the last lines of its output.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final, Protocol

from reliabench.errors import SandboxError
from reliabench.files.untrusted import open_regular, walk_tree
from reliabench.sandbox.environment import ImageRef

__all__ = [
    "BUILD_TAG_PREFIX",
    "CliResult",
    "ImageInfo",
    "RuntimeCli",
    "base_image_ids",
    "build_image",
    "build_tag",
    "context_hash",
    "inspect_image",
    "output_tail",
    "run_cli",
]

BUILD_TAG_PREFIX: Final = "reliabench-build"
"""Images built from a task's Dockerfile are tagged ``reliabench-build/<folder>:<context hash>``."""

_HASH_FORMAT: Final = "reliabench-build v1"  # bump when what the hash covers changes
_TAIL_LINES: Final = 12
_BUILD_NOISE: Final = ("legacy builder is deprecated", "BuildKit is currently disabled",
                       "environment-variable.", "Sending build context")


@dataclass(frozen=True, slots=True)
class CliResult:
    """What one call of a runtime's command line gave.

    Attributes:
        returncode: Its exit status.
        stdout: Its standard output (UTF-8, errors replaced).
        stderr: Its standard error, likewise.
    """

    returncode: int
    stdout: str
    stderr: str


class RuntimeCli(Protocol):
    """A container runtime's command line (``podman ...``, ``docker ...``) as the backends call it."""

    name: str
    """``podman`` or ``docker``."""

    def __call__(self, args: Sequence[str], *, timeout: float,
                 env: Mapping[str, str] | None = None) -> CliResult:
        """Run ``RUNTIME args...``; ``env`` adds variables to the client's environment.

        Raises:
            SandboxError: The runtime is missing or did not finish within ``timeout`` seconds.
        """
        ...

    def build_args(self, *, dockerfile: Path, context: Path, tag: str,
                   labels: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        """The arguments and extra client variables of a build with the network off, never pulling."""
        ...


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """An image found in a runtime's local storage.

    Attributes:
        ref: The reference asked for and the image's id (``sha256:...``).
        env: The variables its configuration sets (``ENV`` lines), in order.
        labels: Its labels.
    """

    ref: ImageRef
    env: tuple[tuple[str, str], ...]
    labels: Mapping[str, str]


def output_tail(text: str, lines: int = _TAIL_LINES) -> str:
    """The last ``lines`` non-empty lines of ``text``, joined by `` | `` (for a one-line message)."""
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(kept[-lines:])


def _parse_env(entries: object) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    if isinstance(entries, list):
        for item in entries:
            if isinstance(item, str) and "=" in item:
                key, _, value = item.partition("=")
                out.append((key, value))
    return tuple(out)


def inspect_image(cli: RuntimeCli, reference: str, *, source: str = "") -> ImageInfo:
    """The image ``reference`` as ``cli``'s runtime stores it locally (never pulled).

    Args:
        cli: The runtime.
        reference: An image reference (``reliabench/python3-pytest:bookworm``, ``sha256:...``).
        source: Where the reference was declared (``FILE:LINE``), for the message.

    Raises:
        SandboxError: The image is not in the runtime's local storage (the message names the
            fix), or the runtime failed.
    """
    if not reference or reference.startswith("-") or any(c.isspace() for c in reference):
        raise SandboxError(f"{source or 'the task'}: {reference!r} is not an image reference")
    result = cli(["image", "inspect", reference], timeout=120)
    if result.returncode != 0:
        where = f"{source}: " if source else ""
        raise SandboxError(
            f"{where}image {reference!r} is not in {cli.name}'s local storage (reliabench never pulls: "
            f"runs are offline): load it first, e.g. `{cli.name} load -i IMAGE.tar` or `{cli.name} pull "
            f"{reference}` on a machine that reaches its registry ({output_tail(result.stderr, 1)})")
    try:
        data = json.loads(result.stdout)
        item = data[0] if isinstance(data, list) else data
        image_id = str(item["Id"])
        config = item.get("Config") or {}
    except (ValueError, LookupError, TypeError, AttributeError) as exc:
        raise SandboxError(f"{cli.name} image inspect {reference}: unreadable answer ({exc})") from None
    digest = image_id if image_id.startswith("sha256:") else f"sha256:{image_id}"
    labels = config.get("Labels") or {}
    return ImageInfo(ImageRef(reference, digest), _parse_env(config.get("Env")),
                     {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {})


_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", re.IGNORECASE)


def _base_images(dockerfile_text: str) -> list[str]:
    """The images the ``FROM`` lines name (not earlier stages, not ``scratch``)."""
    stages: set[str] = set()
    bases: list[str] = []
    for line in dockerfile_text.splitlines():
        match = _FROM.match(line)
        if match is None:
            continue
        image, alias = match.group(1), match.group(2)
        if image.lower() != "scratch" and image.lower() not in stages:
            bases.append(image)
        if alias:
            stages.add(alias.lower())
    return bases


def base_image_ids(cli: RuntimeCli, dockerfile_text: str) -> dict[str, str | None]:
    """The local id of each base image the ``FROM`` lines name (None: not in local storage)."""
    ids: dict[str, str | None] = {}
    for base in _base_images(dockerfile_text):
        found = cli(["image", "inspect", "--format", "{{.Id}}", base], timeout=120)
        ids[base] = found.stdout.strip() if found.returncode == 0 and found.stdout.strip() else None
    return ids


def _read_dockerfile(dockerfile: Path) -> str:
    try:
        with open_regular(dockerfile) as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError as exc:
        raise SandboxError(f"cannot read the Dockerfile {dockerfile}: {exc.strerror or exc}") from None


def context_hash(cli: RuntimeCli, dockerfile: Path) -> str:
    """A hash of everything a build of ``dockerfile`` reads: its context, its name, its bases.

    The context is the Dockerfile's folder: every entry's path, kind and permission bits and
    every regular file's content (a link's target as text, never followed). Each base image
    of a ``FROM`` line contributes its local id (or "missing"), so re-importing a base
    rebuilds what stands on it.

    Raises:
        SandboxError: The Dockerfile cannot be read.
    """
    context = dockerfile.parent
    digest = hashlib.sha256()
    digest.update(f"{_HASH_FORMAT}\n{cli.name}\n{dockerfile.name}\n".encode())
    text = _read_dockerfile(dockerfile)
    for base, base_id in base_image_ids(cli, text).items():
        digest.update(f"base {base} {base_id or 'missing'}\n".encode())
    for entry in walk_tree(context):
        mode = stat.S_IMODE(entry.mode)
        digest.update(f"{entry.kind} {entry.rel!r} {mode:o}\n".encode("utf-8", "surrogateescape"))
        path = context / entry.rel
        if entry.kind == "file":
            try:
                with open_regular(path, under=context) as fh:
                    while chunk := fh.read(1 << 20):
                        digest.update(chunk)
            except OSError as exc:
                digest.update(f"unreadable {exc.errno}\n".encode())
        elif entry.kind == "link":
            try:
                digest.update(os.fsencode(os.readlink(path)))
            except OSError:
                digest.update(b"unreadable link")
    return digest.hexdigest()


def build_tag(dockerfile: Path, digest: str) -> str:
    """The tag of a build: ``reliabench-build/<folder name>:<first 16 hex digits of the hash>``."""
    folder = re.sub(r"[^a-z0-9._-]+", "-", dockerfile.parent.name.lower()).strip(".-_") or "context"
    return f"{BUILD_TAG_PREFIX}/{folder[:64]}:{digest[:16]}"


def build_image(cli: RuntimeCli, dockerfile: Path, *, source: str = "",
                timeout: float = 1800.0) -> ImageInfo:
    """The image of ``dockerfile``: found by its context hash, or built (network off, no pull).

    Args:
        cli: The runtime.
        dockerfile: The host path of the Dockerfile; its folder is the build context.
        source: Where the spec was declared (``FILE:LINE``), for messages.
        timeout: Seconds the build may take.

    Raises:
        SandboxError: The Dockerfile is missing, or the build failed (with its last lines) or
            took longer than ``timeout``.
    """
    where = f"{source}: " if source else ""
    if not dockerfile.is_file():
        raise SandboxError(f"{where}the Dockerfile {dockerfile} does not exist")
    missing = [base for base, found in base_image_ids(cli, _read_dockerfile(dockerfile)).items()
               if found is None and "$" not in base]
    if missing:
        raise SandboxError(f"{where}{dockerfile}: the base image {missing[0]!r} is not in {cli.name}'s local "
                           f"storage (reliabench never pulls: runs are offline): load it first, e.g. "
                           f"`{cli.name} load -i IMAGE.tar`")
    digest = context_hash(cli, dockerfile)
    tag = build_tag(dockerfile, digest)
    found = cli(["image", "inspect", "--format", "{{.Id}}", tag], timeout=120)
    if found.returncode != 0:
        args, extra_env = cli.build_args(dockerfile=dockerfile, context=dockerfile.parent, tag=tag,
                                         labels={"org.reliabench.context": digest})
        result = cli(args, timeout=timeout, env=extra_env)
        if result.returncode != 0:
            output = "\n".join(line for line in (result.stdout + "\n" + result.stderr).splitlines()
                               if not any(noise in line for noise in _BUILD_NOISE))
            raise SandboxError(f"{where}building {dockerfile} with {cli.name} failed (exit status "
                               f"{result.returncode}; network off, nothing pulled): {output_tail(output)}")
    info = inspect_image(cli, tag, source=source)
    return ImageInfo(ImageRef(tag, info.ref.digest), info.env, info.labels)


def run_cli(argv: Sequence[str], *, env: Mapping[str, str], timeout: float, what: str,
            cwd: Path | None = None) -> CliResult:
    """Run a runtime's client with output to files (a build's output may be large).

    ``cwd`` is the client's working directory, which processes it leaves behind inherit
    (podman's ``conmon`` writes a file named ``oom`` there when a container runs out of memory).

    Raises:
        SandboxError: The client is missing or did not finish within ``timeout`` seconds.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.run(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                  env=dict(env), timeout=timeout, check=False, cwd=cwd)
        except FileNotFoundError:
            raise SandboxError(f"{what}: {argv[0]} is not installed") from None
        except subprocess.TimeoutExpired:
            raise SandboxError(f"{what}: `{' '.join(argv[:3])} ...` did not finish within "
                               f"{timeout:g} s") from None
        return CliResult(proc.returncode, _read_tail(out), _read_tail(err))


def _read_tail(fh: IO[bytes], limit: int = 4 * 1024 * 1024) -> str:
    """At most the last ``limit`` bytes of a temporary file, decoded."""
    size = fh.seek(0, os.SEEK_END)
    fh.seek(max(0, size - limit))
    return fh.read().decode("utf-8", "replace")
