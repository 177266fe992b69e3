"""How every table writes a figure: three decimals, never ``-0.000``, the interval after it."""

from __future__ import annotations

import math

from reliabench.metrics.analysis import Estimate

__all__ = ["estimate_cell", "r3"]


def r3(x: float) -> str:
    """``x`` with three decimals, never ``-0.000``.

    Example:
        >>> r3(0.12345), r3(-0.0001)
        ('0.123', '0.000')
    """
    text = f"{x:.3f}"
    return "0.000" if text == "-0.000" else text


def estimate_cell(e: Estimate, ci: bool) -> str:
    """A table cell for ``e``: its value, its interval (when ``ci`` and it has one), excluded tasks.

    ``n/a`` when the value is undefined (NaN).

    Example:
        >>> estimate_cell(Estimate(0.5, 0.25, 0.75, tasks=3, excluded=2), ci=True)
        '0.500 [0.250, 0.750] (2 excl.)'
    """
    if math.isnan(e.value):
        return "n/a"
    text = r3(e.value)
    if ci and not math.isnan(e.ci_low):
        text += f" [{r3(e.ci_low)}, {r3(e.ci_high)}]"
    if e.excluded:
        text += f" ({e.excluded} excl.)"
    return text
