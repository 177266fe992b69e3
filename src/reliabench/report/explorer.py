"""The report page with its rollout explorer: one self-contained HTML file, no network.

``render_report_page`` builds on ``report.html.render_html`` (the figures and tables of
``score --html``) and adds: the task x agent heatmap, reliability@k for every k, the
single-rollout proxy scatter, cost and time against reliability, provenance, and the explorer:
a heatmap cell opens the n rollouts of that pair and the task's rollouts side by side (which
tests fail in which rollouts); a rollout opens its status, isolation, duration and cost,
per-test outcomes, the scanner findings, security tests, tamper and forgery flags and -- from
a run directory's artifacts -- the failure message of each failed test, the diff against the
starter with the findings on their lines, and the agent's log or transcript.

Everything it shows is computed before it is called (``studies.scoring``: the score, its
noise section, the figures) or read through the run's :class:`~reliabench.runs.RunDirectory`
(artifacts, run information): this module only renders.

The data is embedded as JSON in a ``<script type="application/json">`` element (``<``, ``>``
and ``&`` escaped, so no string in it can close the element); the page's script and styles
are inline; nothing is fetched. The file is bounded: each rollout's detail is cut to
``DetailLimits`` and the details together to ``max_bytes``; what was cut is said on the page.
``reliabench view`` serves the same page with ``live=True``: details are then fetched from
the local server (``rollout?id=...``) instead of being embedded.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from reliabench.errors import InvalidArgumentError
from reliabench.meta_keys import FORGED_OUTCOMES
from reliabench.metrics.analysis import ScoreReport
from reliabench.records import Rollout, RolloutStatus, TestOutcomeStatus
from reliabench.report.figures import cost_figures, proxy_scatter, reliability_curve
from reliabench.report.group_tables import group_section_html
from reliabench.report.heatmap import heatmap_html
from reliabench.report.html import render_html
from reliabench.report.marks import mark_agent
from reliabench.report.provenance import Provenance, collect_provenance
from reliabench.report.resolution_tables import resolution_html
from reliabench.report.rollout_detail import DetailLimits, build_detail, rollout_id

if TYPE_CHECKING:
    from reliabench.runs import RunDirectory
    from reliabench.studies.noise import NoiseReport
    from reliabench.studies.resolution import ResolutionSection
    from reliabench.studies.scoring import GroupScores, PageFigures

__all__ = [
    "DEFAULT_MAX_BYTES",
    "embed_json",
    "render_report_page",
    "rollout_detail_json",
    "write_report_page",
]

DEFAULT_MAX_BYTES: Final = 20_000_000


def _static(name: str) -> str:
    """An inline asset of the page (package data under ``report/static/``)."""
    from importlib.resources import files

    text = files("reliabench.report").joinpath("static").joinpath(name).read_text(encoding="utf-8")
    return text.replace("</", "<\\/") if name.endswith(".js") else text


def embed_json(data: Any) -> str:
    r"""JSON that is safe inside ``<script type="application/json">``: no ``<``, ``>``, ``&``.

    Examples:
        >>> embed_json({"x": "</script><b>"})
        '{"x": "\\u003c/script\\u003e\\u003cb\\u003e"}'
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ": "), allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


_OUTCOME_CODE: Final[dict[TestOutcomeStatus, str]] = {"passed": "P", "failed": "F", "error": "E",
                                                      "skipped": "S"}
_CODE_STATUSES: Final[frozenset[RolloutStatus]] = frozenset({"completed", "no_change"})
"""Statuses whose workspace diff is the agent's finished code (grouped by identical code)."""


def _diff_hash(run: RunDirectory | None, r: Rollout) -> str | None:
    if run is None:
        return None
    data = run.artifacts(r.task_id, r.agent, r.rollout).diff_bytes()
    return None if data is None else hashlib.sha256(data).hexdigest()[:16]


