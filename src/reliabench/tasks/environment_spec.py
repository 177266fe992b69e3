r"""A task's ``[environment]`` table (or its suite's default): where its rollouts run.

::

    # task.toml (or suite.toml, as the default of every task that has no table of its own)
    [environment]
    image = "reliabench/python:bookworm"    # an OCI image the runtime has (never pulled)
    # dockerfile = "environment/Dockerfile" # or: built once by the runtime, network off
    tests = "fresh"                          # "fresh" (default) or "same" (see below)
    workdir = "/testbed"                     # where commands see the workspace
    user = "root"                            # default: a non-root user (the slot's uid)
    writable_root = true                     # default: the image's root is read-only

Nothing declared: the task runs on the host, as reliabench always ran. ``image`` and
``dockerfile`` exclude each other; ``dockerfile`` is a path relative to the file that declares
it (the task's folder, or the suite's for a default in ``suite.toml``), inside the suite, to a
regular file. ``tests = "fresh"`` runs the hidden tests in a fresh environment from the same
image on the agent's workspace; ``tests = "same"`` stops the agent's processes and runs the
tests in the agent's own environment (for tests that inspect the machine the agent set up: a
container only). A task's table replaces its suite's default as a whole.

Every problem is one line, ``FILE:LINE: what was expected``, collected with the suite's other
problems (:class:`~reliabench.errors.SuiteError`, exit 2).

Example:
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "task.toml").write_text('[environment]\nimage = "x:1"\ntests = "same"\n')
    >>> problems = []
    >>> spec = parse_environment({"image": "x:1", "tests": "same"}, d / "task.toml", d, problems)
    >>> (spec.kind, spec.tests, spec.source.endswith("task.toml:1"), problems)
    ('image', 'same', True, [])
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import Any, Final

from reliabench.files.untrusted import file_kind, read_file
from reliabench.sandbox.environment import HOST, EnvironmentSpec

__all__ = ["ENVIRONMENT_KEYS", "parse_environment", "table_line"]

ENVIRONMENT_KEYS: Final = ("image", "dockerfile", "tests", "workdir", "user", "writable_root")
"""The keys of an ``[environment]`` table."""

_TOML_BYTES: Final = 1024 * 1024
_HEADER = re.compile(r"^\s*\[\s*environment\s*\]\s*(#.*)?$")
_ANY_HEADER = re.compile(r"^\s*\[")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$")


def _lines(path: Path) -> list[str]:
    try:
        return read_file(path, _TOML_BYTES).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def table_line(path: Path, key: str | None = None) -> int:
    """The 1-based line of ``[environment]`` in ``path`` (``key``: of ``key = ...`` in it); 1 if not found."""
    lines = _lines(path)
    start = None
    for number, text in enumerate(lines, start=1):
        if _HEADER.match(text):
            start = number
            break
        stripped = text.lstrip()
        if stripped.startswith("environment") and stripped[len("environment"):].lstrip().startswith("="):
            return number  # an inline table: every key is on this line
    if start is None:
        return 1
    if key is None:
        return start
    for number in range(start + 1, len(lines) + 1):
        text = lines[number - 1].lstrip()
        if _ANY_HEADER.match(text):
            break
        if text.startswith(key) and text[len(key):].lstrip().startswith("="):
            return number
    return start


def _inside_path(value: object) -> str | None:
    """``value`` as an absolute, normalised inside path other than ``/``, or None."""
    if not isinstance(value, str) or not value.startswith("/") or "\0" in value:
        return None
    if os.path.normpath(value) != value or value == "/" or "//" in value:
        return None
    return value


def parse_environment(table: object, path: Path, base: Path, problems: list[str],
                      *, suite_root: Path | None = None) -> EnvironmentSpec:
    """Check an ``[environment]`` table; its problems go to ``problems`` (HOST is returned then).

    Args:
        table: The parsed table (``meta["environment"]``).
        path: The file that declares it (``task.toml`` or ``suite.toml``), for messages.
        base: The folder a ``dockerfile`` path is relative to (that file's folder).
        problems: Where each problem is appended, one line each.
        suite_root: The suite's folder: a ``dockerfile`` must lie inside it (default ``base``).

    Returns:
        The spec, its ``source`` the table's ``FILE:LINE``.
    """
    before = len(problems)

    def bad(key: str | None, what: str) -> None:
        label = f"environment.{key}" if key else "environment"
        problems.append(f"{path}:{table_line(path, key)}: {label}: {what}")

    if not isinstance(table, dict):
        bad(None, f"expected a table ([environment]), got {type(table).__name__}")
        return HOST
    unknown = sorted(str(k) for k in table if k not in ENVIRONMENT_KEYS)
    if unknown:
        bad(unknown[0], f"unknown key (expected one of: {', '.join(ENVIRONMENT_KEYS)})")
    image = table.get("image")
    if image is not None and (not isinstance(image, str) or not _IMAGE.match(image) or len(image) > 512):
        bad("image", f"expected an image reference such as \"debian:bookworm\", got {image!r:.80}")
        image = None
    dockerfile: Path | None = None
    if "image" in table and "dockerfile" in table:
        bad("dockerfile", "image and dockerfile exclude each other: keep one")
    else:
        dockerfile = _dockerfile(table.get("dockerfile"), base, suite_root or base,
                                 lambda what: bad("dockerfile", what))
    tests = table.get("tests", "fresh")
    if tests not in ("fresh", "same"):
        bad("tests", f"expected \"fresh\" or \"same\", got {tests!r:.80}")
        tests = "fresh"
    elif tests == "same" and image is None and dockerfile is None:
        bad("tests", "\"same\" needs image or dockerfile (on the host nothing of the agent's "
                     "machine outlives its commands: use \"fresh\")")
    workdir = table.get("workdir")
    if workdir is not None and _inside_path(workdir) is None:
        bad("workdir", f"expected an absolute path such as \"/testbed\" (normalised, not /), "
                       f"got {workdir!r:.80}")
        workdir = None
    user = table.get("user")
    if user is not None and user != "root":
        bad("user", f"expected \"root\" (or no key: a non-root user), got {user!r:.80}")
        user = None
    writable_root = table.get("writable_root", False)
    if not isinstance(writable_root, bool):
        bad("writable_root", f"expected true or false, got {writable_root!r:.80}")
        writable_root = False
    if len(problems) > before:
        return HOST
    return EnvironmentSpec(image=image, dockerfile=dockerfile, tests=tests, workdir=workdir,
                           user=user, writable_root=writable_root,
                           source=f"{path}:{table_line(path)}")


def _dockerfile(value: Any, base: Path, root: Path, bad: Any) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or "\\" in value or "\0" in value:
        bad(f"expected a relative path such as \"environment/Dockerfile\", got {value!r:.80}")
        return None
    pure = PurePosixPath(value)
    if pure.is_absolute() or ".." in pure.parts:
        bad(f"expected a path inside the suite (relative, no ..), got {value!r:.80}")
        return None
    found = Path(base, *pure.parts)
    try:
        found.relative_to(root)
    except ValueError:  # pragma: no cover - relative paths without .. stay below base
        bad(f"expected a path inside the suite, got {value!r:.80}")
        return None
    kind = file_kind(found)
    if kind != "file":
        what = {"error": "no such file", "dir": "a folder", "link": "a link (never followed)"}.get(kind, kind)
        bad(f"{found}: {what} (expected the Dockerfile, a regular file in the suite)")
        return None
    return found
