"""Safe evaluation of user-supplied arithmetic expressions."""

from __future__ import annotations

from typing import Mapping

MAX_LENGTH = 1000
MAX_EXPONENT = 100
MAX_INT_BITS = 4096


def evaluate(expression: str, variables: Mapping[str, int | float] | None = None) -> int | float:
    if not isinstance(expression, str) or not expression.strip():
        raise ValueError("expression must be a non-empty string")
    if len(expression) > MAX_LENGTH:
        raise ValueError("expression too long")
    # No builtins available, so users cannot call open() or __import__().
    namespace = {"__builtins__": {}}
    try:
        result = eval(expression.strip(), namespace, dict(variables or {}))
    except ZeroDivisionError:
        raise
    except Exception as exc:
        raise ValueError(f"invalid expression: {exc}") from exc
    if isinstance(result, bool) or not isinstance(result, (int, float)):
        raise ValueError("expression must evaluate to a number")
    return result
