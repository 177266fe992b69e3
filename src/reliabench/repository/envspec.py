"""The environment of a repository task: a Python, pinned packages, an install command.

A repository task's ``[repository.environment]`` table::

    python = "3.11"                      # an interpreter this machine has (/usr/bin/python3.11)
    requested_python = "3.9"             # what the benchmark's spec asked for (recorded, shown)
    packages = ["pytest==7.4.4", ...]    # pip requirement lines, pinned so they resolve the same today
    install = ["python", "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-e", "."]
    env = { SETUPTOOLS_SCM_PRETEND_VERSION = "8.0.0" }   # set for the install and the tests
    image = "..."                        # instead of all the above: an image (container backends)

Built once per spec and cached by :func:`spec_hash` (:mod:`reliabench.repository.venv`):
the packages go into a base venv shared by every task with the same spec; the install
command runs per base commit in the sandbox, with the checkout seen at the task's fixed
``workdir`` (``/testbed``), so the editable install it makes stays valid for every
rollout's workspace shown there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = ["PYTHON_DIRS", "RepoEnvSpec", "find_python", "parse_env_spec", "python_refusal", "spec_hash"]

PYTHON_DIRS: Final = ("/usr/bin", "/usr/local/bin")
"""Where an interpreter ``pythonX.Y`` is looked for (a venv from it must be runnable by the
sandbox's slot uids, which excludes interpreters under a private home folder)."""
_VERSION: Final = re.compile(r"^3\.\d{1,2}$")
_REQ: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?\s*(==|===|~=|>=|<=|!=|<|>)?")


@dataclass(frozen=True, slots=True)
class RepoEnvSpec:
    """A repository task's environment (see the module docstring).

    Attributes:
        python: ``3.X``: the interpreter the venv is made from.
        packages: pip requirement lines installed into the base venv, in order.
        install: The install command, run in the checkout (argv; ``python`` is the venv's).
        env: Variables set for the install command and the tests.
        requested_python: What the benchmark's own spec asked for, when it differs.
        image: An image instead of a venv (container backends only).
        notes: What was changed from the benchmark's spec and why, one line each.
    """

    python: str = "3.11"
    packages: tuple[str, ...] = ()
    install: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    requested_python: str | None = None
    image: str | None = None
    notes: tuple[str, ...] = ()

    def identity(self) -> dict[str, Any]:
        """What the cache key covers: everything that changes what is built (not the notes)."""
        return {"python": self.python, "packages": list(self.packages), "image": self.image}

    def as_toml(self) -> dict[str, object]:
        """The ``[repository.environment]`` table of this spec."""
        out: dict[str, object] = {"python": self.python}
        if self.requested_python:
            out["requested_python"] = self.requested_python
        if self.image:
            out["image"] = self.image
        out["packages"] = list(self.packages)
        out["install"] = list(self.install)
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def spec_hash(spec: RepoEnvSpec) -> str:
    """The cache key of a spec's base environment: sha256 of its identity, as canonical JSON.

    Example:
        >>> a = RepoEnvSpec(packages=("a==1",))
        >>> spec_hash(a) == spec_hash(RepoEnvSpec(packages=("a==1",), notes=("x",)))
        True
    """
    text = json.dumps(spec.identity(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def find_python(version: str) -> Path | None:
    """``pythonX.Y`` of :data:`PYTHON_DIRS`, or None when this machine does not have it."""
    for d in PYTHON_DIRS:
        path = Path(d) / f"python{version}"
        if os.access(path, os.X_OK):
            return path
    return None


def python_refusal(spec: RepoEnvSpec, where: str) -> str | None:
    """Why this machine cannot build ``spec`` (one line with the fix), or None."""
    if spec.image is not None:
        return None
    if find_python(spec.python) is not None:
        return None
    have = sorted(
        {
            p.name
            for d in PYTHON_DIRS
            if os.path.isdir(d)
            for p in Path(d).glob("python3.*")
            if _VERSION.match(p.name[6:])
        }
    )
    return (
        f"{where}: python = {spec.python!r}: this machine has no python{spec.python} "
        f"(it has {', '.join(have) or 'none'}); install it, or give python = "
        f"{have[-1][6:]!r} if the code runs there"
        if have
        else f"{where}: python = {spec.python!r}: no python3.X in {', '.join(PYTHON_DIRS)}"
    )


def _strings(raw: object, key: str, where: str, problems: list[str]) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) and x.strip() for x in raw):
        problems.append(f"{where}: {key}: expected a list of non-empty strings, got {raw!r:.80}")
        return ()
    return tuple(raw)


def parse_env_spec(table: Mapping[str, Any], where: str, problems: list[str]) -> RepoEnvSpec | None:
    """Read a ``[repository.environment]`` table; problems are appended as ``where: key: ...``."""
    before = len(problems)
    known = {"python", "requested_python", "packages", "install", "env", "image", "notes"}
    for key in sorted(set(table) - known):
        problems.append(f"{where}: {key}: unknown key (expected {', '.join(sorted(known))})")
    python = table.get("python", "3.11")
    if not isinstance(python, str) or not _VERSION.match(python):
        problems.append(f'{where}: python: expected a version like "3.11", got {python!r:.40}')
    requested = table.get("requested_python")
    if requested is not None and (not isinstance(requested, str) or not _VERSION.match(requested)):
        problems.append(f'{where}: requested_python: expected a version like "3.9", got {requested!r:.40}')
    packages = _strings(table.get("packages"), "packages", where, problems)
    for p in packages:
        if not _REQ.match(p.strip()) or p.strip().startswith(("-", "/")) or "://" in p:
            problems.append(
                f"{where}: packages: {p!r:.60} is not a requirement (name==version); files, "
                "URLs and pip options are not allowed"
            )
    install = _strings(table.get("install"), "install", where, problems)
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        problems.append(f"{where}: env: expected a table of strings")
        env = {}
    image = table.get("image")
    if image is not None and (not isinstance(image, str) or not image.strip()):
        problems.append(f"{where}: image: expected an image reference")
    notes = _strings(table.get("notes"), "notes", where, problems)
    if len(problems) > before:
        return None
    return RepoEnvSpec(
        python=str(python),
        packages=packages,
        install=install,
        env=dict(env),
        requested_python=requested,
        image=image,
        notes=notes,
    )
