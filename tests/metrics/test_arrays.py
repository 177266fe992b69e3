"""The array type aliases (reliabench.metrics.arrays): the types they name, defined in one place."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import numpy.typing as npt

from reliabench.metrics.arrays import BoolArray, FloatArray, IntArray

SRC = Path(__file__).resolve().parents[2] / "src" / "reliabench"


def test_the_aliases_name_the_numpy_array_types() -> None:
    assert FloatArray == npt.NDArray[np.float64]
    assert IntArray == npt.NDArray[np.int64]
    assert BoolArray == npt.NDArray[np.bool_]


def test_no_other_module_defines_them_again() -> None:
    again = re.compile(r"^(FloatArray|IntArray|BoolArray) = ", re.M)
    found = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
                   if "bundled" not in p.parts and again.search(p.read_text(encoding="utf-8")))
    assert found == ["metrics/arrays.py"]
