r"""A suite converter plugin: JSONL of functions with input/output cases -> a reliabench suite.

Each line::

    {"id": "add", "prompt": "Add two numbers.", "function": "add",
     "cases": [{"args": [1, 2], "expected": 3}], "solution": "def add(a, b):\n    return a + b\n"}

becomes a task whose agent writes ``function`` in ``solution.py``; each case is one hidden
pytest test (``solution`` is the reference ``reliabench validate`` checks).

Entry point, in the plugin's ``pyproject.toml``::

    [project.entry-points."reliabench.converters"]
    cases = "cases_converter:CasesConverter"

Then ``reliabench suites import cases problems.jsonl -o my-suite``.
"""

from __future__ import annotations

import keyword
from pathlib import Path

from reliabench.tasks.convert import (
    ConversionResult,
    ConvertOptions,
    JsonRecord,
    TaskFiles,
    field_str,
    task_id_for,
    write_converted_suite,
)

__all__ = ["CasesConverter", "cases_task"]


def cases_task(rec: JsonRecord, options: ConvertOptions) -> tuple[TaskFiles, int]:
    """One task from one line, and its number of hidden tests.

    Raises:
        InputError: A missing or malformed field (file, line and field named).
    """
    source_id = field_str(rec, "id")
    function = field_str(rec, "function")
    if not function.isidentifier() or keyword.iskeyword(function):
        raise rec.error("function", f"expected a Python identifier, got {function!r}")
    cases = rec.data.get("cases")
    if not isinstance(cases, list) or not cases:
        raise rec.error("cases", "expected a non-empty list of {args, expected} objects")
    # benchmark text goes into code only as a literal (!a): an id that closes a docstring stays data
    doc = f"Hidden tests of {source_id}: one per case (the import inside, so each fails alone)."
    tests = [f"{doc!a}\n"]
    for i, case in enumerate(cases):
        if not isinstance(case, dict) or not isinstance(case.get("args"), list) or "expected" not in case:
            raise rec.error(f"cases[{i}]", "expected an object with an 'args' list and 'expected'")
        tests.append(f"\n\ndef test_case_{i}():\n"
                     f"    from solution import {function}\n\n"
                     f"    assert {function}(*{case['args']!a}) == {case['expected']!a}\n")
    solution = field_str(rec, "solution")
    task = TaskFiles(
        task_id=task_id_for(source_id),
        prompt=f"# {source_id}\n\n{field_str(rec, 'prompt').strip()}\n\n"
               f"Write `{function}` in `solution.py`.\n",
        workspace={"solution.py": "# Write the function the task asks for here.\n"},
        tests={"test_cases.py": "".join(tests)},
        solution={"solution.py": solution if solution.endswith("\n") else solution + "\n"},
        meta={"timeout_s": max(10.0, 2 * options.time_limit_s), "tags": ["cases"]},
    )
    return task, len(cases)


class CasesConverter:
    """JSONL of functions with input/output cases (see the module docstring)."""

    name = "cases"
    description = "JSONL of functions with input/output cases (id, prompt, function, cases, solution)"

    def default_source(self) -> Path | None:
        """None: a SOURCE file is required."""
        return None

    def convert(self, source: Path, out: Path, options: ConvertOptions) -> ConversionResult:
        """Write one task per line of ``source`` into ``out``."""
        return write_converted_suite(source, out, options, lambda rec: cases_task(rec, options),
                                     name=options.name or "cases", description=self.description)
