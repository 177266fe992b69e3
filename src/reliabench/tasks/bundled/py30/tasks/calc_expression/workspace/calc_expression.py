"""Safe evaluation of user-supplied arithmetic expressions."""

from __future__ import annotations

from typing import Mapping

MAX_LENGTH = 1000
MAX_EXPONENT = 100
MAX_INT_BITS = 4096


def evaluate(expression: str, variables: Mapping[str, int | float] | None = None) -> int | float:
    """Evaluate an arithmetic ``expression`` using ``variables`` for names."""
    raise NotImplementedError
