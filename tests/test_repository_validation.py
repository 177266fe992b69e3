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


SHARED = next((p / "shared" / "data" / "swe-bench-lite-dev" for p in Path(__file__).resolve().parents[2:4]
               if (p / "shared" / "data" / "swe-bench-lite-dev").is_dir()), None)
THREE = ("marshmallow-code__marshmallow-1359", "pytest-dev__pytest-11143", "sqlfluff__sqlfluff-1625")


@pytest.mark.slow
def test_three_shared_instances_of_three_repositories_flip(tmp_path: Path) -> None:
    """CI builds and validates three real instances (~2 min cold, ~20 s with the cache)."""
    if not bwrap_available():
        skip_or_fail_in_ci("bubblewrap (bwrap) is not installed: repository tasks run in it")
    if SHARED is None:
        skip_or_fail_in_ci("shared/data/swe-bench-lite-dev is not beside the clone")
    from reliabench.tasks.convert import ConvertOptions, import_suite
    from reliabench.tasks.suite import load_suite

    import_suite("swebench", SHARED / "instances.jsonl", tmp_path / "s", ConvertOptions(repos=SHARED / "repos"))
    suite = load_suite(tmp_path / "s")
    tests = RepositoryTests(opener(slot=4), slot=4)
    for iid in THREE:
        v = validate_repository_task(tests, suite.task(iid), slot=4)
        assert v.flips, (iid, v.reason)
