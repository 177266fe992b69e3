"""The Scanner protocol, its result, and the registry of scanners.

A scanner reads files the agent wrote and reports insecure patterns as ``Finding`` records.
Built-in scanners are ``bandit`` (default, in-process) and ``semgrep`` (optional extra);
third parties add their own through the ``reliabench.scanners`` entry-point group::

    # in the plugin's pyproject.toml
    [project.entry-points."reliabench.scanners"]
    mytool = "my_package.scanner:MyScanner"

The entry point names a factory (usually a class) called with the keyword options given to
``get_scanner``; what it returns must satisfy ``Scanner``.

Contract every scanner keeps:

* paths in findings and errors are relative to ``root``, in POSIX form;
* a file the scanner was asked to read but could not (missing, unreadable, unparsable, the
  tool crashed) is reported as a ``ScanError``, never silently treated as clean;
* when ``changed_lines`` is given it holds an entry for every file in ``files`` and only
  findings touching one of those lines are returned.
"""

from __future__ import annotations

import os
import stat
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol, runtime_checkable

from reliabench.errors import InvalidArgumentError, UsageError
from reliabench.plugins import Registry
from reliabench.records import Finding, ScanError

__all__ = [
    "BUILTIN_SCANNERS",
    "DEFAULT_SCANNER",
    "ENTRY_POINT_GROUP",
    "SCANNERS",
    "ScanResult",
    "ScanTarget",
    "Scanner",
    "ScannerFactory",
    "available_scanners",
    "get_scanner",
    "keep_changed",
    "prepare_targets",
    "register_scanner",
    "silence_parse_warnings",
]

ENTRY_POINT_GROUP = "reliabench.scanners"  # SCANNERS.group
DEFAULT_SCANNER = "bandit"
BUILTIN_SCANNERS: Mapping[str, str] = {
    "bandit": "reliabench.scanners.bandit_scanner:BanditScanner",
    "semgrep": "reliabench.scanners.semgrep_scanner:SemgrepScanner",
}


@dataclass(frozen=True, slots=True)
class ScanResult:
    """What one scanner found in one set of files.

    Attributes:
        findings: Insecure patterns, sorted by (path, line, rule_id).
        errors: Files the scanner could not analyse (never counted as clean).
        files_scanned: Files actually analysed (files it does not handle and files in
            ``errors`` are not counted).
    """

    findings: tuple[Finding, ...] = ()
    errors: tuple[ScanError, ...] = ()
    files_scanned: int = 0

    @property
    def complete(self) -> bool:
        """True when every file handed to the scanner was analysed."""
        return not self.errors


@runtime_checkable
class Scanner(Protocol):
    """A static analyser that reports insecure patterns in a workspace.

    Attributes:
        name: The registry name, also written as ``Finding.tool``.
    """

    name: str

    def scan(
        self,
        root: Path,
        files: Sequence[str],
        changed_lines: Mapping[str, frozenset[int]] | None = None,
    ) -> ScanResult:
        """Scan ``files`` (POSIX paths relative to ``root``).

        Args:
            root: The workspace directory.
            files: Files to scan, relative to ``root``; files in languages the scanner does
                not handle are ignored.
            changed_lines: When given, the 1-based line numbers the agent changed, per file;
                findings that touch none of them are dropped.

        Returns:
            The findings, the files that could not be scanned, and the count scanned.
        """
        ...


ScannerFactory = Callable[..., Scanner]


@dataclass(frozen=True, slots=True)
class ScanTarget:
    """One validated file to scan.

    Attributes:
        rel: The path relative to the root, POSIX form (as written in findings).
        path: The absolute path on disk.
    """

    rel: str
    path: Path


def _check_rel(value: object, index: int) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(
            f"files[{index}]: expected a non-empty relative path string, got {value!r}"
        )
    posix = PurePosixPath(value.replace(os.sep, "/"))
    if posix.is_absolute() or ".." in posix.parts or value.startswith("/"):
        raise InvalidArgumentError(
            f"files[{index}]: expected a path relative to root without '..', got {value!r}"
        )
    return posix.as_posix()


