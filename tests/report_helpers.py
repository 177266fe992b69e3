"""The small real run of tests/fixtures/report, copied where a test may open (and write) it; its page."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from reliabench.metrics.analysis import ScoreReport, score
from reliabench.records import Rollout
from reliabench.report.explorer import render_report_page
from reliabench.report.serve import ReportServer, make_server
from reliabench.runs import open_source
from reliabench.studies.scoring import page_figures, score_result

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "report" / "run"


def copy_run(dest: Path) -> Path:
    """A copy of the fixture run directory under ``dest``."""
    target = dest / "run"
    shutil.copytree(FIXTURE_RUN, target)
    return target


def page_data(page: str) -> dict[str, Any]:
    """The explorer's embedded JSON of a report page."""
    m = re.search(r'<script type="application/json" id="rb-data">(.*?)</script>', page, re.S)
    assert m is not None, "no embedded data"
    data: dict[str, Any] = json.loads(m.group(1))
    return data


def report_page(source: str | Path, ks: Sequence[int] = (1,), *, n_resamples: int = 100,
                **kw: Any) -> str:
    """The report page of ``source`` as ``reliabench report`` renders it (``kw``: the page's options)."""
    with open_source(str(source)) as src:
        retests = src.run.retests() if src.run is not None else ()
        result = score_result(src.records, ks, n_resamples=n_resamples, retests=retests)
        return render_report_page(result.records, result.report,
                                  figures=page_figures(result.report, result.records), source=str(source),
                                  source_format=src.format, run=src.run,
                                  noise=None if result.noise is None else result.noise.report, **kw)


@contextlib.contextmanager
def served(run_dir: Path, ks: Sequence[int] = (1,), **kw: Any) -> Iterator[ReportServer]:
    """``reliabench view RUN`` in a background thread (``kw``: ``make_server``'s options)."""
    with open_source(str(run_dir)) as src:
        assert src.run is not None
        rep = score(src.records, ks, n_resamples=0)
        server = make_server(src.run, src.records, rep, page_figures(rep, src.records), port=0, **kw)
        try:
            yield server
        finally:
            server.close()


def records_page(records: Sequence[Rollout], report: ScoreReport, **kw: Any) -> str:
    """The report page of records that come from no run (``kw``: the page's options, ``source``)."""
    return render_report_page(records, report, figures=page_figures(report, records), **kw)


def add_flaky_retests(run_dir: Path, reps: int = 3) -> tuple[str, str, int]:
    """Store re-tests of every rollout of ``run_dir``; the first functional test of one passing
    rollout (returned) fails in the even re-runs and on the reference: a flaky test."""
    from reliabench.store import REFERENCE_AGENT, RetestRow, RunStore

    with RunStore.open_existing(run_dir) as store:
        records = store.rollouts()
        target = next(r for r in records if r.passes and any(not t.security for t in r.tests))
        rows: list[RetestRow] = []
        for r in records:
            for rep in range(reps):
                tests: list[list[Any]] = [[t.name, t.outcome, t.security] for t in r.tests]
                if r.key == target.key and rep % 2 == 0:
                    next(t for t in tests if not t[2])[1] = "failed"
                rows.append({"task_id": r.task_id, "agent": r.agent, "rollout": r.rollout, "rep": rep,
                             "status": "completed", "tests": tests, "order_seed": rep, "seconds": 0.1,
                             "reason": None})
                if r.key == target.key:
                    rows.append({**rows[-1], "agent": REFERENCE_AGENT, "rollout": 0})
        store.add_retests(rows)
    return target.key


def make_adaptive(run_dir: Path, *, half_width: float = 0.5, max_n: int = 3) -> None:
    """Write the ``adaptive.json`` of a one-round adaptive run stopped at its first look (n = 3 = max_n)."""
    from reliabench.runs.adaptive_file import ADAPTIVE_FILE, adaptive_document
    from reliabench.store import read_records
    from reliabench.studies.adaptive import AdaptiveDesign, evaluate
    from reliabench.studies.adaptive_score import counts_at, estimates_for_run

    records = read_records(run_dir)
    tasks = sorted({r.task_id for r in records})
    names = sorted({r.agent for r in records})
    design = AdaptiveDesign(first=3, max_n=max_n, target_half_width=half_width)
    history = [{a: 3 for a in names}]
    step = evaluate(design, counts_at(records, tasks, history[0]), history, counts_at(records, tasks, history[0]))
    assert not step.advance, "the fixture run must stop at its first look"
    est = estimates_for_run(records, tasks, design, history, 0)
    doc = adaptive_document(design, history, [step], len(tasks), names, est, 0)
    (run_dir / ADAPTIVE_FILE).write_text(json.dumps(doc, indent=2, sort_keys=True), encoding="utf-8")
