"""Safe evaluation of user-supplied arithmetic expressions."""

from __future__ import annotations

import ast
import operator
from typing import Callable, Mapping, Union

Number = Union[int, float]

MAX_LENGTH = 1000
MAX_EXPONENT = 100
MAX_INT_BITS = 4096

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}

_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_power(base: Number, exponent: Number) -> None:
    if abs(exponent) > MAX_EXPONENT:
        raise ValueError(f"exponent larger than {MAX_EXPONENT}")
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        if abs(base).bit_length() * exponent > MAX_INT_BITS:
            raise ValueError(f"result would exceed {MAX_INT_BITS} bits")


def _check_result(value: object) -> Number:
    if isinstance(value, complex):
        raise ValueError("complex results are not supported")
    if isinstance(value, int) and abs(value).bit_length() > MAX_INT_BITS:
        raise ValueError(f"result exceeds {MAX_INT_BITS} bits")
    return value  # type: ignore[return-value]


class _Evaluator:
    def __init__(self, variables: Mapping[str, Number]) -> None:
        self._variables = variables

    def visit(self, node: ast.AST) -> Number:
        if isinstance(node, ast.Expression):
            return self.visit(node.body)
        if isinstance(node, ast.Constant):
            if not _is_number(node.value):
                raise ValueError(f"unsupported literal: {node.value!r}")
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self._variables:
                raise ValueError(f"unknown variable: {node.id}")
            value = self._variables[node.id]
            if not _is_number(value):
                raise ValueError(f"variable {node.id} is not a number")
            return value
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _check_result(_UNARY[type(node.op)](self.visit(node.operand)))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left = self.visit(node.left)
            right = self.visit(node.right)
            if isinstance(node.op, ast.Pow):
                _check_power(left, right)
            try:
                result = _BINARY[type(node.op)](left, right)
            except OverflowError as exc:
                raise ValueError("numeric overflow") from exc
            return _check_result(result)
        raise ValueError(f"unsupported expression element: {type(node).__name__}")


def evaluate(expression: str, variables: Mapping[str, int | float] | None = None) -> int | float:
    """Evaluate an arithmetic ``expression`` using ``variables`` for names."""
    if not isinstance(expression, str) or not expression.strip():
        raise ValueError("expression must be a non-empty string")
    if len(expression) > MAX_LENGTH:
        raise ValueError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"invalid syntax: {exc.msg}") from exc
    return _Evaluator(variables or {}).visit(tree)
