"""EvalPlus ``eval_results.json``: ``{"eval": {task_id: [sample results]}}``.

Each sample result is one rollout (rollout index = position in the list). Two shapes:

* current: ``{"task_id", "solution", "base_status", "plus_status", "base_fail_tests",
  "plus_fail_tests"}`` with statuses ``pass`` / ``fail`` / ``timeout``;
* early releases: ``{"base": [[status, details], ...], "plus": [[status, details], ...]}`` per
  task (one pair per sample).

Verdict (``variant="plus"``, the default, EvalPlus's own "plus" rule): base AND plus pass;
where a file has no plus results (``--base-only`` runs) the base status decides and a note
says so. ``variant="base"``: base tests only. EvalPlus writes no per-test pass list (only the
failing inputs), so records carry verdicts, with the statuses and failing-input counts in
``meta``. A ``timeout`` status gives rollout status ``timeout`` (a failed attempt).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from reliabench.errors import InputError, InvalidArgumentError
from reliabench.importers._common import ImportResult, expect_dict, expect_list, read_json
from reliabench.importers.base import FormatImporter, ImporterOption
from reliabench.records import Rollout

__all__ = ["FORMAT", "IMPORTER", "detect", "load"]

FORMAT = "evalplus"
_STATUSES = ("pass", "fail", "timeout")


def detect(data: Any) -> bool:
    """Whether decoded JSON looks like an EvalPlus ``eval_results.json``."""
    return isinstance(data, dict) and isinstance(data.get("eval"), dict) and "results" not in data


def _status(value: Any, path: Path, field: str) -> str | None:
    if value is None:
        return None
    if value not in _STATUSES:
        raise InputError(path, f"expected one of {', '.join(_STATUSES)}, got {value!r}", field=field)
    return str(value)


def _samples(task: str, raw: Any, path: Path) -> list[tuple[str | None, str | None, dict[str, Any]]]:
    """(base_status, plus_status, extra meta) per sample of one task."""
    out: list[tuple[str | None, str | None, dict[str, Any]]] = []
    if isinstance(raw, list):
        for i, item in enumerate(raw):
            field = f"eval.{task}[{i}]"
            s = expect_dict(item, path, field)
            base = _status(s.get("base_status"), path, field + ".base_status")
            if base is None:
                raise InputError(path, "missing base_status", field=field)
            plus = _status(s.get("plus_status"), path, field + ".plus_status")
            extra = {k: len(s[k]) for k in ("base_fail_tests", "plus_fail_tests")
                     if isinstance(s.get(k), list)}
            out.append((base, plus, extra))
        return out
    d = expect_dict(raw, path, f"eval.{task}")
    bases = expect_list(d.get("base"), path, f"eval.{task}.base")
    pluses = expect_list(d.get("plus", []), path, f"eval.{task}.plus")
    if pluses and len(pluses) != len(bases):
        raise InputError(path, f"{len(bases)} base results but {len(pluses)} plus results",
                         field=f"eval.{task}")
    for i, b in enumerate(bases):
        b_list = expect_list(b, path, f"eval.{task}.base[{i}]")
        base = _status(b_list[0] if b_list else None, path, f"eval.{task}.base[{i}]")
        if base is None:
            raise InputError(path, "missing status", field=f"eval.{task}.base[{i}]")
        plus = None
        if pluses:
            p_list = expect_list(pluses[i], path, f"eval.{task}.plus[{i}]")
            plus = _status(p_list[0] if p_list else None, path, f"eval.{task}.plus[{i}]")
        out.append((base, plus, {}))
    return out


def load(path: Path, data: Any = None, *, agent: str | None = None,
         variant: Literal["plus", "base"] = "plus") -> ImportResult:
    """Read an EvalPlus results file.

    Args:
        path: The JSON file.
        data: Its decoded content when the caller already has it.
        agent: Name to give the agent (default: the folder holding the file, or the file's
            name without ``_eval_results.json``).
        variant: ``plus`` (base and plus tests) or ``base`` (base tests only).

    Raises:
        InputError: naming the file and the sample at fault.
    """
    if variant not in ("plus", "base"):
        raise InvalidArgumentError(f"variant must be 'plus' or 'base', got {variant!r}")
    obj = expect_dict(read_json(path) if data is None else data, path, "results file")
    ev = expect_dict(obj.get("eval"), path, "eval")
    stem = path.name.removesuffix(".json").removesuffix("eval_results").rstrip("_.")
    name = agent or stem or path.resolve().parent.name
    records: list[Rollout] = []
    base_only = 0
    for task, raw in sorted(ev.items()):
        for i, (base, plus, extra) in enumerate(_samples(task, raw, path)):
            if variant == "plus" and plus is None:
                base_only += 1
            statuses = [base] + ([plus] if variant == "plus" and plus is not None else [])
            ok = all(s == "pass" for s in statuses)
            timeout = not ok and "timeout" in statuses
            records.append(Rollout(
                task_id=task, agent=name, rollout=i, verdict=ok,
                status="timeout" if timeout else "completed",
                meta={"source": FORMAT, "base_status": base, "plus_status": plus, **extra},
            ))
    if not records:
        raise InputError(path, "no samples in 'eval'")
    notes = [f"verdict = {'base and plus tests pass' if variant == 'plus' else 'base tests pass'}; "
             "no per-test outcomes in this format"]
    if base_only:
        notes.append(f"{base_only} sample(s) have no plus result: their base status decides")
    return ImportResult(tuple(records), FORMAT, tuple(notes))


IMPORTER = FormatImporter(
    FORMAT, "EvalPlus", frozenset({"json"}), lambda path, data: detect(data), load,
    (ImporterOption("variant", "plus (base and plus tests, default) or base tests only.",
                    choices=("plus", "base")),),
)
"""``eval_results.json`` (base/plus status per sample)."""
