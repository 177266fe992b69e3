"""Shared pieces of the importers: the result type, the reported-figure type, JSON helpers.

Every importer turns one foreign format into ``Rollout`` records and, where the foreign file
states its own summary figures (Terminal-Bench's ``pass_at_k``, Inspect's ``pass_at_k``
reductions), keeps them as ``ReportedFigure`` so that ``reliabench audit`` can check them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from reliabench.errors import InputError
from reliabench.files import json_input, untrusted
from reliabench.records import Rollout

__all__ = [
    "FigureKind",
    "ImportResult",
    "ReportedFigure",
    "StatedTotal",
    "expect_dict",
    "expect_list",
    "read_json",
    "stated_rate",
]

FigureKind = Literal["pass@k", "pass^k", "mean"]


@dataclass(frozen=True, slots=True)
class ReportedFigure:
    """A summary figure that a foreign harness wrote into its own output.

    Attributes:
        agent: The agent (as named in the imported records).
        kind: ``pass@k`` (Chen et al. estimator as the harness applied it), ``pass^k``, or
            ``mean`` (the plain success rate).
        k: The k of the figure (1 for ``mean``).
        value: The value the harness reported.
        source: Where it was found (file and key), for messages.
    """

    agent: str
    kind: FigureKind
    k: int
    value: float
    source: str


@dataclass(frozen=True, slots=True)
class StatedTotal:
    """Totals a source states about its own rows (a headline rate, a resolved count).

    ``reliabench audit`` compares them with the rows: a source whose headline does not follow
    from its own per-instance data is flagged. Any field may be None (not stated).

    Attributes:
        agent: The agent (as named in the imported records).
        source: Where the totals were found (file and key), for messages.
        resolved: Stated number of resolved (passing) rollouts.
        total: Stated number of rollouts (instances x runs) the figure is over.
        rate: Stated success rate as a fraction in [0, 1].
        rate_tolerance: Half a unit of the last digit the rate was stated with (a rate
            written 52.8 in percent is 0.528 +- 0.0005).
    """

    agent: str
    source: str
    resolved: int | None = None
    total: int | None = None
    rate: float | None = None
    rate_tolerance: float = 0.0


def stated_rate(value: Any, *, percent: bool) -> tuple[float, float] | None:
    """A stated rate as ``(fraction, tolerance)``, the tolerance from the digits written.

    Examples:
        >>> stated_rate(64.93, percent=True)
        (0.6493, 5e-05)
        >>> stated_rate(0.36, percent=False)
        (0.36, 0.005)
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    text = repr(float(value)) if isinstance(value, float) else str(value)
    decimals = len(text.partition(".")[2].rstrip("0")) if "e" not in text else 12
    scale = 100.0 if percent else 1.0
    return round(float(value) / scale, decimals + 4), round(0.5 * 10.0 ** -decimals / scale, decimals + 6)


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an importer produced.

    Attributes:
        records: The rollout records, in a stable order.
        format: The format name (a name of ``reliabench.importers.IMPORTERS``).
        notes: Decisions and oddities worth telling the user (one sentence each).
        reported: Figures the foreign harness reported itself, for ``audit``.
        stated: Totals the source states about its own rows, for ``audit``.
    """

    records: tuple[Rollout, ...]
    format: str
    notes: tuple[str, ...] = ()
    reported: tuple[ReportedFigure, ...] = ()
    stated: tuple[StatedTotal, ...] = ()


def read_json(path: Path, *, under: Path | None = None) -> Any:
    """Read a JSON file; malformed JSON raises ``InputError`` with line and column.

    Args:
        path: The file.
        under: The folder the user named, when ``path`` was found in it: then neither ``path``
            nor a folder between them is followed if it is a link, and the file is read only
            up to :data:`~reliabench.files.untrusted.MAX_DOCUMENT_BYTES`
            (:func:`~reliabench.files.untrusted.read_file`). A file the user named
            (``under=None``) is read as it is, a link or a pipe included.
    """
    try:
        if under is None:
            text = path.read_text(encoding="utf-8")
        else:
            text = untrusted.read_file(path, under=under).decode("utf-8")
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, expected a JSON file") from None
    except OSError as exc:
        raise InputError(path, f"not read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        return json_input.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON ({exc.msg} at column {exc.colno})",
                         line=exc.lineno) from None


def expect_dict(value: Any, path: Path | str, field: str, *, line: int | None = None) -> dict[str, Any]:
    """Return ``value`` if it is a JSON object, else raise ``InputError`` naming ``field``."""
    if not isinstance(value, dict):
        raise InputError(path, f"expected an object, got {type(value).__name__}", line=line,
                         field=field)
    return value


def expect_list(value: Any, path: Path | str, field: str, *, line: int | None = None) -> list[Any]:
    """Return ``value`` if it is a JSON array, else raise ``InputError`` naming ``field``."""
    if not isinstance(value, list):
        raise InputError(path, f"expected a list, got {type(value).__name__}", line=line,
                         field=field)
    return value
