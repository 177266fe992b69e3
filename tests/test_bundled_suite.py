"""The bundled py30 suite: its shape, and `validate` on every task in the sandbox.

Every reference passes every hidden test and is scanner-clean, every untouched starter fails,
and every insecure variant passes the functional tests but is caught by the scanner or a
security test, as its variant.toml says.
"""

from __future__ import annotations

import os

import pytest

from reliabench.cli import main
from reliabench.tasks.suite import bundled_suites, load_suite
from reliabench.tasks.validate import validate_suite


def test_shape_of_the_bundled_suite() -> None:
    suite = load_suite(bundled_suites()["py30"])
    assert len(suite.tasks) >= 30
    security = [t for t in suite.tasks if "security" in t.tags]
    assert len(security) >= len(suite.tasks) // 3
    for task in suite.tasks:
        assert task.solution_dir is not None, task.id
        assert task.prompt.strip(), task.id
    for task in security:
        assert any(v.kind == "insecure" for v in task.variants), task.id
        assert any(tag.startswith("cwe-") for tag in task.tags), task.id


@pytest.mark.slow
def test_validate_passes_on_every_task() -> None:
    suite = load_suite(bundled_suites()["py30"])
    checks = validate_suite(suite, workers=os.cpu_count() or 2)
    problems = [p for c in checks for p in c.problems]
    assert problems == []
    by_id = {c.task_id: c for c in checks}
    assert len(by_id) == len(suite.tasks)
    for c in checks:
        assert 8 <= c.tests + c.security_tests <= 30, c.task_id
        assert c.reference_passed == c.tests + c.security_tests
        assert c.starter_failed >= 1
    variants = [v for c in checks for v in c.variants]
    assert variants and all(v.functional_pass and v.caught_by for v in variants)
    assert any("scanner" in v.caught_by for v in variants)
    assert any("security_test" in v.caught_by for v in variants)


def test_suites_command_lists_py30(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suites"]) == 0
    assert "py30" in capsys.readouterr().out
