"""AST mutations: one test per operator, compile-ability on the bundled suite, determinism."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from reliabench.errors import InvalidArgumentError
from reliabench.sim.mutate import (
    OPERATORS,
    MutationSite,
    apply_mutation,
    apply_mutations,
    break_syntax,
    inject_hang,
    mutate,
    mutation_sites,
)

BUNDLED_TASKS = Path(__file__).resolve().parents[2] / "src/reliabench/tasks/bundled/py30/tasks"
SOLUTION_FILES = sorted(BUNDLED_TASKS.glob("*/solution/**/*.py"))


def _only(source: str, operator: str) -> list[MutationSite]:
    return [s for s in mutation_sites(source) if s.operator == operator]


def _same_code(a: str, b: str) -> bool:
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))


def _apply(source: str, operator: str, slot: int = 0) -> str:
    sites = [s for s in _only(source, operator) if s.slot == slot]
    assert sites, f"no {operator} site with slot {slot}"
    return apply_mutation(source, sites[0])


# --------------------------------------------------------------------------------------- #
# one test per operator
# --------------------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("x < y", "x <= y"),
        ("x <= y", "x < y"),
        ("x > y", "x >= y"),
        ("x >= y", "x > y"),
        ("x == y", "x != y"),
        ("x != y", "x == y"),
        ("x in y", "x not in y"),
        ("x not in y", "x in y"),
        ("x is y", "x is not y"),
        ("x is not y", "x is y"),
    ],
)
def test_compare_flip(before: str, after: str) -> None:
    src = f"ok = {before}\n"
    assert _same_code(_apply(src, "compare_flip"), f"ok = {after}\n")


def test_compare_flip_chained_has_one_site_per_operator() -> None:
    src = "ok = a < b <= c\n"
    sites = _only(src, "compare_flip")
    assert [s.slot for s in sites] == [0, 1]
    assert _same_code(apply_mutation(src, sites[1]), "ok = a < b < c\n")


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("z = x + y\n", "z = x - y\n"),
        ("z = x - y\n", "z = x + y\n"),
        ("z += y\n", "z -= y\n"),
        ("z -= y\n", "z += y\n"),
    ],
)
def test_arith_swap(src: str, expected: str) -> None:
    assert _same_code(_apply(src, "arith_swap"), expected)


def test_arith_swap_ignores_other_operators() -> None:
    assert _only("z = x * y // w % v\n", "arith_swap") == []


def test_off_by_one_both_directions() -> None:
    src = "LIMIT = 10\n"
    assert _same_code(_apply(src, "off_by_one", 0), "LIMIT = 11\n")
    assert _same_code(_apply(src, "off_by_one", 1), "LIMIT = 9\n")


def test_off_by_one_skips_bools_floats_and_defaults() -> None:
    src = "A = True\nB = 1.5\ndef f(n=3):\n    return n\n"
    assert _only(src, "off_by_one") == []


def test_off_by_one_on_constant_slice_and_index() -> None:
    src = "y = x[1:]\n"
    assert _same_code(_apply(src, "off_by_one", 0), "y = x[2:]\n")


def test_range_bound() -> None:
    src = "for i in range(len(xs)):\n    print(i)\n"
    assert _same_code(_apply(src, "range_bound", 0), "for i in range(len(xs) + 1):\n    print(i)\n")
    assert _same_code(_apply(src, "range_bound", 1), "for i in range(len(xs) - 1):\n    print(i)\n")


def test_range_bound_second_argument() -> None:
    src = "r = range(a, n)\n"
    slots = sorted(s.slot for s in _only(src, "range_bound"))
    assert slots == [0, 1, 2, 3]
    assert _same_code(_apply(src, "range_bound", 3), "r = range(a, n - 1)\n")


def test_slice_bound() -> None:
    src = "y = xs[i:j]\n"
    assert _same_code(_apply(src, "slice_bound", 0), "y = xs[i + 1:j]\n")
    assert _same_code(_apply(src, "slice_bound", 3), "y = xs[i:j - 1]\n")


def test_drop_if_body() -> None:
    src = "def f(x):\n    if x:\n        x = x + 1\n    return x\n"
    assert _same_code(_apply(src, "drop_if_body"), "def f(x):\n    if x:\n        pass\n    return x\n")


def test_drop_else_and_elif() -> None:
    src = "if a:\n    x = 1\nelse:\n    x = 2\n"
    assert _same_code(_apply(src, "drop_else"), "if a:\n    x = 1\n")
    src = "if a:\n    x = 1\nelif b:\n    x = 2\n"
    site = _only(src, "drop_else")[0]
    assert "elif" in site.description
    assert _same_code(apply_mutation(src, site), "if a:\n    x = 1\n")


def test_drop_guard_replaces_raise_guard_condition_with_false() -> None:
    src = "def f(x):\n    if x < 0:\n        raise ValueError('neg')\n    return x\n"
    assert _only(src, "drop_if_body") == []
    out = _apply(src, "drop_guard")
    assert _same_code(out, "def f(x):\n    if False:\n        raise ValueError('neg')\n    return x\n")


@pytest.mark.parametrize(
    ("default", "expected"),
    [("3", "4"), ("True", "False"), ("'utf-8'", "''"), ("''", "'x'"), ("1.5", "2.5")],
)
def test_wrong_default(default: str, expected: str) -> None:
    src = f"def f(a, b={default}):\n    return a\n"
    assert _same_code(_apply(src, "wrong_default"), f"def f(a, b={expected}):\n    return a\n")


def test_wrong_default_keyword_only_and_none_skipped() -> None:
    src = "def f(*, a=None, b=2):\n    return a\n"
    sites = _only(src, "wrong_default")
    assert len(sites) == 1
    assert _same_code(apply_mutation(src, sites[0]), "def f(*, a=None, b=3):\n    return a\n")


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("z = a and b\n", "z = a or b\n"),
        ("z = a or b\n", "z = a and b\n"),
    ],
)
def test_bool_swap(src: str, expected: str) -> None:
    assert _same_code(_apply(src, "bool_swap"), expected)


@pytest.mark.parametrize(
    ("ret", "expected"),
    [
        ("x > 0", "not x > 0"),
        ("True", "False"),
        ("7", "8"),
        ("'a'", "''"),
        ("[x, 1]", "None"),
    ],
)
def test_return_tweak(ret: str, expected: str) -> None:
    src = f"def f(x):\n    return {ret}\n"
    assert _same_code(_apply(src, "return_tweak"), f"def f(x):\n    return {expected}\n")


def test_return_none_and_bare_return_are_not_sites() -> None:
    assert _only("def f():\n    return None\n\ndef g():\n    return\n", "return_tweak") == []


def test_every_operator_is_tested_above() -> None:
    tested = {
        "compare_flip", "arith_swap", "off_by_one", "range_bound", "slice_bound",
        "drop_if_body", "drop_else", "drop_guard", "wrong_default", "bool_swap", "return_tweak",
    }
    assert tested == set(OPERATORS)


# --------------------------------------------------------------------------------------- #
# skipped code
# --------------------------------------------------------------------------------------- #


def test_no_sites_in_annotations_fstrings_raise_docstrings_and_main_guard() -> None:
    src = '''"""Doc 1 < 2."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    X = 1 + 2

