"""The hidden-test layer's types."""

from __future__ import annotations

from pathlib import Path

from reliabench.hidden_tests.layer import HiddenTestRunner, TestRequest
from reliabench.sandbox.base import Limits


def test_an_object_without_collect_run_and_close_is_no_runner() -> None:
    class Half:
        path = "fresh"

        def run(self, request: TestRequest) -> None: ...

    assert not isinstance(Half(), HiddenTestRunner)
    assert TestRequest.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert Limits() == Limits() and Path(".")


def test_every_built_in_runner_is_one_of_the_layer() -> None:
    from reliabench.hidden_tests.fresh import FreshPytest
    from reliabench.hidden_tests.stdio import StdioCases
    from reliabench.warm.hidden import WarmTests

    assert isinstance(FreshPytest(), HiddenTestRunner) and FreshPytest.path == "fresh"
    assert isinstance(StdioCases(), HiddenTestRunner) and StdioCases.path == "stdio"
    for method in ("collect", "run", "close"):
        assert callable(getattr(WarmTests, method))  # its servers need root to build one here
    assert WarmTests.path == "warm"


def test_hidden_tests_never_imports_warm() -> None:
    import ast

    import reliabench.hidden_tests as pkg

    for path in Path(pkg.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.startswith("reliabench.warm") for n in names), path
