r"""AST mutations of Python source: small semantic bugs that still compile.

The simulated agents use these to turn a task's reference solution into a *plausibly wrong*
attempt: a flipped comparison, a swapped operator, an off-by-one, a dropped branch. Every
mutation is applied to the parsed tree and written back with :func:`ast.unparse`, so the
result is always valid Python (it is compiled before it is returned). Comments and the
original layout are not kept.

Operators (``MutationSite.operator``):

================== =========================================================================
``compare_flip``   ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``, ``in`` <-> ``not in``,
                   ``is`` <-> ``is not`` (one operator of a comparison)
``arith_swap``     ``+`` <-> ``-`` in a binary operation or an augmented assignment
``off_by_one``     an integer constant ``n`` becomes ``n + 1`` or ``n - 1``
``range_bound``    a non-constant ``range(...)`` argument ``e`` becomes ``e + 1`` or ``e - 1``
``slice_bound``    a non-constant slice bound ``e`` becomes ``e + 1`` or ``e - 1``
``drop_if_body``   the body of an ``if`` is replaced by ``pass`` (its effect is dropped)
``drop_else``      the ``else`` / ``elif`` part of an ``if`` is removed
``drop_guard``     a raise-guard ``if cond: raise ...`` gets the condition ``False``
``wrong_default``  a constant default argument changes (``n`` -> ``n + 1``, ``True`` ->
                   ``False``, ``"x"`` -> ``""``, ``1.5`` -> ``2.5``)
``bool_swap``      ``and`` <-> ``or``
``return_tweak``   ``return e`` becomes ``return not e`` (boolean ``e``), a constant changes,
                   or ``return None`` (anything else)
================== =========================================================================

Code whose mutation could not change behaviour is skipped: annotations, f-strings (error
messages), the arguments of ``raise`` statements, docstrings and ``if __name__ ==
"__main__"`` / ``if TYPE_CHECKING`` blocks. A mutant can still be *equivalent* (no test can
tell it from the original), so a mutated program fails *some* tests almost always, not always.

Sites are numbered by the position of their node in :func:`ast.walk` order of the parsed
source, which is deterministic; the same source and the same seeded generator always give the
same mutant.

Example:
    >>> import numpy as np
    >>> src = "def f(x):\n    return x < 3\n"
    >>> [s.operator for s in mutation_sites(src)]
    ['return_tweak', 'compare_flip', 'off_by_one', 'off_by_one']
    >>> print(apply_mutation(src, mutation_sites(src)[1]), end="")
    def f(x):
        return x <= 3
    >>> mutate(src, np.random.default_rng(0)).source == mutate(src, np.random.default_rng(0)).source
    True
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reliabench.errors import InvalidArgumentError

__all__ = [
    "OPERATORS",
    "Injection",
    "MutationResult",
    "MutationSite",
    "apply_mutation",
    "apply_mutations",
    "break_syntax",
    "inject_hang",
    "mutate",
    "mutation_sites",
]

OPERATORS: tuple[str, ...] = (
    "compare_flip",
    "arith_swap",
    "off_by_one",
    "range_bound",
    "slice_bound",
    "drop_if_body",
    "drop_else",
    "drop_guard",
    "wrong_default",
    "bool_swap",
    "return_tweak",
)

_CMP_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_CMP_SYMBOL: dict[type[ast.cmpop], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


@dataclass(frozen=True, slots=True)
class MutationSite:
    """One place in a source where one mutation can be made.

    Attributes:
        operator: One of :data:`OPERATORS`.
        node_index: Position of the mutated node in :func:`ast.walk` order.
        slot: Which of the node's alternatives (operator index, ``+1``/``-1``, argument).
        line: 1-based line of the node in the source the site was computed from.
        col: 0-based column of the node.
        description: Human-readable change, for example ``"< -> <="``.
    """

    operator: str
    node_index: int
    slot: int
    line: int
    col: int
    description: str

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-friendly dict of the site."""
        return {
            "operator": self.operator,
            "node_index": self.node_index,
            "slot": self.slot,
            "line": self.line,
            "col": self.col,
            "description": self.description,
        }


@dataclass(frozen=True, slots=True)
class MutationResult:
    """A mutant and the sites that made it.

    Attributes:
        source: The mutated source (valid Python, produced by :func:`ast.unparse`).
        sites: The sites applied, all relative to the ORIGINAL source.
    """

    source: str
    sites: tuple[MutationSite, ...]


