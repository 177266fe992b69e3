"""Building a repository task's environment once, and caching it by the hash of its spec.

Two layers, both under a cache folder (:func:`cache_root`)::

    CACHE/base/<spec hash>/venv/          the packages of the spec (shared by every task with it)
    CACHE/base/<spec hash>/build.log      pip's output
    CACHE/task/<task key>/venv/           a venv over the base one, with the install command's result
    CACHE/task/<task key>/tree/           the checkout after the install command: every
                                          rollout's workspace starts as a copy of it

* :func:`build_base` makes the base venv from ``/usr/bin/pythonX.Y`` and installs the spec's
  pinned packages with pip from the package index (the only step that uses the network; the
  packages come from the registry, not from the task).
* :func:`build_task` runs the task's install command (``pip install --no-deps
  --no-build-isolation -e .``) in the SANDBOX, without network, in an environment whose
  ``workdir`` is the task's fixed path (``/testbed``): the checkout is the workspace there, the
  task venv the one writable mount. An editable install records ``/testbed``; every rollout's
  workspace is shown at ``/testbed`` too, so the install is valid for all of them. The task
  venv sees the base venv's packages through a ``.pth`` file, and gets a copy of each of the
  base venv's console scripts (``pytest``) that runs with the task venv's interpreter.

Each layer is built under a lock (``fcntl``) in its final place, marked complete by a file
written last; an interrupted build is removed and redone. A failed build raises
:class:`EnvironmentBuildError` with the log's last lines: the harness's failure (the task
is refused or its rollouts are ``infra_error``), never the agent's.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from reliabench.errors import SandboxError
from reliabench.files.untrusted import remove_tree
from reliabench.repository.envspec import RepoEnvSpec, find_python, python_refusal, spec_hash
from reliabench.sandbox.base import Limits
from reliabench.sandbox.environment import Environment, Mount

__all__ = [
    "BaseEnv",
    "CACHE_ENV_VAR",
    "EnvironmentBuildError",
    "TaskEnv",
    "build_base",
    "build_task",
    "cache_root",
    "readable_tree",
    "task_key",
    "venv_env",
]

CACHE_ENV_VAR: Final = "RELIABENCH_REPO_ENV_CACHE"
"""Overrides where built environments are kept."""
_DONE: Final = "complete.json"
_BUILD_LIMITS: Final = Limits(
    wall_s=1800,
    cpu_s=1800,
    memory_bytes=8 * 1024**3,
    max_procs=512,
    file_size_bytes=1024**3,
    output_bytes=4 * 1024**2,
    tmp_bytes=2 * 1024**3,
)


class EnvironmentBuildError(SandboxError):
    """A repository environment could not be built (the harness's failure, never the agent's)."""


@dataclass(frozen=True, slots=True)
class BaseEnv:
    """A built base venv.

    Attributes:
        key: The spec hash.
        root: ``CACHE/base/<key>``.
        venv: The venv folder.
        site_packages: Its ``site-packages``.
        built: True when this call built it (False: it came from the cache).
    """

    key: str
    root: Path
    venv: Path
    site_packages: Path
    built: bool


@dataclass(frozen=True, slots=True)
class TaskEnv:
    """A built task layer.

    Attributes:
        key: The task key (:func:`task_key`).
        root: ``CACHE/task/<key>``.
        venv: The task venv (over the base venv).
        tree: The checkout after the install command (every rollout starts from a copy).
        base: The base venv under it.
        built: True when this call built it.
    """

    key: str
    root: Path
    venv: Path
    tree: Path
    base: BaseEnv
    built: bool

    @property
    def mounts(self) -> tuple[Mount, ...]:
        """What the tests' environment must show read-only: both venvs."""
        return (Mount(self.base.venv), Mount(self.venv))


def cache_root() -> Path:
    """Where environments are kept: ``$RELIABENCH_REPO_ENV_CACHE``, else a folder every uid can read.

    As root ``/var/cache/reliabench/repo-envs`` (the sandbox's slot uids must read the venvs;
    root's home is private); otherwise ``$XDG_CACHE_HOME/reliabench/repo-envs``.
    """
    given = os.environ.get(CACHE_ENV_VAR)
    if given:
        return Path(given)
    if os.geteuid() == 0:
        return Path("/var/cache/reliabench/repo-envs")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "reliabench" / "repo-envs"


def _make_dirs(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for p in (path, *path.parents):
        if str(p) in ("/", "/var", "/var/cache", "/tmp"):
            break
        with contextlib.suppress(OSError):
            os.chmod(p, 0o755)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    _make_dirs(path.parent)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def readable_tree(root: Path) -> None:
    """Every file readable (and folders enterable) by every uid; nothing writable but by root."""
    for dirpath, dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                mode = os.stat(p).st_mode
                os.chmod(p, 0o755 if mode & 0o111 else 0o644)
        for name in dirnames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                continue


def _tail(text: str, n: int = 4) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-n:])


