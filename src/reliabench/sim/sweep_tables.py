"""Render a parameter sweep of the synthetic benchmark (``sim.synthetic.sweep``).

Formats: ``table`` (plain text), ``markdown``, ``csv`` and ``json``; one row per (parameter,
value, k), as ``SweepResult.to_rows`` gives them. The HTML figures of a sweep are
``report.html.sweep_figures``.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

from reliabench.errors import InvalidArgumentError
from reliabench.report.text_tables import csv_lines, markdown_table, plain_table
from reliabench.sim.synthetic import SweepResult

__all__ = ["SWEEP_COLUMNS", "render_sweep", "sweep_to_json"]

SWEEP_COLUMNS: Final = ("param", "value", "k", "misapplied_mean", "reliability_mean", "inflation_mean",
                        "inflation_min", "inflation_max", "rho_pairs", "rho_agents")
_FORMATS: Final = ("table", "json", "csv", "markdown")


def sweep_to_json(result: SweepResult) -> dict[str, Any]:
    """The JSON document of a sweep: its seed, the base config and the points (NaN as null)."""
    clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
             for r in result.to_rows()]
    return {"seed": result.seed, "base": result.base.to_dict(), "points": clean}


def _cell(key: str, v: object) -> str:
    if isinstance(v, float):
        if key == "value":
            return f"{v:g}"
        return "nan" if math.isnan(v) else f"{v:.3f}"
    return str(v)


def render_sweep(result: SweepResult, fmt: str = "table") -> str:
    """Render a sweep as ``table`` (plain text), ``markdown``, ``json`` or ``csv``.

    Raises:
        InvalidArgumentError: for an unknown format.
    """
    if fmt not in _FORMATS:
        raise InvalidArgumentError(f"fmt must be one of {', '.join(_FORMATS)}, got {fmt!r}")
    if fmt == "json":
        return json.dumps(sweep_to_json(result), indent=2) + "\n"
    body = [[_cell(key, r[key]) for key in SWEEP_COLUMNS] for r in result.to_rows()]
    head = list(SWEEP_COLUMNS)
    if fmt == "csv":
        return "\n".join(csv_lines(head, body)) + "\n"
    title = (f"Sweep (one parameter at a time around the base config, seed {result.seed}; "
             "means and ranges over agents, rho = Spearman of the first rollout's test pass "
             "fraction with reliability@k)")
    if fmt == "markdown":
        return f"**{title}**\n\n" + "\n".join(markdown_table(head, body)) + "\n"
    return title + "\n\n" + "\n".join(plain_table(head, body, 1)) + "\n"
