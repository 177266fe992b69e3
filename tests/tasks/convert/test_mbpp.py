"""MBPP-shaped JSONL -> suite: one plain test per assert of test_list, the harness's verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reliabench.cli import main
from reliabench.errors import InputError
from reliabench.tasks.convert import import_suite
from reliabench.tasks.suite import load_suite
from tasks.convert.test_humaneval import run_units

# MBPP-shaped rows written here (the shape of google-research/mbpp's mbpp.jsonl)
ROWS: list[dict[str, Any]] = [
    {"task_id": 2, "text": "Write a function to find the shared elements from the given two lists.",
     "code": "def similar_elements(a, b):\n    return tuple(set(a) & set(b))",
     "test_list": ["assert set(similar_elements((3, 4, 5, 6), (5, 7, 4, 10))) == set((4, 5))",
                   "assert set(similar_elements((1, 2, 3, 4), (5, 4, 3, 7))) == set((3, 4))",
                   "assert set(similar_elements((11, 12, 14, 13), (17, 15, 14, 13))) == set((13, 14))"],
     "test_setup_code": "", "challenge_test_list": []},
    {"task_id": 3, "text": "Scale a number by the factor the tests set up.",
     "code": "def scale(x):\n    return x * FACTOR", "test_setup_code": "FACTOR = 3",
     "test_list": ["assert scale(2) == 6", "assert scale(0) == 0"]},
]


def jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    out = tmp_path / "suite"
    result = import_suite("mbpp", jsonl(tmp_path / "mbpp.jsonl", ROWS), out)
    assert (result.tasks, result.tests) == (2, 5)
    return out


def test_converted_tasks(suite_dir: Path) -> None:
    suite = load_suite(suite_dir)
    assert [t.id for t in suite.tasks] == ["Mbpp_2", "Mbpp_3"]
    task = suite.task("Mbpp_2")
    assert task.test_runner == "plain"
    assert "`similar_elements`" in task.prompt and "assert set(similar_elements" in task.prompt
    assert 'task_id = "Mbpp/2"' in (task.root / "task.toml").read_text()


def test_one_outcome_per_assert_and_setup_code_is_global(suite_dir: Path) -> None:
    t2 = suite_dir / "tasks" / "Mbpp_2"
    assert run_units(t2, ROWS[0]["code"]) == ["passed"] * 3
    assert run_units(t2, "def similar_elements(a, b):\n    return (4, 5)\n") == ["passed", "failed", "failed"]
    assert run_units(t2, "# nothing\n") == ["failed"] * 3  # the starter
    t3 = suite_dir / "tasks" / "Mbpp_3"
    assert run_units(t3, ROWS[1]["code"]) == ["passed", "passed"]  # FACTOR from test_setup_code


@pytest.mark.parametrize(("row", "message"), [
    ({"task_id": 1, "text": "t", "code": "x = 1", "test_list": []}, ":1: test_list: expected a non-empty list"),
    ({"task_id": 1, "text": "t", "code": "x = 1", "test_list": ["assert f("]}, ":1: test_list[0]: does not parse"),
    ({"task_id": None, "text": "t", "code": "x", "test_list": ["assert 1"]}, ":1: task_id: expected an integer"),
    ({"task_id": 1, "text": "t", "test_list": ["assert 1"]}, ":1: code: missing"),
    ({"task_id": 1, "text": "t", "code": "x", "test_list": ["assert 1"], "test_setup_code": 5},
     ":1: test_setup_code: expected a string"),
])
def test_malformed_mbpp(tmp_path: Path, row: dict[str, Any], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    src = jsonl(tmp_path / "bad.jsonl", [row])
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        import_suite("mbpp", src, tmp_path / "o")
    assert main(["suites", "import", "mbpp", str(src), "-o", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(src) + message in err[0]


def test_mbpp_needs_a_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suites", "import", "mbpp", "-o", str(tmp_path / "o")]) == 2
    assert "give the SOURCE file" in capsys.readouterr().err


@pytest.mark.sandbox
def test_mbpp_suite_validates(suite_dir: Path) -> None:
    from sandbox_helpers import backend_or_skip

    from reliabench.tasks.validate import validate_suite

    backend_or_skip("bubblewrap")
    checks = validate_suite(load_suite(suite_dir), sandbox="bubblewrap")
    assert [(c.task_id, c.ok, c.reference_passed, c.starter_failed) for c in checks] == [
        ("Mbpp_2", True, 3, 3), ("Mbpp_3", True, 2, 2)]
