"""report/numbers.py: how every table writes a figure."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from reliabench.metrics.analysis import Estimate
from reliabench.report.numbers import estimate_cell, r3


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_three_decimals_and_never_a_negative_zero(x: float) -> None:
    text = r3(x)
    assert text != "-0.000"
    assert len(text.split(".")[1]) == 3
    assert abs(float(text) - x) <= 0.0005 + 1e-9 * abs(x)


def test_a_cell_says_what_it_knows() -> None:
    nan = math.nan
    assert estimate_cell(Estimate(nan, nan, nan, tasks=0), ci=True) == "n/a"
    assert estimate_cell(Estimate(0.5, nan, nan, tasks=1), ci=True) == "0.500"  # no interval to show
    assert estimate_cell(Estimate(0.5, 0.25, 0.75, tasks=2), ci=False) == "0.500"
    assert estimate_cell(Estimate(-0.00001, -0.0002, 0.1, tasks=2), ci=True) == "0.000 [0.000, 0.100]"
    assert estimate_cell(Estimate(1.0, 1.0, 1.0, tasks=2, excluded=1), ci=True) == "1.000 [1.000, 1.000] (1 excl.)"
