"""The host's toolchains for test commands, and their compile caches.

``scripts/install-toolchains.sh`` (``make polyglot``) installs, from Debian and one npm
install, what the test commands of the converted Aider polyglot suite run: Go, Rust (Debian's
``rustc-web``/``cargo-web`` with the ``librust-*-dev`` crates through a cargo source
replacement), Java (OpenJDK, JUnit 5 and its console launcher, AssertJ), C++ (cmake, g++,
ccache, Boost.DateTime) and jest + babel for JavaScript. reliabench's own files go to ONE
folder, :func:`toolchains_root` (``/opt/reliabench/toolchains``, or ``$RELIABENCH_TOOLCHAINS``)::

    cargo/config.toml        [source.crates-io] replace-with = "debian"; [net] offline = true
    node/node_modules/       jest 29 + babel + the Exercism preset (the exercises' devDependencies)
    node/package.json, node/package-lock.json

A :class:`Toolchain` says what one language's commands need to find those in a sandbox whose
only view of the host is ``/usr`` and what it mounts: environment variables, read-only
mounts, links laid into the test tree (``node_modules``), files copied into the run's
scratch folder (the cargo config), and the folders under the scratch folder that hold its
compile cache. Nothing here is a task's business: a task names ``go``, ``cargo``, ``node``;
an image would provide the same names its own way.

Compile caches
--------------

Every run of a test command builds in its OWN scratch folder (``{scratch}``, made fresh inside
the run's copy of the workspace and removed after it): no build of one rollout can ever be
seen by another, and there is no shared target directory whose old mtimes could make cargo
reuse another workspace's binary (the stale-mtime trap, ``tests/hidden_tests/test_command.py``).
To stay fast, a run starts from a copy of the task's TRUSTED cache (:class:`TrustedCache`):
what the harness's own runs on trusted files (the reference solution, at collect time)
built -- ccache entries, Go's build cache, cargo's compiled dependencies. Those caches are
content-addressed (ccache and Go hash the inputs; cargo's dependencies come from Debian's
read-only registry), the copy keeps the trusted files' old mtimes while the test tree is
written fresh (so cargo rebuilds the workspace's crate), and a rollout's own writes go to its
copy only: code under test that poisons its cache poisons its own run and nothing else.
Caches are kept per task under :func:`cache_root` (``/var/cache/reliabench/toolchains`` as
root, ``~/.cache/reliabench/toolchains`` otherwise), written only by the harness.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from reliabench.files.untrusted import remove_tree, walk_tree
from reliabench.sandbox.base import DEFAULT_PATH

__all__ = [
    "CACHE_ENV",
    "DEFAULT_ROOT",
    "TOOLCHAINS_ENV",
    "Toolchain",
    "TrustedCache",
    "cache_root",
    "missing_toolchain",
    "toolchain_for",
    "toolchains_root",
]

TOOLCHAINS_ENV: Final = "RELIABENCH_TOOLCHAINS"
"""Names the toolchains folder instead of :data:`DEFAULT_ROOT`."""
DEFAULT_ROOT: Final = Path("/opt/reliabench/toolchains")
CACHE_ENV: Final = "RELIABENCH_TOOLCHAIN_CACHE"
"""Names the trusted compile caches' folder instead of the default (:func:`cache_root`)."""
_CACHE_BYTES: Final = 1 << 30
"""The most a task's trusted cache grows to; a harvest past it keeps what it has."""
_JARS: Final = Path("/usr/share/java")


def toolchains_root() -> Path:
    """The folder ``scripts/install-toolchains.sh`` writes (``$RELIABENCH_TOOLCHAINS`` or the default)."""
    return Path(os.environ.get(TOOLCHAINS_ENV) or DEFAULT_ROOT)


def cache_root() -> Path:
    """Where trusted compile caches are kept (``$RELIABENCH_TOOLCHAIN_CACHE`` or the default)."""
    named = os.environ.get(CACHE_ENV)
    if named:
        return Path(named)
    if os.geteuid() == 0:
        return Path("/var/cache/reliabench/toolchains")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "reliabench" / "toolchains"


@dataclass(frozen=True, slots=True)
class Toolchain:
    """What one language's test commands need to find their tools in a sandbox.

    ``env`` values may name ``{scratch}`` (the run's scratch folder), ``{workdir}`` (the test
    tree) and ``{toolchains}`` (:func:`toolchains_root`).

    Attributes:
        language: The task language it serves.
        programs: Programs the commands run, which must be on ``PATH``.
        env: Variables the commands get (the task's own ``env`` comes after them).
        mounts: Host folders shown read-only.
        links: Test-tree-relative name -> host path: a link the harness lays into the tree
            (an agent's own entry of that name is removed and flagged).
        files: Scratch-relative name -> host file copied there before the run.
        cache_dirs: Folders under the scratch folder that hold the compile cache.
        requires: Further host paths that must exist (a library the commands import).
    """

    language: str
    programs: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Path, ...] = ()
    links: Mapping[str, Path] = field(default_factory=dict)
    files: Mapping[str, Path] = field(default_factory=dict)
    cache_dirs: tuple[str, ...] = ()
    requires: tuple[Path, ...] = ()


