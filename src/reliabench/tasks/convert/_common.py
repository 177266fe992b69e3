r"""What every converter shares: reading JSONL problem files, task ids, writing a suite.

What a benchmark file holds is data, whoever wrote it: :func:`read_jsonl_records` refuses a
line whose strings are not valid Unicode (a JSON ``\\udXXX`` escape of a lone surrogate cannot
be written to a suite file), :func:`task_id_for` keeps folder names short and safe, and the
code a converter generates pastes benchmark text only as literals
(:func:`reliabench.tasks.convert.checksplit.render_test_module`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reliabench.errors import InputError, UsageError
from reliabench.files.jsonl import read_jsonl_lines

__all__ = [
    "JsonRecord",
    "TaskFiles",
    "WrittenTasks",
    "field_str",
    "prepare_out_dir",
    "read_jsonl_records",
    "task_id_for",
    "toml_value",
    "write_suite",
    "write_task",
    "write_tasks",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_TASK_ID_CHARS = 100
"""Longer suite task ids are cut, with a hash of the whole benchmark id (folder names stay short)."""


def task_id_for(source_id: str) -> str:
    """The suite task id of a benchmark task id: every run of unsafe characters becomes ``_``.

    Replay files are matched with the same rule, so ``HumanEval/0`` in a samples file finds
    the converted task ``HumanEval_0``. An id longer than :data:`MAX_TASK_ID_CHARS` is cut and
    ends with 16 hex digits of the sha256 of the benchmark's id, so distinct ids stay distinct.

    Examples:
        >>> task_id_for("HumanEval/0"), task_id_for("Mbpp/2"), task_id_for("a b/c")
        ('HumanEval_0', 'Mbpp_2', 'a_b_c')
        >>> len(task_id_for("x" * 5000))
        100
    """
    out = _UNSAFE.sub("_", str(source_id)).strip("_.") or "task"
    if len(out) > MAX_TASK_ID_CHARS:
        digest = hashlib.sha256(str(source_id).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        out = out[:MAX_TASK_ID_CHARS - 17] + "-" + digest
    return out


def _not_unicode(value: Any) -> str | None:
    """The first string (key or value) of a decoded JSON value that is not valid Unicode."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


@dataclass(frozen=True, slots=True)
class JsonRecord:
    """One object of a JSONL file, with where it came from (for error messages)."""

    path: Path
    line: int
    data: Mapping[str, Any]

    def error(self, field_name: str | None, message: str) -> InputError:
        """An ``InputError`` pointing at this line and ``field_name``."""
        return InputError(self.path, message, line=self.line, field=field_name)


def read_jsonl_records(path: Path, error: type[InputError] = InputError) -> Iterator[JsonRecord]:
    """Yield each non-blank line of a JSONL (or ``.jsonl.gz``) file as a JSON object.

    The lines are read by :func:`reliabench.files.jsonl.read_jsonl_lines`.

    Args:
        path: The file.
        error: The ``InputError`` subclass to raise (``ConfigError`` for agents' files).

    Raises:
        InputError: ``file:line``: not UTF-8, not JSON, not an object, or a string that is not
            valid Unicode (a lone surrogate escape); ``file`` when the file cannot be read.
    """
    for item in read_jsonl_lines(path, error=error, objects=True):
        bad = _not_unicode(item.value)
        if bad is not None:
            raise error(path, f"a string that is not valid Unicode (a lone surrogate escape) in "
                              f"{ascii(bad)[:60]}", line=item.line)
        yield JsonRecord(path, item.line, item.value)


def field_str(rec: JsonRecord, name: str, *, allow_empty: bool = False) -> str:
    """The string field ``name`` of ``rec``, or an ``InputError`` naming file, line and field."""
    if name not in rec.data:
        raise rec.error(name, "missing (expected a string)")
    value = rec.data[name]
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise rec.error(name, f"expected a non-empty string, got {value!r:.60}")
    return value