@dataclass(frozen=True, slots=True)
class Injection:
    """A source with a deliberate defect injected.

    Attributes:
        source: The changed source.
        where: Human-readable places changed (for example ``"f:12"``).
    """

    source: str
    where: tuple[str, ...]


# --------------------------------------------------------------------------------------- #
# site discovery
# --------------------------------------------------------------------------------------- #


def _parse(source: str) -> ast.Module:
    if not isinstance(source, str):
        raise InvalidArgumentError(f"source: expected a str, got {type(source).__name__}")
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise InvalidArgumentError(f"source: not valid Python ({exc.msg}, line {exc.lineno})") from exc


def _int_value(node: ast.AST) -> int | None:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    ):
        return node.value
    return None


def _is_int(node: ast.AST) -> bool:
    return _int_value(node) is not None


def _is_int_literal(node: ast.AST) -> bool:
    return _is_int(node) or (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _is_int(node.operand)
    )


def _guard_block(node: ast.If) -> bool:
    """``if __name__ == "__main__":`` and ``if TYPE_CHECKING:`` blocks."""
    test = node.test
    if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING":
        return True
    if isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING":
        return True
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )


def _excluded(tree: ast.Module) -> set[int]:
    """Return the ids of nodes whose mutation would (almost) never change behaviour."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.returns is not None:
                roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        elif isinstance(node, (ast.JoinedStr, ast.Raise)) or (
            isinstance(node, ast.If) and _guard_block(node)
        ):
            roots.append(node)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                roots.append(body[0])
    out: set[int] = set()
    for root in roots:
        out.update(id(n) for n in ast.walk(root))
    return out


def _subtree_ids(nodes: Iterable[ast.AST]) -> set[int]:
    out: set[int] = set()
    for node in nodes:
        out.update(id(n) for n in ast.walk(node))
    return out


def _is_boolean_expr(node: ast.expr) -> bool:
    return (
        isinstance(node, (ast.Compare, ast.BoolOp))
        or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not))
        or (isinstance(node, ast.Constant) and isinstance(node.value, bool))
    )


def _default_change(node: ast.expr) -> str | None:
    if not isinstance(node, ast.Constant):
        return None
    value = node.value
    if isinstance(value, bool):
        return f"{value!r} -> {not value!r}"
    if isinstance(value, int):
        return f"{value!r} -> {value + 1!r}"
    if isinstance(value, float):
        return f"{value!r} -> {value + 1.0!r}"
    if isinstance(value, str):
        return f"{value!r} -> {'' if value else 'x'!r}"
    return None


def _changed_constant(value: object) -> ast.Constant:
    if isinstance(value, bool):
        return ast.Constant(value=not value)
    if isinstance(value, int):
        return ast.Constant(value=value + 1)
    if isinstance(value, float):
        return ast.Constant(value=value + 1.0)
    if isinstance(value, str):
        return ast.Constant(value="" if value else "x")
    raise AssertionError(f"unsupported constant {value!r}")  # pragma: no cover


def _sites_with_effects(
    tree: ast.Module,
) -> tuple[list[ast.AST], list[tuple[MutationSite, set[int]]]]:
    """All sites of ``tree``, each with the ids of the nodes its mutation discards."""
    nodes = list(ast.walk(tree))
    skip = _excluded(tree)
    default_ids: set[int] = set()
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            default_ids.update(id(d) for d in node.args.defaults)
            default_ids.update(id(d) for d in node.args.kw_defaults if d is not None)
    out: list[tuple[MutationSite, set[int]]] = []

    def add(index: int, node: ast.AST, op: str, slot: int, desc: str, gone: set[int]) -> None:
        site = MutationSite(
            operator=op,
            node_index=index,
            slot=slot,
            line=int(getattr(node, "lineno", 0)),
            col=int(getattr(node, "col_offset", 0)),
            description=desc,
        )
        out.append((site, gone))

    for index, node in enumerate(nodes):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            for i, cmp in enumerate(node.ops):
                flip = _CMP_FLIP.get(type(cmp))
                if flip is not None:
                    desc = f"{_CMP_SYMBOL[type(cmp)]} -> {_CMP_SYMBOL[flip]}"
                    add(index, node, "compare_flip", i, desc, set())
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(
            node.op, (ast.Add, ast.Sub)
        ):
            desc = "+ -> -" if isinstance(node.op, ast.Add) else "- -> +"
            add(index, node, "arith_swap", 0, desc, set())
        elif isinstance(node, ast.BoolOp):
            desc = "and -> or" if isinstance(node.op, ast.And) else "or -> and"
            add(index, node, "bool_swap", 0, desc, set())
        elif (number := _int_value(node)) is not None and id(node) not in default_ids:
            add(index, node, "off_by_one", 0, f"{number} -> {number + 1}", set())
            add(index, node, "off_by_one", 1, f"{number} -> {number - 1}", set())
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "range"
        ):
            for i, arg in enumerate(node.args):
                if not _is_int_literal(arg) and not isinstance(arg, ast.Starred):
                    text = ast.unparse(arg)
                    add(index, node, "range_bound", 2 * i, f"range {text} -> {text} + 1", set())
                    add(index, node, "range_bound", 2 * i + 1, f"range {text} -> {text} - 1", set())
        elif isinstance(node, ast.Slice):
            for i, (label, bound) in enumerate((("lower", node.lower), ("upper", node.upper))):
                if bound is not None and not _is_int_literal(bound):
                    text = ast.unparse(bound)
                    add(index, node, "slice_bound", 2 * i, f"{label} {text} -> {text} + 1", set())
                    add(index, node, "slice_bound", 2 * i + 1, f"{label} {text} -> {text} - 1", set())
        elif isinstance(node, ast.If):
            if all(isinstance(stmt, ast.Raise) for stmt in node.body):
                add(index, node, "drop_guard", 0, "raise-guard condition -> False",
                    _subtree_ids([node.test]))
            elif not all(isinstance(stmt, ast.Pass) for stmt in node.body):
                add(index, node, "drop_if_body", 0, "if body -> pass", _subtree_ids(node.body))
            if node.orelse:
                kind = "elif" if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If) else "else"
                add(index, node, "drop_else", 0, f"{kind} branch removed",
                    _subtree_ids(node.orelse))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            defaults: list[ast.expr | None] = [*node.args.defaults, *node.args.kw_defaults]
            for i, default in enumerate(defaults):
                if default is None or id(default) in skip:
                    continue
                change = _default_change(default)
                if change is not None:
                    add(index, node, "wrong_default", i, f"default {change}", {id(default)})
        elif isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Constant) and value.value is None:
                continue
            if _is_boolean_expr(value) and not isinstance(value, ast.Constant):
                desc = "return e -> return not e"
            elif isinstance(value, ast.Constant) and _default_change(value) is not None:
                desc = f"return {_default_change(value)}"
            else:
                desc = "return e -> return None"
            add(index, node, "return_tweak", 0, desc, _subtree_ids([value]))
    return nodes, out


def mutation_sites(source: str) -> list[MutationSite]:
    """Return every place where ``source`` can be mutated, in a deterministic order.

    Args:
        source: Python source code.

    Returns:
        The sites, in :func:`ast.walk` order of their nodes.

    Raises:
        InvalidArgumentError: if ``source`` is not valid Python.
    """
    _, sites = _sites_with_effects(_parse(source))
    return [site for site, _ in sites]


# --------------------------------------------------------------------------------------- #
# applying
# --------------------------------------------------------------------------------------- #


def _plus(expr: ast.expr, sign: int) -> ast.expr:
    op: ast.operator = ast.Add() if sign > 0 else ast.Sub()
    return ast.BinOp(left=expr, op=op, right=ast.Constant(value=1))


def _mismatch(site: MutationSite, node: ast.AST) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"site: {site.operator} at node {site.node_index} does not match this source "
        f"(found {type(node).__name__}); compute sites with mutation_sites() on the same source"
    )


def _apply_one(nodes: Sequence[ast.AST], site: MutationSite) -> None:
    if not 0 <= site.node_index < len(nodes):
        raise InvalidArgumentError(
            f"site: node_index {site.node_index} is out of range (source has {len(nodes)} nodes)"
        )
    node = nodes[site.node_index]
    op = site.operator
    slot = site.slot
    if op == "compare_flip" and isinstance(node, ast.Compare) and 0 <= slot < len(node.ops):
        flip = _CMP_FLIP.get(type(node.ops[slot]))
        if flip is None:
            raise _mismatch(site, node)
        node.ops[slot] = flip()
    elif op == "arith_swap" and isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(
        node.op, (ast.Add, ast.Sub)
    ):
        node.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
    elif op == "bool_swap" and isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif op == "off_by_one" and isinstance(node, ast.Constant) and slot in (0, 1):
        number = _int_value(node)
        if number is None:
            raise _mismatch(site, node)
        node.value = number + (1 if slot == 0 else -1)
    elif op == "range_bound" and isinstance(node, ast.Call) and 0 <= slot // 2 < len(node.args):
        i = slot // 2
        node.args[i] = _plus(node.args[i], 1 if slot % 2 == 0 else -1)
    elif op == "slice_bound" and isinstance(node, ast.Slice) and 0 <= slot < 4:
        sign = 1 if slot % 2 == 0 else -1
        if slot < 2 and node.lower is not None:
            node.lower = _plus(node.lower, sign)
        elif slot >= 2 and node.upper is not None:
            node.upper = _plus(node.upper, sign)
        else:
            raise _mismatch(site, node)
    elif op == "drop_if_body" and isinstance(node, ast.If):
        node.body = [ast.Pass()]
    elif op == "drop_guard" and isinstance(node, ast.If):
        node.test = ast.Constant(value=False)
    elif op == "drop_else" and isinstance(node, ast.If) and node.orelse:
        node.orelse = []
    elif op == "wrong_default" and isinstance(
        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    ):
        n_pos = len(node.args.defaults)
        if 0 <= slot < n_pos:
            old = node.args.defaults[slot]
            if not isinstance(old, ast.Constant):
                raise _mismatch(site, node)
            node.args.defaults[slot] = _changed_constant(old.value)
        elif 0 <= slot - n_pos < len(node.args.kw_defaults):
            kw = node.args.kw_defaults[slot - n_pos]
            if not isinstance(kw, ast.Constant):
                raise _mismatch(site, node)
            node.args.kw_defaults[slot - n_pos] = _changed_constant(kw.value)
        else:
            raise _mismatch(site, node)
    elif op == "return_tweak" and isinstance(node, ast.Return) and node.value is not None:
        value = node.value
        if _is_boolean_expr(value) and not isinstance(value, ast.Constant):
            node.value = ast.UnaryOp(op=ast.Not(), operand=value)
        elif isinstance(value, ast.Constant) and _default_change(value) is not None:
            node.value = _changed_constant(value.value)
        else:
            node.value = ast.Constant(value=None)
    else:
        raise _mismatch(site, node)


def _unparse_checked(tree: ast.Module) -> str:
    ast.fix_missing_locations(tree)
    text = ast.unparse(tree) + "\n"
    compile(text, "<mutant>", "exec")
    return text


def apply_mutations(source: str, sites: Iterable[MutationSite]) -> str:
    """Apply several sites, all computed on ``source``, and return the mutant.

    Sites on the same node or inside code another site removes are the caller's concern
    (:func:`mutate` never picks such combinations).

    Raises:
        InvalidArgumentError: if ``source`` is not valid Python or a site does not match it.
    """
    tree = _parse(source)
    nodes = list(ast.walk(tree))
    for site in sites:
        _apply_one(nodes, site)
    return _unparse_checked(tree)


def apply_mutation(source: str, site: MutationSite) -> str:
    """Apply one site from :func:`mutation_sites` to ``source`` and return the mutant.

    The mutant is produced with :func:`ast.unparse` (comments and layout are lost) and is
    compiled before it is returned, so it is always valid Python.

    Raises:
        InvalidArgumentError: if ``source`` is not valid Python or the site does not match it.
    """
    return apply_mutations(source, [site])


def mutate(source: str, rng: np.random.Generator, count: int = 1) -> MutationResult:
    """Apply ``count`` randomly chosen mutations to ``source``.

    Sites are visited in the order of ``rng.permutation``; a site is taken unless it touches
    a node already mutated or lies in code a taken site removes (or removes a taken site).
    Fewer than ``count`` sites are applied only when no more compatible sites exist.

    Args:
        source: Python source code.
        rng: A seeded numpy Generator; the same seed gives the same mutant.
        count: How many mutations to make (>= 1).

    Returns:
        The mutant and the sites applied (positions refer to ``source``).

    Raises:
        InvalidArgumentError: if ``count`` < 1, ``source`` is not valid Python or has no
            mutation site.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidArgumentError(f"count: expected an integer >= 1, got {count!r}")
    if not isinstance(rng, np.random.Generator):
        raise InvalidArgumentError(
            f"rng: expected a numpy.random.Generator, got {type(rng).__name__}"
        )
    tree = _parse(source)
    nodes, candidates = _sites_with_effects(tree)
    if not candidates:
        raise InvalidArgumentError("source: has no mutation site")
    node_ids = [id(n) for n in nodes]
    chosen: list[tuple[MutationSite, set[int]]] = []
    for k in rng.permutation(len(candidates)):
        site, gone = candidates[int(k)]
        me = node_ids[site.node_index]
        if any(
            site.node_index == other.node_index
            or me in other_gone
            or node_ids[other.node_index] in gone
            for other, other_gone in chosen
        ):
            continue
        chosen.append((site, gone))
        if len(chosen) == count:
            break
    sites = tuple(site for site, _ in chosen)
    for site in sites:
        _apply_one(nodes, site)
    return MutationResult(source=_unparse_checked(tree), sites=sites)


