"""Checks on small vendored extracts of public result data: they run on a fresh clone.

The same checks on the full files (outside the repository, ``../shared/data/public-results``)
stay in test_importers.py / studies/test_audit.py / studies/test_rank.py and skip when that folder is absent.
Sources and licenses: tests/fixtures/public/README.md.
"""

from __future__ import annotations

from math import comb
from pathlib import Path

import pytest

from reliabench.errors import InputError
from reliabench.importers import load_foreign
from reliabench.metrics.analysis import score
from reliabench.studies.audit import audit_path

EXTRACTS = Path(__file__).parent / "fixtures" / "public"


def test_swebench_flattened_reports_extract() -> None:
    logs = EXTRACTS / "swe-bench-gemini-3-pro-reports" / "logs"
    res = load_foreign(logs)
    assert res.format == "swebench" and len(res.records) == 12
    assert {r.rollout for r in res.records} == {0}
    assert {r.agent for r in res.records} == {"swe-bench-gemini-3-pro-reports"}
    m = score(res.records, [1], n_resamples=0).agents[0].metrics
    assert m["strict_resolution_rate"].value == pytest.approx(9 / 12)
    # the per-test figure credits the 3 unresolved instances with most of their tests
    assert m["macro_test_pass_rate"].value > m["strict_resolution_rate"].value
    report = audit_path(logs, n_resamples=100)
    assert [f.code for f in report.findings] == ["SINGLE_SUBMISSION"]


def test_tau_bench_rewards_extract_pass_hat_k() -> None:
    path = EXTRACTS / "tau-bench-gpt-4o-airline-rewards.json"
    res = load_foreign(path)
    assert res.format == "tau-bench" and len(res.records) == 200
    rep = score(res.records, [1, 2, 3, 4], n_resamples=0).agents[0].metrics
    counts: dict[str, list[bool]] = {}
    for r in res.records:
        counts.setdefault(r.task_id, []).append(r.passes)
    assert len(counts) == 50 and {len(v) for v in counts.values()} == {4}
    for k in (1, 2, 3, 4):
        expected = sum(comb(sum(v), k) / comb(len(v), k) for v in counts.values()) / len(counts)
        assert rep[f"pass^{k}"].value == pytest.approx(expected)
    assert rep["pass^1"].value == pytest.approx(0.42)  # tau-bench's published gpt-4o airline figure
    assert audit_path(path, n_resamples=100).clean


def test_humaneval_samples_extract_needs_evaluation() -> None:
    with pytest.raises(InputError, match="evaluate_functional_correctness"):
        load_foreign(EXTRACTS / "human-eval-example_samples.jsonl")
