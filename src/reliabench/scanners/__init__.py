"""Static security scanners: the Scanner protocol, the registry and the built-ins.

``bandit`` (the default) runs in-process on Python files; ``semgrep`` (extra
``reliabench[semgrep]``) runs the bundled local rules over Python and JavaScript/TypeScript.
Third-party scanners join through the ``reliabench.scanners`` entry-point group. The
``changes`` module narrows a scan to what the agent wrote, ``workspace`` scans a rollout's
workspace (the runner's and validation's one path) and ``rescan`` re-scans a finished run
from the files it kept. See ``docs/scanners.md``.

The scanner classes are imported lazily (``get_scanner``), so importing this package does not
import Bandit.
"""

from __future__ import annotations

from reliabench.scanners.base import (
    BUILTIN_SCANNERS,
    DEFAULT_SCANNER,
    ENTRY_POINT_GROUP,
    SCANNERS,
    Scanner,
    ScannerFactory,
    ScanResult,
    ScanTarget,
    available_scanners,
    get_scanner,
    keep_changed,
    prepare_targets,
    register_scanner,
    silence_parse_warnings,
)
from reliabench.scanners.changes import (
    ChangeSet,
    changed_files,
    filter_to_changes,
    workspace_diff,
)

__all__ = [
    "BUILTIN_SCANNERS",
    "DEFAULT_SCANNER",
    "ENTRY_POINT_GROUP",
    "SCANNERS",
    "ChangeSet",
    "ScanResult",
    "ScanTarget",
    "Scanner",
    "ScannerFactory",
    "available_scanners",
    "changed_files",
    "filter_to_changes",
    "get_scanner",
    "keep_changed",
    "prepare_targets",
    "register_scanner",
    "silence_parse_warnings",
    "workspace_diff",
]