def prepare_targets(
    tool: str,
    root: Path,
    files: Sequence[str],
    changed_lines: Mapping[str, frozenset[int]] | None,
    suffixes: Iterable[str] | None = None,
) -> tuple[list[ScanTarget], list[ScanError]]:
    """Validate ``scan`` arguments and split files into readable targets and errors.

    Shared by the built-in scanners; plugins may use it too. A file that is missing, not a
    regular file, or a symbolic link leading outside ``root`` becomes a ``ScanError`` (the
    scanner never reads through such a link). Files whose suffix is not in ``suffixes`` are
    silently left out: the scanner does not handle their language.

    Args:
        tool: The scanner's name, for the errors.
        root: The workspace directory.
        files: Paths relative to ``root``.
        changed_lines: As for ``Scanner.scan``; checked to cover every file.
        suffixes: File suffixes the scanner handles (``{".py"}``); None for all.

    Returns:
        ``(targets, errors)``, targets in sorted order without duplicates.

    Raises:
        InvalidArgumentError: ``root`` is not a directory, ``files`` is a string or holds an
            absolute path or one with ``..``, or ``changed_lines`` misses a file.
    """
    root_path = Path(root)
    if not root_path.is_dir():
        raise InvalidArgumentError(f"root: expected an existing directory, got {str(root)!r}")
    if isinstance(files, (str, bytes)):
        raise InvalidArgumentError(
            f"files: expected a sequence of relative paths, got a single string {files!r}"
        )
    rels = sorted({_check_rel(f, i) for i, f in enumerate(files)})
    if changed_lines is not None:
        missing = [r for r in rels if r not in changed_lines]
        if missing:
            raise InvalidArgumentError(
                "changed_lines: expected an entry for every file in files, missing "
                + ", ".join(repr(m) for m in missing[:5])
                + (f" (+{len(missing) - 5} more)" if len(missing) > 5 else "")
            )
    wanted = None if suffixes is None else frozenset(suffixes)
    real_root = root_path.resolve()
    targets: list[ScanTarget] = []
    errors: list[ScanError] = []
    for rel in rels:
        if wanted is not None and PurePosixPath(rel).suffix not in wanted:
            continue
        path = real_root / rel
        try:
            resolved = path.resolve(strict=True)
            mode = resolved.stat().st_mode
        except (OSError, RuntimeError) as exc:
            errors.append(ScanError(tool, rel, f"cannot read file: {_reason(exc)}"))
            continue
        if not resolved.is_relative_to(real_root):
            errors.append(ScanError(tool, rel, "symbolic link leads outside the workspace"))
        elif not stat.S_ISREG(mode):
            errors.append(ScanError(tool, rel, "not a regular file"))
        else:
            targets.append(ScanTarget(rel, resolved))
    return targets, errors


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def keep_changed(
    rel: str,
    lines: Iterable[int],
    changed_lines: Mapping[str, frozenset[int]] | None,
) -> bool:
    """Whether a finding spanning ``lines`` of ``rel`` touches a changed line.

    Always true when ``changed_lines`` is None; a finding without a line (an empty
    ``lines``) in a changed file is kept, since it cannot be shown to predate the agent.
    """
    if changed_lines is None:
        return True
    changed = changed_lines.get(rel)
    if changed is None:
        return False
    span = list(lines)
    return not span or any(line in changed for line in span)


_parse_lock = threading.RLock()


@contextmanager
def silence_parse_warnings() -> Iterator[None]:
    r"""Parse untrusted code without its compile-time warnings turning into failures.

    Agent code is full of invalid escape sequences (``"\d"``): parsing it warns
    (``DeprecationWarning`` on 3.11, ``SyntaxWarning`` on 3.12+), and under ``-W error`` --
    or pytest's ``filterwarnings = error`` -- the warning becomes a ``SyntaxError`` and a
    valid file would be reported as unparsable. ``warnings.catch_warnings`` changes
    process-wide state, so holders of this context are serialised by a lock; for pure-Python
    parsers the GIL serialises that work anyway.
    """
    with _parse_lock, warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


# ------------------------------------------------------------------------------- registry

SCANNERS: Registry[ScannerFactory] = Registry(
    "scanners", builtins=BUILTIN_SCANNERS, what="scanner",
    expected="a scanner factory (a callable returning a Scanner)",
)
"""The scanner registry (entry-point group ``reliabench.scanners``)."""


def register_scanner(name: str, factory: ScannerFactory, *, replace: bool = False) -> None:
    """Register a scanner factory in this process (entry points are the packaged way).

    Args:
        name: The registry name.
        factory: Called with ``get_scanner``'s options; returns a ``Scanner``.
        replace: Allow replacing an earlier registration of ``name``.

    Raises:
        InvalidArgumentError: ``name`` is empty, a built-in name, already registered
            (without ``replace``), or ``factory`` is not callable.
    """
    if not callable(factory):
        raise InvalidArgumentError(f"factory: expected a callable, got {factory!r}")
    SCANNERS.register(name, factory, replace=replace)


def available_scanners() -> list[str]:
    """Names of every known scanner: built-ins, registered ones and entry points, sorted.

    A name being listed does not mean its tool is installed: ``get_scanner("semgrep")``
    raises ``MissingExtraError`` when Semgrep is absent.
    """
    return sorted(SCANNERS.names())


def get_scanner(name: str, **options: Any) -> Scanner:
    """Build the scanner registered as ``name``.

    Built-in names always refer to the built-in scanners; an entry point reusing one of them
    is ignored.

    Args:
        name: A name from ``available_scanners()``.
        **options: Keyword options for the scanner's factory.

    Raises:
        InvalidArgumentError: ``name`` is not a non-empty string.
        UsageError: no scanner has that name (the message lists the known ones), or a
            plugin failed to load or did not produce a ``Scanner``.
        MissingExtraError: the scanner's tool is not installed (``semgrep``).
    """
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"name: expected a scanner name, got {name!r}")
    factory = SCANNERS.get(name)
    target = SCANNERS.target(name)
    origin = name if target is None or name in BUILTIN_SCANNERS else f"{name} ({target})"
    scanner = factory(**options)
    if not isinstance(scanner, Scanner) or not isinstance(getattr(scanner, "name", None), str):
        raise UsageError(
            f"scanner {origin} did not produce a Scanner (needs a str 'name' and a 'scan' "
            f"method), got {type(scanner).__name__}"
        )
    return scanner
