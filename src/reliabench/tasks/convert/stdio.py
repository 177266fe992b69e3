"""stdin/stdout problems (APPS, CodeContests, LiveCodeBench or a plain form) -> stdio suite.

One JSON object per line, its shape detected from its keys:

* plain: ``task_id``, ``statement``, ``tests`` = ``[{"input", "output"}, ...]``, optional
  ``solution`` (Python 3 source), ``compare`` (``exact`` / ``whitespace`` / ``float``) and
  ``float_tolerance``;
* APPS: ``problem_id``, ``question``, ``input_output`` (``{"inputs": [...], "outputs": [...]}``,
  as an object or a JSON string), ``solutions`` (a list or JSON string; the first is the
  reference). Call-based problems (``fn_name``) are not stdin/stdout and are skipped, with a note;
* CodeContests: ``name``, ``description``, ``public_tests`` / ``private_tests`` /
  ``generated_tests`` (``{"input": [...], "output": [...]}``), ``solutions``
  (``{"language": [...], "solution": [...]}``; the first Python 3 one, language 3, is the reference);
* LiveCodeBench: ``question_id``, ``question_content``, ``public_test_cases`` (a JSON string of
  ``[{"input", "output", "testtype"}]``; ``stdin`` cases only). Its private cases are a pickled,
  compressed blob that is never unpickled here (unpickling runs code): only public cases are used.

Each task gets ``test_runner = "stdio"``, ``workspace/solution.py`` (a comment: the agent writes
the program), ``solution/solution.py`` when there is a reference, and ``tests/NNN.in`` /
``tests/NNN.out`` per case (:mod:`reliabench.hidden_tests.stdio_config`). ``reliabench validate`` runs the
reference on every case: a problem whose reference fails its own cases is reported, never kept
silently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reliabench.hidden_tests.stdio_config import COMPARE_MODES
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

__all__ = ["StdioConverter", "stdio_task"]

_STARTER = "# Write a Python 3 program here: read the input from standard input, print the answer.\n"


def _maybe_json(rec: JsonRecord, name: str, value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise rec.error(name, f"expected JSON (or a JSON string), {exc.msg}") from None
    return value


def _text(rec: JsonRecord, name: str, value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value) + "\n"
    if not isinstance(value, str):
        raise rec.error(name, f"expected a string, got {type(value).__name__}")
    return value


def _pairs(rec: JsonRecord, name: str, inputs: Any, outputs: Any) -> list[tuple[str, str]]:
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise rec.error(name, "expected lists of inputs and outputs")
    if len(inputs) != len(outputs):
        raise rec.error(name, f"{len(inputs)} inputs but {len(outputs)} outputs")
    return [(_text(rec, name, i), _text(rec, name, o)) for i, o in zip(inputs, outputs, strict=True)]


def _io_pair(t: Any) -> bool:
    return isinstance(t, dict) and isinstance(t.get("input"), str) and isinstance(t.get("output"), str)


def _normalise(rec: JsonRecord) -> tuple[str, str, list[tuple[str, str]], str | None, dict[str, Any]] | str:
    """``(id, statement, cases, reference, stdio table)`` or a note why the row is skipped."""
    d = rec.data
    table: dict[str, Any] = {}
    if "statement" in d or "tests" in d:  # plain
        tid = field_str(rec, "task_id")
        statement = field_str(rec, "statement")
        tests = d.get("tests")
        if not isinstance(tests, list) or not tests:
            raise rec.error("tests", "expected a non-empty list of {\"input\", \"output\"} objects")
        cases = []
        for i, t in enumerate(tests):
            if not _io_pair(t):
                raise rec.error(f"tests[{i}]", "expected an object with string input and output")
            cases.append((t["input"], t["output"]))
        ref = d.get("solution")
        if ref is not None and not isinstance(ref, str):
            raise rec.error("solution", f"expected a string, got {type(ref).__name__}")
        compare = d.get("compare", "whitespace")
        if compare not in COMPARE_MODES:
            raise rec.error("compare", f"expected one of {', '.join(COMPARE_MODES)}, got {compare!r}")
        table["compare"] = compare
        if "float_tolerance" in d:
            tol = d["float_tolerance"]
            if isinstance(tol, bool) or not isinstance(tol, (int, float)) or tol < 0:
                raise rec.error("float_tolerance", f"expected a number >= 0, got {tol!r}")
            table["float_tolerance"] = float(tol)
        return tid, statement, cases, ref, table
    if "question" in d and "input_output" in d:  # APPS
        tid = f"apps-{d.get('problem_id', rec.line)}"
        statement = field_str(rec, "question")
        io = _maybe_json(rec, "input_output", d["input_output"])
        if not isinstance(io, dict):
            raise rec.error("input_output", "expected an object with inputs and outputs")
        if io.get("fn_name"):
            return f"{tid}: call-based (fn_name {io['fn_name']!r}), not stdin/stdout"
        cases = _pairs(rec, "input_output", io.get("inputs"), io.get("outputs"))
        sols = _maybe_json(rec, "solutions", d.get("solutions") or "[]")
        ref = sols[0] if isinstance(sols, list) and sols and isinstance(sols[0], str) else None
        return tid, statement, cases, ref, table
    if "description" in d and ("public_tests" in d or "private_tests" in d):  # CodeContests
        tid = field_str(rec, "name")
        statement = field_str(rec, "description")
        cases = []
        for key in ("public_tests", "private_tests", "generated_tests"):
            t = d.get(key)
            if t:
                if not isinstance(t, dict):
                    raise rec.error(key, "expected an object with input and output lists")
                cases += _pairs(rec, key, t.get("input"), t.get("output"))
        ref = None
        sols = d.get("solutions")
        if isinstance(sols, dict):
            langs, codes = sols.get("language", []), sols.get("solution", [])
            ref = next((c for lang, c in zip(langs, codes, strict=False)
                        if lang == 3 and isinstance(c, str)), None)
        return tid, statement, cases, ref, table
    if "question_content" in d:  # LiveCodeBench
        tid = f"lcb-{field_str(rec, 'question_id')}"
        statement = field_str(rec, "question_content")
        public = _maybe_json(rec, "public_test_cases", d.get("public_test_cases", "[]"))
        if not isinstance(public, list):
            raise rec.error("public_test_cases", "expected a list of test cases")
        cases = []
        for i, t in enumerate(public):
            if not _io_pair(t):
                raise rec.error(f"public_test_cases[{i}]", "expected an object with string input and output")
            if t.get("testtype", "stdin") == "stdin":
                cases.append((t["input"], t["output"]))
        if not cases:
            return f"{tid}: no stdin test cases (functional LeetCode-style problem)"
        return tid, statement, cases, None, table
    raise rec.error(None, f"unknown problem shape (keys {sorted(d)[:8]}): expected task_id + statement + "
                          "tests, APPS, CodeContests or LiveCodeBench fields")


def stdio_task(rec: JsonRecord, options: ConvertOptions) -> tuple[TaskFiles, int] | str:
    """One stdio task (and its number of cases) from one problem line, or why it is skipped."""
    norm = _normalise(rec)
    if isinstance(norm, str):
        return norm
    source_id, statement, cases, ref, table = norm
    if not cases:
        raise rec.error("tests", "no input/output cases")
    width = max(3, len(str(len(cases))))
    tests: dict[str, str] = {}
    for i, (inp, out) in enumerate(cases, start=1):
        tests[f"{i:0{width}d}.in"] = inp
        tests[f"{i:0{width}d}.out"] = out
    prompt = (f"# {source_id}\n\n{statement.rstrip()}\n\n---\n\nWrite a Python 3 program in `solution.py`: "
              "it reads the input from standard input and prints the answer to standard output.\n")
    return TaskFiles(
        task_id=task_id_for(source_id),
        prompt=prompt,
        workspace={"solution.py": _STARTER},
        tests=tests,
        solution={"solution.py": ref} if ref else {},
        meta={"timeout_s": float(options.time_limit_s), "tags": ["stdio"], "test_runner": "stdio"},
        tables={"stdio": {"program": "solution.py", **table, "case_timeout_s": float(options.time_limit_s)},
                "source": {"task_id": source_id, "cases": len(cases)}},
    ), len(cases)


class StdioConverter:
    """stdin/stdout problems (see the module docstring)."""

    name = "stdio"
    description = "stdin/stdout problems: plain, APPS, CodeContests or LiveCodeBench JSONL"

    def default_source(self) -> Path | None:
        """None: a SOURCE file is required."""
        return None

    def convert(self, source: Path, out: Path, options: ConvertOptions) -> ConversionResult:
        """Write one stdio task per convertible line of ``source`` into ``out``."""
        return write_converted_suite(
            source, out, options, lambda rec: stdio_task(rec, options),
            description=(f"stdin/stdout problems converted from {source.name} by "
                         "`reliabench suites import stdio`."))