def _site_packages(venv: Path, python: str) -> Path:
    return venv / "lib" / f"python{python}" / "site-packages"


def build_base(
    spec: RepoEnvSpec,
    *,
    cache: Path | None = None,
    where: str = "the task",
    runner: Callable[[Sequence[str], Path], tuple[int, str]] | None = None,
) -> BaseEnv:
    """The base venv of ``spec``: from the cache, or built now (see the module docstring).

    Args:
        spec: The environment spec.
        cache: The cache folder (default :func:`cache_root`).
        where: Names the task in messages.
        runner: Runs one host command in a folder, returning (exit status, output); tests
            pass a fake. Default: :func:`subprocess.run` with a 30-minute limit.

    Raises:
        EnvironmentBuildError: No such Python here, or pip failed (with its last lines).
    """
    why = python_refusal(spec, where)
    if why is not None:
        raise EnvironmentBuildError(why)
    if spec.image is not None:
        raise EnvironmentBuildError(
            f"{where}: image = {spec.image!r}: an image runs on a container "
            "backend; there is no venv to build"
        )
    python = find_python(spec.python)
    assert python is not None  # python_refusal said so
    key = spec_hash(spec)
    root = (cache or cache_root()) / "base" / key
    venv = root / "venv"
    run = runner or _run_host
    with _locked(root.with_suffix(".lock")):
        if (root / _DONE).is_file():
            return BaseEnv(key, root, venv, _site_packages(venv, spec.python), built=False)
        if root.exists():
            remove_tree(root)
        _make_dirs(root)
        log: list[str] = []
        steps: list[list[str]] = [[str(python), "-m", "venv", str(venv)]]
        if spec.packages:
            steps.append(
                [
                    str(venv / "bin" / "python"),
                    "-m",
                    "pip",
                    "install",
                    "--no-input",
                    "--disable-pip-version-check",
                    "--progress-bar",
                    "off",
                    *spec.packages,
                ]
            )
        for argv in steps:
            rc, out = run(argv, root)
            log.append("$ " + " ".join(argv) + "\n" + out)
            if rc != 0:
                (root / "build.log").write_text("\n".join(log), encoding="utf-8", errors="replace")
                failed = root.with_name(root.name + ".failed.log")
                shutil.copyfile(root / "build.log", failed)
                remove_tree(root)
                raise EnvironmentBuildError(
                    f"{where}: building the environment failed ({argv[2] if len(argv) > 2 else argv[0]} "
                    f"exit {rc}; log {failed}): {_tail(out)}"
                )
        (root / "build.log").write_text("\n".join(log), encoding="utf-8", errors="replace")
        (root / "spec.json").write_text(json.dumps(spec.identity(), indent=1), encoding="utf-8")
        readable_tree(root)
        (root / _DONE).write_text(json.dumps({"key": key}), encoding="utf-8")
        return BaseEnv(key, root, venv, _site_packages(venv, spec.python), built=True)


def _run_host(argv: Sequence[str], cwd: Path) -> tuple[int, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k.startswith(("PIP_", "http", "HTTP", "no_proxy", "NO_PROXY", "SSL_CERT", "REQUESTS_CA"))
    }
    env.update(PATH="/usr/local/bin:/usr/bin:/bin", HOME=os.environ.get("HOME", "/root"), LANG="C.UTF-8")
    try:
        done = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, timeout=1800, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, str(exc)
    return done.returncode, (done.stdout + done.stderr).decode("utf-8", "replace")


