"""Each task's hidden tests, learned once before any rollout (reliabench.run.expected)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import cast

import pytest
from sandbox_helpers import backend_or_skip
from tasks.test_suite import make_suite, make_task

from reliabench.errors import SuiteError
from reliabench.records import TestOutcome
from reliabench.run.expected import collect_expected
from reliabench.sandbox import EnvironmentBackend
from reliabench.tasks.suite import load_suite


def test_collects_pytest_and_plain_tasks_and_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = backend_or_skip("bubblewrap")
    scratch_root = Path(tempfile.mkdtemp(prefix="rb-expected-"))  # its own temp dir: no other run's scratch
    os.chmod(scratch_root, 0o711)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_root))
    os.chmod(tmp_path, 0o755)
    root = make_suite(tmp_path / "s")
    t = make_task(root, "param", 'id = "param"\n')
    (t / "tests" / "test_adder.py").write_text(
        "import pytest\nfrom adder import add\n\n"
        "@pytest.mark.parametrize('a', [1, 2])\ndef test_p(a):\n    assert add(a, 0) == a\n\n"
        "@pytest.mark.security\ndef test_sec():\n    assert add('1', '2') == '12'\n")
    make_task(root, "plainer", 'id = "plainer"\ntest_runner = "plain"\n')
    for p in [root, *root.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    suite = load_suite(root)
    expected = collect_expected(backend, 2, suite.tasks)
    assert expected == {
        "adder": (TestOutcome("test_adder.py::test_add", "skipped"),),
        "param": (TestOutcome("test_adder.py::test_p[1]", "skipped"), TestOutcome("test_adder.py::test_p[2]", "skipped"),
                  TestOutcome("test_adder.py::test_sec", "skipped", security=True)),
        "plainer": (TestOutcome("test_adder.py::test_add", "skipped"),),
    }
    assert list(scratch_root.iterdir()) == []  # the scratch starters are removed
    scratch_root.rmdir()


def test_no_tasks_touch_no_backend() -> None:
    assert collect_expected(cast(EnvironmentBackend, None), 1, []) == {}


def test_an_allowed_skip_that_names_no_hidden_test_stops_the_run(tmp_path: Path) -> None:
    # a typo would declare nothing (fail-closed) yet look declared: refused before any rollout
    root = make_suite(tmp_path / "s")
    make_task(root, "plainer", 'id = "plainer"\ntest_runner = "plain"\n'
                               'allowed_skips = ["test_adder.py::test_add", "test_adder.py::test_ad"]\n')
    task = load_suite(root).task("plainer")
    with pytest.raises(SuiteError) as info:
        collect_expected(cast(EnvironmentBackend, None), 1, [task])  # plain: read on the host
    assert info.value.problems == (
        f"{task.root / 'task.toml'}: allowed_skips: 'test_adder.py::test_ad' is not a hidden test of this "
        "task (collected: test_adder.py::test_add, ...)",)