def _task_views(records: Sequence[Rollout],
                run: RunDirectory | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per task: its tests and which rollouts fail them; per rollout: a one-line summary."""
    tasks: dict[str, Any] = {}
    summaries: dict[str, Any] = {}
    by_task: dict[str, list[Rollout]] = {}
    for r in records:
        by_task.setdefault(r.task_id, []).append(r)
    for task, recs in sorted(by_task.items()):
        names: list[str] = []
        security: set[str] = set()
        for r in recs:
            for t in r.tests or ():
                if t.name not in names:
                    names.append(t.name)
                if t.security:
                    security.add(t.name)
        col = {n: i for i, n in enumerate(names)}
        same_code: dict[str, list[Rollout]] = {}
        agents: dict[str, list[str]] = {}
        for r in sorted(recs, key=lambda x: (x.agent, x.rollout)):
            rid = rollout_id(r)
            agents.setdefault(r.agent, []).append(rid)
            codes = ["-"] * len(names)
            for t in r.tests or ():
                codes[col[t.name]] = _OUTCOME_CODE[t.outcome]
            dh = _diff_hash(run, r)
            if dh is not None and r.status in _CODE_STATUSES:
                same_code.setdefault(dh, []).append(r)
            summaries[rid] = {
                "task": r.task_id, "agent": r.agent, "rollout": r.rollout, "status": r.status,
                "passes": r.passes, "np": r.n_tests_passed, "nt": r.n_tests,
                "seconds": r.cost.seconds if r.cost else None, "isolation": r.isolation,
                "findings": len(r.findings), "tamper": r.tamper_suspected,
                "forged": bool(r.meta.get(FORGED_OUTCOMES)), "codes": "".join(codes),
                "code": dh, "simulated": r.simulated,
            }
        flaky_tests = set()
        for group in same_code.values():  # identical code, different outcome: the test is flaky
            for name in names:
                outcomes = {t.outcome for r in group for t in r.tests or () if t.name == name}
                outcomes.discard("skipped")
                if len(outcomes) > 1:
                    flaky_tests.add(name)
        tasks[task] = {"tests": names, "security": sorted(security), "agents": agents,
                       "flaky_tests": sorted(flaky_tests)}
    return tasks, summaries


def rollout_detail_json(r: Rollout, run: RunDirectory | None, limits: DetailLimits) -> dict[str, Any]:
    """The explorer's JSON for one rollout (used by the page and by ``reliabench view``)."""
    stored = None if run is None else run.artifacts(r.task_id, r.agent, r.rollout)
    return build_detail(r, stored, limits).to_json()


def _provenance_html(p: Provenance) -> str:
    def row(label: str, value: Any) -> str:
        if value in (None, "", [], {}):
            return ""
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
        cell = f"<pre>{html.escape(text)}</pre>" if "\n" in text else html.escape(text)
        return f"<tr><th>{html.escape(label)}</th><td>{cell}</td></tr>"

    suite = p.suite
    suite_text = " ".join(str(x) for x in (suite.get("name"), suite.get("version")) if x)
    if suite.get("hash"):
        suite_text += f" (hash {suite['hash']})"
    rows = [
        row("source", f"{p.source} ({p.source_format})"),
        row("suite", suite_text),
        row("agents", ", ".join(mark_agent(a, p.simulated_agents) for a in p.agents)),
        row("simulated agents", ", ".join(p.simulated_agents) + " (not real models)"
            if p.simulated_agents else ""),
        row("agents' configuration (secrets masked)", p.agents_config),
        row("agents file hash", p.agents_config_hash),
        row("sandbox asked for", p.sandbox),
        row("isolation of the rollouts", ", ".join(f"{k}: {v}" for k, v in p.isolation.items())),
        row("run seed", None if p.run_seed is None else str(p.run_seed)),
        row("per-rollout seeds", "recorded in each rollout (derived from run seed, task, agent, "
            "rollout)" if p.rollout_seeds else "not recorded"),
        row("command line (secrets masked)", " ".join(p.command_line) if p.command_line else
            ("not recorded (runs made before reliabench stored it)" if p.source_format == "run" else "")),
        row("run settings", dict(p.settings) or None),
        row("package versions of the run", dict(p.packages) or None),
        row("reliabench of the run", p.run_reliabench_version),
        row("reliabench of this report", p.reliabench_version),
    ]
    return ('<h2 id="provenance">Provenance</h2><table class="prov">' + "".join(rows) + "</table>")


def render_report_page(
    records: Sequence[Rollout],
    report: ScoreReport,
    *,
    figures: PageFigures,
    source: str,
    source_format: str = "jsonl",
    run: RunDirectory | None = None,
    noise: NoiseReport | None = None,
    title: str | None = None,
    limits: DetailLimits | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    live: bool = False,
    notes: Sequence[str] = (),
    groups: GroupScores | None = None,
    repository: ResolutionSection | None = None,
) -> str:
    """The full report page (``reliabench report``, ``score --html`` and ``reliabench view``).

    Args:
        records: The records ``report`` was computed from.
        report: ``analysis.score`` of the records.
        figures: ``studies.scoring.page_figures(report, records)``: rank intervals, the curve,
            the proxy and the cost figures.
        source: What the records were read from (shown in the page).
        source_format: ``run`` or an importer's format name.
        run: The run directory, for the explorer's diffs, logs and failure messages and for
            provenance (None: what the records carry).
        noise: The run's harness noise (``studies.noise``), for its section (None: none).
        title: Page title (default: ``reliabench: SOURCE``).
        limits: Bounds per rollout.
        max_bytes: Bound on the embedded rollout details together; rollouts past it keep
            their summary and the page says how many lost their detail.
        live: Embed no details; the page fetches them from ``reliabench view``'s server.
        notes: Extra notes shown at the top (e.g. an importer's).
        groups: The figures per group of tasks (``--by``), a section before the other figures.
        repository: Macro vs strict on repository tasks (``studies.resolution``), for its
            section (None: none).

    Raises:
        InvalidArgumentError: for a ``max_bytes`` below 1.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise InvalidArgumentError(f"max_bytes must be an integer >= 1, got {max_bytes!r}")
    lim = limits or DetailLimits()
    recs = list(records)
    explorer = True  # records alone give outcomes, findings, flags; a run adds diffs, logs, messages
    tasks, summaries = _task_views(recs, run)
    details: dict[str, Any] = {}
    omitted = 0
    cut_notes: list[str] = []
    remedy = (f"open them with `reliabench view {source}`" if run is not None
              else "raise --max-bytes")
    if not live:
        used = 0
        # failing, insecure and flagged rollouts first: they are the ones a reader opens
        order = sorted(recs, key=lambda r: (r.passes and not r.findings and not r.tamper_suspected,
                                            r.task_id, r.agent, r.rollout))
        for r in order:
            d = rollout_detail_json(r, run, lim)
            size = len(embed_json(d))
            if used + size > max_bytes:
                omitted += 1
                continue
            used += size
            details[d["id"]] = d
        if omitted:
            cut_notes.append(f"{omitted} of {len(recs)} rollouts have no detail in this file (the page "
                             f"is bounded to {max_bytes} bytes of details): {remedy}.")
    data = {
        "version": 1, "live": live, "explorer": explorer, "tasks": tasks, "rollouts": summaries,
        "details": details, "omitted": omitted, "limits": {
            "log_chars": lim.log_chars, "diff_lines": lim.diff_lines,
            "message_chars": lim.message_chars, "messages": lim.messages},
        "source": source, "remedy": remedy,
    }
    prov = collect_provenance(recs, source, source_format, None if run is None else run.info())
    lead = [
        '<nav class="toc"><a href="#heatmap">heatmap</a> <a href="#explorer">explorer</a> '
        '<a href="#more-figures">more figures</a> <a href="#provenance">provenance</a></nav>',
    ]
    for note in [*notes, *cut_notes]:
        lead.append(f'<p class="note cut">{html.escape(note)}</p>')
    lead.append(heatmap_html(report.counts, clickable=explorer))
    lead.append('<h2 id="explorer">Explorer</h2>')
    if run is None:
        lead.append('<p class="note">This report was made from '
                    f"{html.escape(source_format)} records: the explorer shows each rollout's status, "
                    "tests, findings and flags; diffs, logs and failure messages come from a run "
                    "directory's artifacts (reliabench report RUN).</p>")
    lead.append('<div id="rb-explorer"><p class="note">Click a heatmap cell to see that pair\'s '
                "rollouts.</p></div>")
    extra = [
        *([] if groups is None else [group_section_html(groups)]),
        *([] if repository is None else [resolution_html(repository)]),
        '<h2 id="more-figures">Reliability for every k, the single-rollout proxy, cost</h2>',
        reliability_curve(report, figures.curve),
        proxy_scatter(report, figures.proxy),
        cost_figures(report, figures.costs, report.ks[0]),
        _provenance_html(prov),
        f"<style>{_static('explorer.css')}</style>",
        f'<script type="application/json" id="rb-data">{embed_json(data)}</script>',
        f"<script>{_static('explorer.js')}</script>",
    ]
    return render_html(report, title=title or f"reliabench: {source}", lead_sections=lead,
                       extra_sections=extra, noise=noise, ranking=figures.ranking)


def write_report_page(path: str | Path, text: str) -> Path:
    """Write a page atomically and return its path.

    A device such as ``/dev/null`` is written to, never replaced (see
    :mod:`reliabench.files.output`).
    """
    from reliabench.files.output import open_output

    dest = Path(path)
    with open_output(dest) as fh:
        fh.write(text)
    return dest