# --------------------------------------------------------------------------------------- #
# other defects: hangs and syntax errors
# --------------------------------------------------------------------------------------- #


def _hang_stmt() -> ast.While:
    return ast.While(test=ast.Constant(value=True), body=[ast.Pass()], orelse=[])


def _insert_hang(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    body = fn.body
    start = 1 if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ) else 0
    body.insert(start, _hang_stmt())


def inject_hang(source: str) -> Injection:
    """Put ``while True: pass`` at the start of every public function of ``source``.

    "Public" means top-level functions whose names do not start with ``_`` and every method
    (``__init__`` and properties included) of top-level classes whose names do not start with
    ``_``. Any test that calls into the module's API then never returns. A module without
    such functions gets the loop at module level (importing it hangs).

    Raises:
        InvalidArgumentError: if ``source`` is not valid Python.
    """
    tree = _parse(source)
    where: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            where.append(f"{node.name}:{node.lineno}")
            _insert_hang(node)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    where.append(f"{node.name}.{item.name}:{item.lineno}")
                    _insert_hang(item)
    if not where:
        tree.body.append(_hang_stmt())
        where.append("<module>")
    return Injection(source=_unparse_checked(tree), where=tuple(where))


_HEADER = re.compile(
    r"^(?P<head>\s*(?:async\s+)?(?:def|class|if|elif|else|for|while|try|except|finally|with)\b.*)"
    r":(?P<tail>\s*(?:#.*)?)$"
)
_RETURN = re.compile(r"^(?P<indent>\s*)return (?P<rest>.+)$")
_STATEMENT = re.compile(r"^(?P<indent>\s+)(?P<rest>[A-Za-z_].*)$")


