"""Plain-text, Markdown and CSV tables of already formatted cells (the study renderers' layout).

Examples:
    >>> for line in plain_table(["name", "value"], [["a", "1.000"], ["bb", "0.5"]], left=1):
    ...     print(line)
    name  value
    ----  -----
    a     1.000
    bb      0.5
    >>> markdown_table(["a", "b"], [["1", "2"]])
    ['| a | b |', '|---|---|', '| 1 | 2 |']
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["csv_lines", "fixed", "markdown_table", "plain_table"]


def fixed(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals, ``nan`` when it is NaN."""
    return "nan" if math.isnan(x) else f"{x:.{digits}f}"


def plain_table(head: Sequence[str], body: Sequence[Sequence[str]], left: int) -> list[str]:
    """Lines of a space-aligned table: the first ``left`` columns left-aligned, the rest right."""
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=False)]
    row = "  ".join(f"{{:<{w}}}" if i < left else f"{{:>{w}}}" for i, w in enumerate(widths))
    return [row.format(*head), "  ".join("-" * w for w in widths)] + [row.format(*r) for r in body]


def markdown_table(head: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a Markdown (GitHub) table, cells as given."""
    return (["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
            + ["| " + " | ".join(r) + " |" for r in body])


def csv_lines(head: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a comma-separated table (cells hold no comma, quote or newline)."""
    return [",".join(r) for r in [head, *body]]