def task_key(
    base: BaseEnv, tree_id: str, install: Sequence[str], workdir: str, env: Mapping[str, str] | None = None
) -> str:
    """The cache key of a task layer.

    It covers the base venv, the checkout, the install command and its variables, the workdir.
    """
    text = json.dumps(
        [base.key, tree_id, list(install), workdir, sorted((env or {}).items())], separators=(",", ":")
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def venv_env(task: TaskEnv, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a command in a task's venv (install command and tests)."""
    env = {
        "PATH": f"{task.venv}/bin:{task.base.venv}/bin:/usr/local/bin:/usr/bin:/bin",
        "VIRTUAL_ENV": str(task.venv),
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "USER": "rollout",
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    env.update(extra or {})
    return env


_SHEBANG_MAX: Final = 4096


def _copy_scripts(base: Path, task: Path) -> None:
    """Each console script of the base venv, again in the task venv, run by the task venv's python."""
    old = f"#!{base}/bin/python".encode()
    new = f"#!{task}/bin/python".encode()
    for entry in sorted((base / "bin").iterdir()):
        target = task / "bin" / entry.name
        if entry.is_symlink() or not entry.is_file() or target.exists():
            continue
        with open(entry, "rb") as fh:
            head = fh.read(_SHEBANG_MAX)
            if not head.startswith(old):
                continue
            data = head + fh.read()
        target.write_bytes(new + data[len(old) :])
        os.chmod(target, 0o755)


def build_task(
    spec: RepoEnvSpec,
    base: BaseEnv,
    *,
    checkout: Path,
    tree_id: str,
    workdir: str,
    open_environment: Callable[[Path, Sequence[Mount]], Environment],
    slot: int = 0,
    cache: Path | None = None,
    where: str = "the task",
) -> TaskEnv:
    """The task layer: from the cache, or built now by running the install command in the sandbox.

    Args:
        spec: The environment spec (its ``install`` and ``env``).
        base: The base venv (:func:`build_base`).
        checkout: The repository at its base commit (copied; not changed).
        tree_id: What identifies the checkout's content (its git tree hash).
        workdir: Where the sandbox shows the checkout (the task's ``workdir``, ``/testbed``).
        open_environment: Starts an environment on a workspace (a host folder shown at
            ``workdir``) with mounts, network off, on worker slot ``slot``.
        slot: The worker slot ``open_environment`` runs on (as root, the task venv is lent
            to its uid while the install command runs).
        cache: The cache folder (default :func:`cache_root`).
        where: Names the task in messages.

    Raises:
        EnvironmentBuildError: The install command failed (with its last lines).
        SandboxError: The sandbox could not start.
    """
    key = task_key(base, tree_id, spec.install, workdir, spec.env)
    root = (cache or cache_root()) / "task" / key
    venv, tree = root / "venv", root / "tree"
    with _locked(root.with_suffix(".lock")):
        if (root / _DONE).is_file():
            return TaskEnv(key, root, venv, tree, base, built=False)
        if root.exists():
            remove_tree(root)
        _make_dirs(root)
        python = find_python(spec.python)
        if python is None:
            raise EnvironmentBuildError(python_refusal(spec, where) or f"{where}: no python{spec.python}")
        made = subprocess.run(
            [str(python), "-m", "venv", "--without-pip", str(venv)],
            capture_output=True,
            timeout=300,
            check=False,
        )
        if made.returncode != 0:
            remove_tree(root)
            raise EnvironmentBuildError(
                f"{where}: python -m venv failed: {_tail(made.stderr.decode('utf-8', 'replace'))}"
            )
        site = _site_packages(venv, spec.python)
        (site / "_reliabench_base.pth").write_text(f"{base.site_packages}\n", encoding="utf-8")
        _copy_scripts(base.venv, venv)
        shutil.copytree(checkout, tree, symlinks=True)
        readable_tree(root)
        task = TaskEnv(key, root, venv, tree, base, built=True)
        if spec.install:
            _install(spec, task, open_environment, where, slot)
        readable_tree(root)
        (root / _DONE).write_text(json.dumps({"key": key, "tree": tree_id}), encoding="utf-8")
        return task


def _install(
    spec: RepoEnvSpec,
    task: TaskEnv,
    open_environment: Callable[[Path, Sequence[Mount]], Environment],
    where: str,
    slot: int,
) -> None:
    """Run the install command in the sandbox: the checkout at the workdir, the task venv writable."""
    argv = [str(task.venv / "bin" / "python") if a == "python" else a for a in spec.install]
    uid = _owner_for_build(slot)
    if uid is not None:
        _chown_tree(task.venv, uid)
    try:
        env = open_environment(task.tree, (Mount(task.base.venv), Mount(task.venv, writable=True)))
        try:
            res = env.exec(argv, env=venv_env(task, dict(spec.env)), limits=_BUILD_LIMITS)
        finally:
            env.close()
    finally:
        if uid is not None:
            _chown_tree(task.venv, 0)
            _chown_tree(task.tree, 0)
    (task.root / "install.log").write_text(res.stdout + "\n" + res.stderr, encoding="utf-8", errors="replace")
    if res.returncode != 0:
        log = task.root.with_name(task.root.name + ".failed.log")
        shutil.copyfile(task.root / "install.log", log)
        remove_tree(task.root)
        raise EnvironmentBuildError(
            f"{where}: the install command {' '.join(spec.install)!r} failed "
            f"(exit {res.returncode}{', ' + res.killed_reason if res.killed_reason else ''}; "
            f"log {log}): {_tail(res.stderr or res.stdout)}"
        )


def _owner_for_build(slot: int) -> int | None:
    """The uid the venv is lent to for the build: the slot's, as root (the backend lends the workspace)."""
    if os.geteuid() != 0:
        return None
    from reliabench.sandbox.slots import slot_uid

    return slot_uid(slot)


def _chown_tree(root: Path, uid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        os.lchown(dirpath, uid, uid)
        for name in (*dirnames, *filenames):
            os.lchown(os.path.join(dirpath, name), uid, uid)