def _compiles(text: str) -> bool:
    try:
        compile(text, "<broken>", "exec")
    except SyntaxError:
        return False
    return True


def break_syntax(source: str, rng: np.random.Generator) -> Injection:
    """Break ``source`` so that it no longer compiles, the way a truncated edit would.

    One breakage is chosen with ``rng`` among: a block header that loses its ``:``
    (``missing_colon``), a ``return`` whose expression gets an unclosed ``(``
    (``unclosed_paren``), a statement indented one space too far (``bad_indent``). Each
    candidate is checked to really fail :func:`compile`; if none does, a broken ``def`` is
    appended. The original text is kept otherwise (comments included).

    Raises:
        InvalidArgumentError: if ``source`` is not valid Python to begin with.
    """
    _parse(source)
    lines = source.splitlines(keepends=False)
    candidates: list[tuple[str, int, str]] = []
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if m:
            candidates.append(("missing_colon", i, m.group("head") + m.group("tail")))
        m = _RETURN.match(line)
        if m:
            candidates.append(("unclosed_paren", i, f"{m.group('indent')}return ({m.group('rest')}"))
        m = _STATEMENT.match(line)
        if m and not _HEADER.match(line):
            candidates.append(("bad_indent", i, f"{m.group('indent')} {m.group('rest')}"))
    for k in rng.permutation(len(candidates)) if candidates else []:
        kind, i, new = candidates[int(k)]
        text = "\n".join([*lines[:i], new, *lines[i + 1:]]) + "\n"
        if not _compiles(text):
            return Injection(source=text, where=(f"{kind}:{i + 1}",))
    text = source.rstrip("\n") + "\n\n\ndef _broken(:\n    pass\n"
    return Injection(source=text, where=(f"appended:{len(lines) + 3}",))