def toolchain_for(language: str, root: Path | None = None) -> Toolchain:
    """The host toolchain of ``language`` (an empty one for a language reliabench does not install).

    Example:
        >>> toolchain_for("go").env["GOCACHE"]
        '{scratch}/go-build'
        >>> toolchain_for("cobol").programs
        ()
    """
    root = root or toolchains_root()
    etc = (Path("/etc/alternatives"),)  # /usr/bin/java, c++, ... are links through it
    if language == "go":
        return Toolchain("go", ("go",), {
            "GOCACHE": "{scratch}/go-build", "GOPATH": "{scratch}/gopath", "GOFLAGS": "-mod=mod",
            "GOPROXY": "off", "GOSUMDB": "off", "GOTOOLCHAIN": "local", "GO111MODULE": "on",
            "CGO_ENABLED": "0", "GOTELEMETRY": "off"}, etc, cache_dirs=("go-build",))
    if language == "rust":
        return Toolchain("rust", ("cargo", "rustc"), {
            "CARGO_HOME": "{scratch}/cargo-home", "CARGO_TARGET_DIR": "{scratch}/target",
            "CARGO_INCREMENTAL": "0", "CARGO_TERM_COLOR": "never", "RUST_BACKTRACE": "0"}, etc,
            files={"cargo-home/config.toml": root / "cargo" / "config.toml"}, cache_dirs=("target",))
    if language == "java":
        classpath = ":".join(str(_JARS / j) for j in (
            "junit-jupiter-api.jar", "junit-jupiter-params.jar", "assertj-core.jar", "apiguardian.jar",
            "opentest4j.jar"))
        console = str(_JARS / "junit-platform-console-standalone.jar")
        assertj = str(_JARS / "assertj-core.jar")
        env = {"JUNIT_CLASSPATH": classpath, "JUNIT_CONSOLE": console, "ASSERTJ_JAR": assertj}
        return Toolchain("java", ("javac", "java"), env, (*etc, Path("/etc/java-17-openjdk")))
    if language == "javascript":
        node = root / "node"
        return Toolchain("javascript", ("node",), {}, (*etc, node),
                         links={"node_modules": node / "node_modules"})
    if language == "cpp":
        env = {"CCACHE_DIR": "{scratch}/ccache", "CCACHE_TEMPDIR": "{scratch}/ccache-tmp",
               "CCACHE_NOHASHDIR": "1", "CCACHE_BASEDIR": "{workdir}", "CCACHE_MAXSIZE": "2G"}
        if shutil.which("ccache", path=DEFAULT_PATH):
            env["CMAKE_CXX_COMPILER_LAUNCHER"] = "ccache"
        return Toolchain("cpp", ("cmake", "make", "c++"), env, etc, cache_dirs=("ccache",))
    if language == "python":
        return Toolchain("python", ("python3",), {"PYTHONDONTWRITEBYTECODE": "1",
                                                  "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
                         etc, requires=(Path("/usr/lib/python3/dist-packages/pytest"),))
    return Toolchain(language, mounts=etc)


def missing_toolchain(toolchain: Toolchain) -> str | None:
    """Why ``toolchain`` cannot run here (one line with the fix), or None when it can."""
    fix = "install them with `make polyglot` (scripts/install-toolchains.sh, as root)"
    absent = [p for p in toolchain.programs if shutil.which(p, path=DEFAULT_PATH) is None]
    if absent:
        return f"{toolchain.language} test commands need {', '.join(absent)} on {DEFAULT_PATH}: {fix}"
    for path in (*toolchain.links.values(), *toolchain.files.values(), *toolchain.requires):
        if not path.exists():
            return f"{toolchain.language} test commands need {path}: {fix}"
    return None


@dataclass(frozen=True, slots=True)
class TrustedCache:
    """The compile cache of one task, written only from runs on trusted files.

    Attributes:
        folder: Its folder (one subfolder per cache folder name of the toolchain).
        names: The toolchain's cache folder names (``go-build``, ``target``, ``ccache``).
    """

    folder: Path
    names: tuple[str, ...]

    @classmethod
    def of(cls, task_root: Path, toolchain: Toolchain, root: Path | None = None) -> TrustedCache:
        """The trusted cache of the task at ``task_root``, keyed by the task's content.

        The same task converted twice (or moved) finds its cache; a changed task gets a new one.
        """
        from reliabench.files.untrusted import read_bounded
        from reliabench.tasks.suite import hash_suite_files, suite_files

        files = [(p.relative_to(task_root).as_posix(), read_bounded(p, 64 << 20) or b"")
                 for p in suite_files(task_root)]
        key = hash_suite_files(files)[:16]
        return cls((root or cache_root()) / toolchain.language / f"{task_root.name[:40]}-{key}",
                   toolchain.cache_dirs)

    def seed(self, scratch: Path) -> None:
        """Copy the cache into a run's scratch folder, keeping the files' (old) mtimes."""
        for name in self.names:
            src = self.folder / name
            if src.is_dir() and not src.is_symlink():
                shutil.copytree(src, scratch / name, symlinks=True, dirs_exist_ok=True)

    def harvest(self, scratch: Path) -> int:
        """Add what a TRUSTED run built to the cache (files it lacks); return the files added.

        Call it only after a run on trusted files (a reference solution): a rollout's cache
        is never kept. Links and special files are skipped; the cache stops growing at 1 GiB.
        """
        added = 0
        size = sum(os.lstat(self.folder / e.rel).st_size for e in walk_tree(self.folder) if e.kind == "file")
        for name in self.names:
            src = scratch / name
            if not src.is_dir() or src.is_symlink():
                continue
            for entry in walk_tree(src):
                if entry.kind != "file":
                    continue
                dest = self.folder / name / entry.rel
                if dest.exists():
                    continue
                st = os.lstat(src / entry.rel)
                if size + st.st_size > _CACHE_BYTES:
                    return added
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src / entry.rel, dest, follow_symlinks=False)
                os.chmod(dest, 0o644)
                size += st.st_size
                added += 1
        return added

    def clear(self) -> None:
        """Remove the cache."""
        remove_tree(self.folder)
