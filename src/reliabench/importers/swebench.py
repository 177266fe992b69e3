"""SWE-bench harness output: per-instance ``report.json``, run summaries, leaderboard flags.

Three shapes are read:

* **report.json** of the evaluation harness, either keyed by instance id
  (``{instance_id: {"resolved", "tests_status": {"FAIL_TO_PASS": {"success", "failure"}, ...}}}``)
  or the flattened inner object (the instance id is then the name of the folder holding it).
  A folder is searched for every ``report.json`` below it:

  - ``<run_id>/<model>/<instance_id>/report.json`` (``logs/run_evaluation`` layout): one
    rollout per run id, numbered in sorted run-id order per model;
  - ``<model>/<instance_id>/report.json`` (a single run folder): the folder is the run;
  - ``<instance_id>/report.json`` (the flattened layout): one run; the agent is the folder's
    name, or the name of the folder above ``logs/``.

  Tests = FAIL_TO_PASS + PASS_TO_PASS (the tests that decide resolution); ``success`` ->
  passed, ``failure`` -> failed (a name in both lists counts as failed). FAIL_TO_FAIL and
  PASS_TO_FAIL are not hidden tests of the task and are kept only as counts in ``meta``.
  Verdict = ``resolved``. A missing patch (``patch_is_None`` / ``patch_exists`` false) gives
  status ``no_change``; it still counts as a failed attempt.
* **run summary** ``<model>.<run_id>.json`` (``resolved_ids``, ``unresolved_ids``,
  ``error_ids``, ``empty_patch_ids``, and since mid-2026 ``infra_failure_ids``): verdicts only.
  ``error_ids`` become status ``test_error`` (a failed attempt) unless the summary has
  ``infra_failure_*`` keys, whose ids become ``infra_error`` (excluded from n).
* **leaderboard per-instance flags**: a list of ``{"folder", "name", "per_instance":
  {instance_id: bool}}`` -- one submission (one rollout) per agent, verdicts only -- or the
  site's own ``leaderboards.json`` (``{"leaderboards": [{"name", "results": [{"folder", "name",
  "resolved", "per_instance_details": {instance_id: {"resolved": bool, ...}}}]}]}``; choose one
  leaderboard with ``leaderboard=`` when there are several). An entry's ``resolved`` (the
  headline, in percent) is kept as a ``StatedTotal`` for ``audit``; entries without
  per-instance flags are left out (and named in a note).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from reliabench.errors import InputError, InvalidArgumentError
from reliabench.files.untrusted import find_files
from reliabench.importers._common import (
    ImportResult,
    StatedTotal,
    expect_dict,
    expect_list,
    read_json,
    stated_rate,
)
from reliabench.importers.base import FormatImporter, ImporterOption
from reliabench.importers.terminal_bench import detect as _is_terminal_bench
from reliabench.records import Rollout, RolloutStatus, TestOutcome

__all__ = ["FORMAT", "IMPORTER", "detect", "detect_dir", "load"]

FORMAT = "swebench"
_DECIDING = ("FAIL_TO_PASS", "PASS_TO_PASS")
_OTHER = ("FAIL_TO_FAIL", "PASS_TO_FAIL")


def _is_report(obj: Any) -> bool:
    return isinstance(obj, dict) and "tests_status" in obj and "resolved" in obj


def detect(data: Any) -> bool:
    """Whether decoded JSON looks like any of the SWE-bench shapes."""
    if _is_report(data):
        return True
    if isinstance(data, dict) and data:
        if "resolved_ids" in data:
            return True
        if isinstance(data.get("leaderboards"), list):
            return True
        first = next(iter(data.values()))
        return _is_report(first)
    if isinstance(data, list) and data:
        return isinstance(data[0], dict) and ("per_instance" in data[0] or "per_instance_details" in data[0])
    return False


def detect_dir(path: Path) -> bool:
    """Whether a folder holds SWE-bench ``report.json`` files."""
    return bool(find_files(path, "report.json"))


def _tests(report: dict[str, Any], where: Path, field: str) -> tuple[tuple[TestOutcome, ...] | None,
                                                                       dict[str, Any]]:
    status = expect_dict(report.get("tests_status"), where, f"{field}.tests_status")
    outcomes: dict[str, str] = {}
    counts: dict[str, Any] = {}
    for group in (*_DECIDING, *_OTHER):
        raw = status.get(group)
        if raw is None:
            continue
        g = expect_dict(raw, where, f"{field}.tests_status.{group}")
        succ = expect_list(g.get("success", []), where, f"{field}.tests_status.{group}.success")
        fail = expect_list(g.get("failure", []), where, f"{field}.tests_status.{group}.failure")
        for name in (*succ, *fail):
            if not isinstance(name, str) or not name:
                raise InputError(where, f"expected test names (strings), got {name!r}",
                                 field=f"{field}.tests_status.{group}")
        counts[group.lower()] = [len(succ), len(fail)]
        if group in _DECIDING:
            for name in succ:
                outcomes.setdefault(name, "passed")
            for name in fail:
                outcomes[name] = "failed"
    if not outcomes:
        return None, counts
    tests = tuple(TestOutcome(name, "passed" if o == "passed" else "failed")
                  for name, o in outcomes.items())
    return tests, counts


def _rollout_from_report(report: Any, *, instance: str, agent: str, index: int, run_id: str,
                         where: Path, field: str) -> Rollout:
    rep = expect_dict(report, where, field)
    resolved = rep.get("resolved")
    if not isinstance(resolved, bool):
        raise InputError(where, f"expected true or false, got {resolved!r}", field=f"{field}.resolved")
    tests, counts = _tests(rep, where, field)
    no_patch = rep.get("patch_is_None") is True or rep.get("patch_exists") is False
    meta: dict[str, Any] = {"source": FORMAT, "run_id": run_id, **counts}
    if "patch_successfully_applied" in rep:
        meta["patch_applied"] = bool(rep["patch_successfully_applied"])
    return Rollout(task_id=instance, agent=agent, rollout=index, tests=tests, verdict=resolved,
                   status="no_change" if no_patch else "completed", meta=meta)


def _reports_in(data: Any, instance_hint: str, where: Path) -> list[tuple[str, Any, str]]:
    """(instance_id, report, field) triples of one decoded report.json."""
    if _is_report(data):
        return [(instance_hint, data, "report")]
    obj = expect_dict(data, where, "report")
    out = []
    for key, value in obj.items():
        if not _is_report(value):
            raise InputError(where, "expected a report with 'resolved' and 'tests_status'", field=key)
        out.append((key, value, key))
    return out


def _agent_for_flat(root: Path) -> str:
    base = root.resolve()
    return base.parent.name if base.name == "logs" and base.parent.name else base.name


def _load_dir(root: Path, agent: str | None) -> ImportResult:
    files = find_files(root, "report.json")  # regular files only, no link followed
    if not files:
        raise InputError(root, "no report.json below this folder")
    runs: dict[str, set[str]] = defaultdict(set)
    entries: list[tuple[str, str, Path]] = []  # (model, run, file)
    for f in files:
        rel = f.relative_to(root).parts[:-1]  # folders between root and report.json
        if len(rel) >= 3:
            run_id, model = rel[-3], rel[-2]
        elif len(rel) == 2 and rel[0] == "logs":
            # SUBMISSION/logs/<instance>/report.json: the flattened layout one level up
            run_id, model = "run-0", root.resolve().name
        elif len(rel) == 2:
            run_id, model = root.resolve().name, rel[0]
        else:
            run_id, model = "run-0", _agent_for_flat(root)
        name = agent or model
        runs[name].add(run_id)
        entries.append((name, run_id, f))
    index = {(m, r): i for m, rs in runs.items() for i, r in enumerate(sorted(rs))}
    records: list[Rollout] = []
    seen: dict[tuple[str, str, int], Path] = {}
    for model, run_id, f in entries:
        for instance, rep, field in _reports_in(read_json(f, under=root), f.parent.name, f):
            r = _rollout_from_report(rep, instance=instance, agent=model, index=index[model, run_id],
                                     run_id=run_id, where=f, field=field)
            if r.key in seen:
                raise InputError(f, f"instance {instance!r} of run {run_id!r} already read from "
                                 f"{seen[r.key]}", field=field)
            seen[r.key] = f
            records.append(r)
    notes = [f"{name}: {len(rs)} run(s) = {len(rs)} rollout(s) per instance"
             for name, rs in sorted(runs.items())]
    return ImportResult(tuple(records), FORMAT, tuple(notes))


def _load_summary(path: Path, data: dict[str, Any], agent: str | None) -> ImportResult:
    stem = path.name.removesuffix(".json")
    model, _, run_id = stem.partition(".")
    name = agent or model or stem
    infra_keys = [k for k in data if k.startswith("infra_failure")]
    status_of: dict[str, tuple[bool, RolloutStatus]] = {}

    def ids(key: str) -> list[str]:
        value = expect_list(data.get(key, []), path, key)
        for v in value:
            if not isinstance(v, str):
                raise InputError(path, f"expected instance ids (strings), got {v!r}", field=key)
        return value

    for i in ids("unresolved_ids"):
        status_of[i] = (False, "completed")
    for i in ids("empty_patch_ids"):
        status_of[i] = (False, "no_change")
    for i in ids("error_ids"):
        status_of[i] = (False, "test_error")
    for key in infra_keys:
        if isinstance(data[key], list):
            for i in ids(key):
                status_of[i] = (False, "infra_error")
    for i in ids("resolved_ids"):
        status_of[i] = (True, "completed")
    records = tuple(
        Rollout(task_id=i, agent=name, rollout=0, verdict=ok, status=st,
                meta={"source": FORMAT, "run_id": run_id or stem})
        for i, (ok, st) in sorted(status_of.items())
    )
    notes = ["run summary: verdicts only (no per-test outcomes), one rollout per instance"]
    stated: tuple[StatedTotal, ...] = ()
    count = data.get("resolved_instances")
    if isinstance(count, int) and not isinstance(count, bool):
        stated = (StatedTotal(name, f"{path}: resolved_instances = {count}", resolved=count),)
    if not infra_keys and data.get("error_ids"):
        notes.append(f"{len(data['error_ids'])} error_ids counted as failed attempts "
                     "(this summary has no infra_failure_* keys to tell infrastructure apart)")
    return ImportResult(records, FORMAT, tuple(notes), stated=stated)


def _flag(value: Any, path: Path, field: str) -> bool:
    """A per-instance resolved flag: ``true``/``false`` or ``{"resolved": bool, ...}``."""
    flag = value.get("resolved") if isinstance(value, dict) else value
    if not isinstance(flag, bool):
        raise InputError(path, f"expected true or false, got {flag!r}", field=field)
    return flag


def _pick_leaderboard(path: Path, data: dict[str, Any], leaderboard: str | None) -> tuple[str, list[Any]]:
    boards = expect_list(data.get("leaderboards"), path, "leaderboards")
    named: dict[str, list[Any]] = {}
    for i, board in enumerate(boards):
        b = expect_dict(board, path, f"leaderboards[{i}]")
        name = b.get("name")
        if not isinstance(name, str):
            raise InputError(path, "expected a leaderboard name", field=f"leaderboards[{i}].name")
        named[name] = expect_list(b.get("results", []), path, f"leaderboards[{i}].results")
    if leaderboard is not None:
        if leaderboard not in named:
            raise InvalidArgumentError(f"leaderboard must be one of {', '.join(named)}, got {leaderboard!r}")
        return leaderboard, named[leaderboard]
    if len(named) == 1:
        return next(iter(named.items()))
    raise InvalidArgumentError(f"{path} holds {len(named)} leaderboards ({', '.join(named)}): choose one "
                               "with --leaderboard NAME")


def _load_leaderboard(path: Path, data: list[Any], agent: str | None, where: str = "") -> ImportResult:
    records: list[Rollout] = []
    stated: list[StatedTotal] = []
    names: set[str] = set()
    skipped: list[str] = []
    for i, entry in enumerate(data):
        field = f"{where}[{i}]"
        e = expect_dict(entry, path, field)
        name = e.get("folder") or e.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(path, "expected a non-empty 'folder' or 'name'", field=field)
        if agent is not None and agent != name and agent != e.get("name"):
            continue
        if name in names:
            raise InputError(path, f"submission {name!r} appears twice", field=field)
        key = "per_instance" if "per_instance" in e else "per_instance_details"
        per = expect_dict(e.get(key, {}), path, f"{field}.{key}")
        if not per:
            skipped.append(name)
            continue
        names.add(name)
        for inst, value in sorted(per.items()):
            records.append(Rollout(task_id=inst, agent=name, rollout=0,
                                   verdict=_flag(value, path, f"{field}.{key}.{inst}"),
                                   meta={"source": FORMAT}))
        rate = stated_rate(e.get("resolved"), percent=True)
        if rate is not None:
            stated.append(StatedTotal(name, f"{path}: {field}.resolved = {e['resolved']!r} (%)",
                                      rate=rate[0], rate_tolerance=rate[1]))
    if not records:
        raise InputError(path, "no submissions with per-instance flags"
                         + ("" if agent is None else f" named {agent!r}"))
    notes = [f"leaderboard{' ' + where if where else ''}: {len(names)} submission(s), one rollout each, "
             "verdicts only"]
    if skipped:
        notes.append(f"{len(skipped)} submission(s) without per-instance flags left out: "
                     + ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""))
    return ImportResult(tuple(records), FORMAT, tuple(notes), stated=tuple(stated))


def load(path: Path, data: Any = None, *, agent: str | None = None,
         leaderboard: str | None = None) -> ImportResult:
    """Read a SWE-bench ``report.json``, a folder of them, a run summary, or leaderboard flags.

    Args:
        path: A file or a folder.
        data: The decoded JSON of ``path`` when the caller already has it.
        agent: Name to give the agent (overrides the name taken from folders); in leaderboard
            flags, the one submission to read.
        leaderboard: In a leaderboards file with several leaderboards, the one to read.

    Raises:
        InputError: naming the file and the key at fault.
        InvalidArgumentError: for an unknown leaderboard, or none chosen among several.
    """
    obj = None if path.is_dir() else (read_json(path) if data is None else data)
    if isinstance(obj, dict) and "leaderboards" in obj:
        board, entries = _pick_leaderboard(path, obj, leaderboard)
        return _load_leaderboard(path, entries, agent, where=f"leaderboards[{board!r}].results")
    if leaderboard is not None:
        raise InvalidArgumentError(f"leaderboard applies only to a leaderboards file, got "
                                   f"--leaderboard {leaderboard!r} for {path}")
    if path.is_dir():
        return _load_dir(path, agent)
    if isinstance(obj, list):
        return _load_leaderboard(path, obj, agent)
    if isinstance(obj, dict) and "resolved_ids" in obj:
        return _load_summary(path, obj, agent)
    name = agent or _agent_for_flat(path.resolve().parent.parent)
    records = tuple(
        _rollout_from_report(rep, instance=inst, agent=name, index=0, run_id="run-0", where=path,
                             field=field)
        for inst, rep, field in _reports_in(obj, path.parent.name, path)
    )
    return ImportResult(records, FORMAT, ("one report: one rollout per instance",))


def _detect(path: Path, data: Any) -> bool:
    """A folder with ``report.json`` files, or JSON of one of the SWE-bench shapes.

    A Terminal-Bench ``results.json`` also carries ``resolved_ids``: it is left to the
    ``terminal-bench`` importer (detection has always tried Terminal-Bench first for JSON).
    """
    if path.is_dir():
        return detect_dir(path)
    return detect(data) and not _is_terminal_bench(data)


IMPORTER = FormatImporter(
    FORMAT, "SWE-bench", frozenset({"folder", "json"}), _detect, load,
    (ImporterOption("leaderboard", "in a leaderboards file, the leaderboard to read (e.g. bash-only)."),),
)
"""report.json files, folders of them, run summaries, leaderboard flags."""