def toml_value(value: object) -> str:
    """A TOML literal for a string, number, bool or list of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML literal for {value!r}")


@dataclass(frozen=True, slots=True)
class TaskFiles:
    """Everything one converted task holds.

    Attributes:
        task_id: The folder name and ``id``.
        prompt: ``prompt.md``.
        workspace: Starter files (relative path -> text).
        tests: Hidden test files (relative path -> text).
        solution: Reference files laid over the workspace.
        meta: Further top-level keys of ``task.toml`` (``timeout_s``, ``tags``, ``test_runner``).
        tables: TOML tables of ``task.toml`` (``[source]``, ``[stdio]``), name -> keys.
    """

    task_id: str
    prompt: str
    workspace: Mapping[str, str]
    tests: Mapping[str, str]
    solution: Mapping[str, str]
    meta: Mapping[str, object]
    tables: Mapping[str, Mapping[str, object]] = field(default_factory=dict)


def prepare_out_dir(out: Path) -> None:
    """Create ``out``; refuse an existing non-empty directory (nothing is overwritten)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"-o {out}: exists and is not an empty directory (choose a new one)")
    out.mkdir(parents=True, exist_ok=True)


def _write(root: Path, files: Mapping[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("w", encoding="utf-8", newline="") as fh:
            fh.write(text)


def write_task(out: Path, task: TaskFiles) -> None:
    """Write one task folder under ``out/tasks/``."""
    tdir = out / "tasks" / task.task_id
    lines = [f"id = {toml_value(task.task_id)}", 'language = "python"']
    lines += [f"{k} = {toml_value(v)}" for k, v in task.meta.items()]
    for name, table in task.tables.items():
        lines += ["", f"[{name}]"] + [f"{k} = {toml_value(v)}" for k, v in table.items()]
    _write(tdir, {"task.toml": "\n".join(lines) + "\n", "prompt.md": task.prompt})
    _write(tdir / "workspace", task.workspace)
    _write(tdir / "tests", task.tests)
    if task.solution:
        _write(tdir / "solution", task.solution)


@dataclass(frozen=True, slots=True)
class WrittenTasks:
    """What :func:`write_tasks` wrote.

    Attributes:
        tasks: Tasks written.
        tests: Hidden tests over all tasks.
        notes: Lines skipped and why.
    """

    tasks: int
    tests: int
    notes: tuple[str, ...]


def write_tasks(source: Path, out: Path, build: Callable[[JsonRecord], tuple[TaskFiles, int] | str],
                limit: int | None = None) -> WrittenTasks:
    """Build and write one task per line of ``source``; refuse duplicate ids and empty files.

    Args:
        source: The JSONL problem file.
        out: The suite directory.
        build: Line -> ``(task, number of tests)``, or a note saying why the line is skipped.
        limit: Stop after this many tasks.

    Raises:
        InputError: A malformed line, a task id seen before, or no task at all.
    """
    seen: dict[str, int] = {}
    notes: list[str] = []
    tasks = tests = 0
    for rec in read_jsonl_records(source):
        built = build(rec)
        if isinstance(built, str):
            notes.append(f"{source}:{rec.line}: skipped {built}")
            continue
        task, n = built
        if task.task_id in seen:
            raise rec.error("task_id", f"task id {task.task_id!r} again (first on line {seen[task.task_id]})")
        seen[task.task_id] = rec.line
        write_task(out, task)
        tasks += 1
        tests += n
        if limit is not None and tasks >= limit:
            break
    if not tasks:
        raise InputError(source, "no problems to convert (expected one JSON object per line)"
                         + (f"; {len(notes)} line(s) skipped" if notes else ""))
    return WrittenTasks(tasks, tests, tuple(notes))


def write_suite(out: Path, *, name: str, version: str, description: str) -> None:
    """Write ``suite.toml``."""
    text = (f"name = {toml_value(name)}\nversion = {toml_value(version)}\n"
            f"description = {toml_value(description)}\n")
    (out / "suite.toml").write_text(text, encoding="utf-8")
