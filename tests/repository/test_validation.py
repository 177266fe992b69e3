"""Validation: the vendored instance flips (gold resolves, empty does not); what does not flip says why."""

from __future__ import annotations

from pathlib import Path

import pytest
from repository_helpers import bwrap_available, opener, vendored_suite
from sandbox_helpers import skip_or_fail_in_ci

from reliabench.hidden_tests.repository import RepositoryTests
from reliabench.repository.validation import validate_repository_task


def test_vendored_instance_flips_and_a_broken_gold_does_not(tmp_path: Path) -> None:
    if not bwrap_available():
        skip_or_fail_in_ci("bubblewrap (bwrap) is not installed: repository tasks run in it")
    suite = vendored_suite(tmp_path / "v")
    tests = RepositoryTests(opener(slot=4), slot=4)
    task = suite.tasks[0]
    v = validate_repository_task(tests, task, slot=4)
    assert v.flips and v.reason is None, v.reason
    assert v.empty is not None and v.gold is not None
    assert v.empty.swebench["fail_to_pass"] == [0, 1] and v.gold.swebench["resolution"] == "RESOLVED_FULL"
    # a gold patch that fixes nothing: listed with the reason
    assert task.repository is not None and task.repository.gold_patch is not None
    task.repository.gold_patch.write_text("")
    broken = validate_repository_task(RepositoryTests(opener(slot=4), slot=4), task, slot=4)
    assert not broken.flips and broken.reason is not None
    assert broken.reason.startswith("gold patch does not resolve") and "FAIL_TO_PASS 0/1" in broken.reason


def test_not_a_repository_task() -> None:
    from reliabench.tasks.suite import resolve_suite

    task = resolve_suite("py30").tasks[0]
    v = validate_repository_task(RepositoryTests(opener()), task)
    assert not v.flips and v.reason == "not a repository task"


pytestmark = pytest.mark.sandbox


SHARED = next((p / "shared" / "data" / "swe-bench-lite-dev" for p in Path(__file__).resolve().parents[3:5]
               if (p / "shared" / "data" / "swe-bench-lite-dev").is_dir()), None)
THREE = ("marshmallow-code__marshmallow-1359", "pytest-dev__pytest-11143", "sqlfluff__sqlfluff-1625")


@pytest.mark.slow
def test_ci_converts_all_31_and_validates_three_of_three_repositories(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """CI: `suites import swebench` of the 31 shared rows, then `reliabench validate` of three instances of
    three repositories (their environments cached by spec hash: cold ~2 min, cached ~30 s; docs/repository-tasks.md)."""
    if not bwrap_available():
        skip_or_fail_in_ci("bubblewrap (bwrap) is not installed: repository tasks run in it")
    if SHARED is None:
        skip_or_fail_in_ci("shared/data/swe-bench-lite-dev is not beside the clone")
    from reliabench.cli import main
    from reliabench.tasks.suite import load_suite

    suite_dir = tmp_path / "s"
    assert main(["suites", "import", "swebench", str(SHARED / "instances.jsonl"), "--repos", str(SHARED / "repos"),
                 "-o", str(suite_dir)]) == 0
    suite = load_suite(suite_dir)
    assert len(suite.tasks) == 31
    assert sum(t.repository is not None and t.repository.source is not None for t in suite.tasks) == 21
    capsys.readouterr()
    code = main(["validate", str(suite_dir), "--workers", "2", *(a for iid in THREE for a in ("--task", iid))])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "3/3 task(s) valid; isolation: bubblewrap" in err
