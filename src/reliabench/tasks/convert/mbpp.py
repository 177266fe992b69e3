r"""MBPP-shaped JSONL -> suite: one plain test per assertion of ``test_list``.

Each line: ``task_id``, ``text`` (the task), ``code`` (the reference), ``test_list`` (assert
statements), optional ``test_setup_code`` (and ``challenge_test_list``, not used, as in the
MBPP harness). The harness's program is::

    code + "\\n" + test_setup_code + "\\n" + "\\n".join(test_list)        # passed <=> no exception

Here the workspace's ``solution.py`` takes the place of ``code``; the set-up code stays at
module level and the asserts become the body of a ``check`` whose units are split exactly as
for HumanEval (:mod:`reliabench.tasks.convert.checksplit`): each assert is one plain test, the
verdict is the harness's (an assert reads the module's globals from inside a function as it
would at module level). The function name the agent must define is the one the asserts call,
named in the prompt, which also shows the asserts (the MBPP prompt convention). EvalPlus's
MBPP+ files are HumanEval-shaped: convert them with ``humaneval``.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

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
from reliabench.tasks.convert.humaneval import SOLUTION_FILE, task_timeout_s

__all__ = ["MbppConverter", "mbpp_task"]

_STARTER = "# Write the function the task asks for here.\n"


def _called_function(rec: JsonRecord, asserts: list[str]) -> str | None:
    """The first function name called at the top of the first assert (``assert f(...) == ...``)."""
    for i, a in enumerate(asserts):
        try:
            tree = ast.parse(a)
        except SyntaxError as exc:
            raise rec.error(f"test_list[{i}]", f"does not parse as Python ({exc.msg})") from None
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and not hasattr(builtins, node.func.id):
                return node.func.id
    return None


def mbpp_task(rec: JsonRecord, options: ConvertOptions) -> tuple[TaskFiles, int]:
    """Build one task from one MBPP-shaped record; returns it and its number of tests.

    Raises:
        InputError: A missing or malformed field (file, line and field named).
    """
    d = rec.data
    raw_id = d.get("task_id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)) or raw_id == "":
        raise rec.error("task_id", f"expected an integer or a non-empty string, got {raw_id!r}")
    source_id = raw_id if isinstance(raw_id, str) else f"Mbpp/{raw_id}"
    text = field_str(rec, "text")
    code = field_str(rec, "code")
    tests = d.get("test_list")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) and t.strip() for t in tests):
        raise rec.error("test_list", "expected a non-empty list of assert statements (strings)")
    setup = d.get("test_setup_code", "") or ""
    if not isinstance(setup, str):
        raise rec.error("test_setup_code", f"expected a string, got {type(setup).__name__}")
    entry = _called_function(rec, tests)
    body = "".join("    " + line + "\n" for t in tests for line in t.strip().splitlines())
    test = f"{setup}\n\ndef check(candidate):\n{body}"
    try:
        split = split_check(test, where="test_list")
    except ValueError as exc:
        raise rec.error("test_list", str(exc).split(": ", 1)[-1]) from None
    module = render_test_module(task_label=source_id, benchmark="MBPP", entry_point=None,
                                solution_file=SOLUTION_FILE, time_limit_s=options.time_limit_s, split=split)
    shown = "\n".join(t.strip() for t in tests)
    name = f"`{entry}`" if entry else "the function the tests call"
    prompt = (f"# {source_id}\n\n{text.strip()}\n\nWrite {name} in `{SOLUTION_FILE}`. Your code should pass "
              f"these tests:\n\n```python\n{shown}\n```\n")
    task = TaskFiles(
        task_id=task_id_for(source_id),
        prompt=prompt,
        workspace={SOLUTION_FILE: _STARTER},
        tests={"test_task.py": module},
        solution={SOLUTION_FILE: code if code.endswith("\n") else code + "\n"},
        meta={"timeout_s": task_timeout_s(options.time_limit_s), "tags": ["mbpp"], "test_runner": "plain"},
        tables={"source": {"benchmark": "MBPP", "task_id": source_id, "entry_point": entry or "",
                           "time_limit_s": options.time_limit_s}},
    )
    return task, len(split.units)


class MbppConverter:
    """MBPP-shaped JSONL (see the module docstring)."""

    name = "mbpp"
    description = "MBPP-shaped JSONL (task_id, text, code, test_list, test_setup_code)"

    def default_source(self) -> Path | None:
        """None: a SOURCE file is required (no MBPP data ships with a PyPI package we use)."""
        return None

    def convert(self, source: Path, out: Path, options: ConvertOptions) -> ConversionResult:
        """Write one task per line of ``source`` into ``out``."""
        return write_converted_suite(
            source, out, options, lambda rec: mbpp_task(rec, options), description=(
                f"MBPP-shaped problems converted from {source.name} by `reliabench suites import mbpp`; "
                "one plain test per assert of test_list, verdict identical to the MBPP harness's."))
