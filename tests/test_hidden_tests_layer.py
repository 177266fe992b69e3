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