def f(x: "list[int]" = None) -> "tuple[int, int]":
    """Also 3 < 4."""
    raise ValueError(f"bad {x + 1} {2}")

if __name__ == "__main__":
    print(1 + 1)
'''
    assert mutation_sites(src) == []


# --------------------------------------------------------------------------------------- #
# errors
# --------------------------------------------------------------------------------------- #


def test_invalid_source_is_rejected() -> None:
    with pytest.raises(InvalidArgumentError, match="source: not valid Python"):
        mutation_sites("def f(:\n")


def test_site_from_other_source_is_rejected() -> None:
    site = _only("x = 1 + 2\n", "arith_swap")[0]
    with pytest.raises(InvalidArgumentError, match="does not match this source"):
        apply_mutation("x = y\n", site)
    far = MutationSite("arith_swap", 10_000, 0, 1, 0, "")
    with pytest.raises(InvalidArgumentError, match="out of range"):
        apply_mutation("x = 1 + 2\n", far)


def test_mutate_rejects_bad_count_rng_and_siteless_source() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidArgumentError, match="count: expected an integer >= 1, got 0"):
        mutate("x = 1\n", rng, count=0)
    with pytest.raises(InvalidArgumentError, match=r"rng: expected a numpy\.random\.Generator"):
        mutate("x = 1\n", 0, count=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="source: has no mutation site"):
        mutate("import os\n", rng)


# --------------------------------------------------------------------------------------- #
# the bundled suite: every site compiles and changes the code; determinism
# --------------------------------------------------------------------------------------- #


@pytest.mark.skipif(not SOLUTION_FILES, reason="bundled suite not present")
@pytest.mark.parametrize("path", SOLUTION_FILES, ids=lambda p: p.parts[-3])
def test_every_site_of_every_bundled_solution_compiles_and_changes_code(path: Path) -> None:
    src = path.read_text(encoding="utf-8")
    sites = mutation_sites(src)
    assert sites, "a reference solution should have mutation sites"
    original = ast.unparse(ast.parse(src)) + "\n"
    for site in sites:
        out = apply_mutation(src, site)  # compiled inside: raises if it were not valid Python
        assert out != original, site


@pytest.mark.skipif(not SOLUTION_FILES, reason="bundled suite not present")
@pytest.mark.parametrize("path", SOLUTION_FILES, ids=lambda p: p.parts[-3])
def test_multi_mutations_hangs_and_syntax_errors_on_bundled_solutions(path: Path) -> None:
    src = path.read_text(encoding="utf-8")
    for seed in range(5):
        res = mutate(src, np.random.default_rng(seed), count=3)
        compile(res.source, str(path), "exec")
        assert 1 <= len(res.sites) <= 3
        assert len({s.node_index for s in res.sites}) == len(res.sites)
        broken = break_syntax(src, np.random.default_rng(seed))
        with pytest.raises(SyntaxError):
            compile(broken.source, str(path), "exec")
    hang = inject_hang(src)
    compile(hang.source, str(path), "exec")
    assert hang.where
    assert "while True:\n" in hang.source


def test_mutate_is_deterministic_per_seed_and_varies_across_seeds() -> None:
    src = SOLUTION_FILES[0].read_text(encoding="utf-8") if SOLUTION_FILES else (
        "def f(a, b):\n    if a < b:\n        return a + 1\n    return b - 2 if a or b else 0\n"
    )
    runs = [mutate(src, np.random.default_rng(seed), count=2) for seed in range(20)]
    again = [mutate(src, np.random.default_rng(seed), count=2) for seed in range(20)]
    assert runs == again
    assert len({r.source for r in runs}) > 5


def test_apply_mutations_equals_mutate_result() -> None:
    src = "def f(a, b):\n    if a < b:\n        return a + 1\n    return b - 2\n"
    res = mutate(src, np.random.default_rng(3), count=2)
    assert apply_mutations(src, res.sites) == res.source


def test_mutate_never_combines_a_site_with_code_another_site_removes() -> None:
    src = "def f(x):\n    if x:\n        x = x + 1\n    return x\n"
    for seed in range(50):
        res = mutate(src, np.random.default_rng(seed), count=5)
        ops = {s.operator for s in res.sites}
        assert not ({"drop_if_body", "arith_swap"} <= ops)
        assert not ({"drop_if_body", "off_by_one"} <= ops)


# --------------------------------------------------------------------------------------- #
# hangs and syntax errors
# --------------------------------------------------------------------------------------- #


def test_inject_hang_public_functions_and_methods_after_docstring() -> None:
    src = (
        'def api(x):\n    """Doc."""\n    return x\n\n'
        "def _private(x):\n    return x\n\n"
        "class Store:\n    def get(self):\n        return 1\n"
    )
    res = inject_hang(src)
    assert res.where == ("api:1", "Store.get:9")
    tree = ast.parse(res.source)
    api = tree.body[0]
    assert isinstance(api, ast.FunctionDef)
    assert isinstance(api.body[1], ast.While)
    private = tree.body[1]
    assert isinstance(private, ast.FunctionDef)
    assert not any(isinstance(s, ast.While) for s in private.body)


def test_inject_hang_without_public_api_hangs_at_import() -> None:
    res = inject_hang("X = 1\n")
    assert res.where == ("<module>",)
    assert res.source.rstrip().endswith("pass")


def test_break_syntax_keeps_the_rest_and_falls_back() -> None:
    src = "# a comment\ndef f(x):\n    return x\n"
    res = break_syntax(src, np.random.default_rng(0))
    assert "# a comment" in res.source
    with pytest.raises(SyntaxError):
        compile(res.source, "<t>", "exec")
    flat = break_syntax("X = 1\n", np.random.default_rng(0))
    assert flat.where[0].startswith("appended")
    with pytest.raises(SyntaxError):
        compile(flat.source, "<t>", "exec")
