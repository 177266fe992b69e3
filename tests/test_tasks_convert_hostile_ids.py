"""Benchmark files are data: hostile task ids never become code, for every converter.

A task id is pasted into what a converter writes (the test module's docstring, ``prompt.md``,
``task.toml``, the folder name). An id that closes the docstring and defines ``next()`` made
every assertion unit pass for a ``return 0`` solution; an id with ``\\N`` gave a test module
that cannot be imported while ``suites import`` said it succeeded. Here each hostile id is
converted by ``humaneval`` and ``mbpp`` (test modules) and ``stdio`` (cases), and the converted
tests are run as a run runs them: fresh sandboxed pytest (bubblewrap, namespaces) and the warm
workers (lean plain runner and pytest).
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import hidden_test_path_or_skip, warm_or_skip

from reliabench.cli import main
from reliabench.errors import InputError, SuiteError
from reliabench.hidden_tests.stdio import expected_stdio_tests, run_stdio_tests
from reliabench.tasks.convert import ConvertOptions, check_collects, import_suite
from reliabench.tasks.convert._common import MAX_TASK_ID_CHARS
from reliabench.tasks.suite import Suite, load_suite
from reliabench.warm import run_warm_tests
from reliabench.warm.plain_tests import collect_plain_tests

SLOT = 11

# an id that closes the module docstring and shadows next(): every unit "passed" for any solution
NEXT_ID = 'HumanEval/0"""\ndef next(*a, **k):\n    return (1, None)\n"""'
HOSTILE_IDS = {
    "closes-docstring": NEXT_ID,
    "closes-single-quotes": "x'''\nimport os\nos._exit(0)\n'''",
    "backslash-N": "HumanEval/\\N{oops}",
    "backslash-escapes": "a\\x\\u12\\",
    "newline": "Task/1\n# not a comment\nraise SystemExit",
    "nul": "Task/\x00nul",
    "very-long": "L" * 5000 + "/\"\"\"",
    "non-ascii": "Задача/1 \u2028 \ufeff",
}

ADD_PROMPT = "def add(a, b):\n    \"\"\"Add.\"\"\"\n"
ADD_TEST = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
WRONG = ADD_PROMPT + "    return 0\n"
RIGHT = ADD_PROMPT + "    return a + b\n"


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _humaneval(tmp_path: Path) -> Suite:
    rows = [{"task_id": tid, "prompt": ADD_PROMPT, "canonical_solution": "    return a + b\n",
             "test": ADD_TEST, "entry_point": "add"} for tid in HOSTILE_IDS.values()]
    out = tmp_path / "he"
    result = import_suite("humaneval", _jsonl(tmp_path / "he.jsonl", rows), out)
    assert (result.tasks, result.tests) == (len(HOSTILE_IDS), 2 * len(HOSTILE_IDS))
    return load_suite(out)


def _mbpp(tmp_path: Path) -> Suite:
    rows = [{"task_id": tid, "text": "Add two numbers.", "code": "def add(a, b):\n    return a + b\n",
             "test_list": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]} for tid in HOSTILE_IDS.values()]
    out = tmp_path / "mbpp"
    import_suite("mbpp", _jsonl(tmp_path / "mbpp.jsonl", rows), out)
    return load_suite(out)


_TOP_LEVEL = {"_SOLUTION_FILE", "_ENTRY_POINT", "_TIME_LIMIT_S", "_GENERATOR", "_GLUE", "_UNITS",
              "_TEST_SOURCE", "_io", "_os", "_signal", "_sys", "_threading", "_time", "_ReliabenchTimeout",
              "_Sink", "_NoInput", "_state", "_Guard", "_start", "_advance", "_step"}


@pytest.mark.parametrize("fmt", ["humaneval", "mbpp"])
def test_hostile_ids_stay_data_in_the_test_module(tmp_path: Path, fmt: str) -> None:
    suite = _humaneval(tmp_path) if fmt == "humaneval" else _mbpp(tmp_path)
    assert len(suite.tasks) == len(HOSTILE_IDS)
    for task in suite.tasks:
        assert len(task.id) <= MAX_TASK_ID_CHARS
        source = (task.tests_dir / "test_task.py").read_text(encoding="utf-8")
        assert source.isascii()
        tree = ast.parse(source)
        names = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                 if isinstance(t, ast.Name)}
        names |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        names |= {a.asname or a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
        tests = {n for n in names if n.startswith("test_")}
        assert names - tests == _TOP_LEVEL, task.id  # no next(), no code of the id
        assert len(tests) == 2
        doc = ast.get_docstring(tree, clean=False) or ""
        assert sum(tid in doc for tid in HOSTILE_IDS.values()) == 1  # the id, verbatim, as data


def _run_all(suite: Suite, base: Path, solution: str, path: str) -> list[str]:
    """Every outcome of every task of ``suite`` for ``solution``, run the way ``path`` runs tests."""
    outcomes: list[str] = []
    for i, task in enumerate(suite.tasks):
        ws = base / f"ws-{path}-{i}"
        ws.mkdir()
        (ws / "solution.py").write_text(solution, encoding="utf-8")
        expected = collect_plain_tests(task.tests_dir)
        if path.startswith("warm-"):
            run = run_warm_tests(warm_or_skip(), ws, task.tests_dir, expected=expected, slot=SLOT,
                                 test_runner=path.removeprefix("warm-"))
        else:
            run = hidden_test_path_or_skip(path, SLOT).run(ws, task.tests_dir, expected=expected, slot=SLOT)
        assert run.status == "completed", (task.id, run.reason)
        outcomes += [t.outcome for t in run.outcomes]
        shutil.rmtree(ws)
    return outcomes


@pytest.mark.parametrize("path", ["bubblewrap", "namespaces", "warm-plain", "warm-pytest"])
def test_return_0_fails_and_the_reference_passes_on_every_path(tmp_path: Path, base: Path, path: str) -> None:
    suite = _humaneval(tmp_path)
    n = 2 * len(HOSTILE_IDS)
    assert _run_all(suite, base, WRONG, path) == ["failed"] * n
    assert _run_all(suite, base, RIGHT, path) == ["passed"] * n


def test_stdio_ids_stay_data(tmp_path: Path, base: Path) -> None:
    rows = [{"task_id": tid, "statement": "Echo the line.", "tests": [{"input": "a\n", "output": "a\n"}],
             "solution": "print(input())\n"} for tid in HOSTILE_IDS.values()]
    import_suite("stdio", _jsonl(tmp_path / "io.jsonl", rows), tmp_path / "io")
    suite = load_suite(tmp_path / "io")
    assert len(suite.tasks) == len(HOSTILE_IDS)
    stored = set()
    for task in suite.tasks:
        assert len(task.id) <= MAX_TASK_ID_CHARS and task.stdio is not None
        text = (task.root / "task.toml").read_text(encoding="utf-8")
        from reliabench.files.toml import tomllib

        stored.add(tomllib.loads(text)["source"]["task_id"])
    assert stored == set(HOSTILE_IDS.values())
    task = suite.tasks[0]
    assert task.stdio is not None
    ws = base / "ws"
    ws.mkdir()
    (ws / "solution.py").write_text("print('b')\n", encoding="utf-8")
    run = run_stdio_tests(ws, task.stdio, timeout_s=10.0, backend=hidden_test_path_or_skip("bubblewrap", SLOT).backend,
                          slot=SLOT)
    assert [t.outcome for t in run.outcomes] == ["failed"] and len(expected_stdio_tests(task.stdio)) == 1


@pytest.mark.parametrize("fmt", ["humaneval", "mbpp", "stdio"])
@pytest.mark.parametrize("raw", [b'{"task_id": "T/\\ud800"', b'{"task_id": "T/\xff\xfe"'],
                         ids=["lone-surrogate-escape", "not-utf8"])
def test_ids_that_are_not_text_are_refused_with_file_and_line(tmp_path: Path, fmt: str, raw: bytes,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    rest = {"humaneval": b', "prompt": "def f():\\n", "test": "def check(c):\\n    assert c()\\n", '
                         b'"entry_point": "f"}',
            "mbpp": b', "text": "t", "code": "def f():\\n    return 1\\n", "test_list": ["assert f()"]}',
            "stdio": b', "statement": "s", "tests": [{"input": "", "output": ""}]}'}[fmt]
    src = tmp_path / "p.jsonl"
    src.write_bytes(raw + rest + b"\n")
    with pytest.raises(InputError, match=r"p\.jsonl:1"):
        import_suite(fmt, src, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert main(["suites", "import", fmt, str(src), "-o", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err
    assert "p.jsonl:1" in err and "Traceback" not in err


def test_a_suite_whose_tests_do_not_compile_is_not_reported_converted(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    # a converter that pastes the id into a docstring, as humaneval did: `\N` breaks the module
    from reliabench.tasks.convert import checksplit

    real = checksplit.render_test_module

    def pasting(**kw: Any) -> str:
        return f'"""{kw["task_label"]}"""\n' + real(**kw)

    monkeypatch.setattr("reliabench.tasks.convert.humaneval.render_test_module", pasting)
    rows = [{"task_id": "HumanEval/\\N", "prompt": ADD_PROMPT, "canonical_solution": "    return a + b\n",
             "test": ADD_TEST, "entry_point": "add"}]
    src = _jsonl(tmp_path / "he.jsonl", rows)
    with pytest.raises(SuiteError, match="does not compile"):
        import_suite("humaneval", src, tmp_path / "out", ConvertOptions())
    assert not (tmp_path / "out").exists()  # nothing left that looks like a suite
    assert main(["suites", "import", "humaneval", str(src), "-o", str(tmp_path / "out2")]) != 0
    assert "does not compile" in capsys.readouterr().err and not (tmp_path / "out2").exists()


def test_check_collects_counts_what_the_converter_reported(tmp_path: Path) -> None:
    suite = _humaneval(tmp_path)
    assert check_collects(suite, 2 * len(HOSTILE_IDS)) == []
    assert "collected" in check_collects(suite, 3)[0]
