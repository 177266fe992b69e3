"""The HTML report's harness-noise section: what changed on identical code, apart from agent variance.

Shown when a run has re-tests (``reliabench retest RUN`` or ``run --retest R``): the harness
noise rate with its exact interval, each agent's rollout-to-rollout variance split into the
harness's part and the agent's (``reliabench.studies.noise``), the flaky tests and the rollouts
whose verdict flips. Everything in it compares runs of the same code, so none of it is the
agent's doing.
"""

from __future__ import annotations

import html
from collections.abc import Collection

from reliabench.studies.noise import NoiseReport

__all__ = ["MAX_ROWS", "noise_section"]

MAX_ROWS = 50
_BAR_W = 260


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _split_bar(harness: float, agent: float, scale: float) -> str:
    """A stacked bar: harness part, then agent part, of one agent's verdict variance."""
    wh = 0.0 if scale <= 0 else _BAR_W * harness / scale
    wa = 0.0 if scale <= 0 else _BAR_W * agent / scale
    return (f'<svg width="{_BAR_W + 2}" height="14" role="img" aria-label="harness {harness:.3f}, '
            f'agent {agent:.3f}"><rect x="0" y="2" width="{wh:.1f}" height="10" fill="#d62728"/>'
            f'<rect x="{wh:.1f}" y="2" width="{wa:.1f}" height="10" fill="#1f77b4"/></svg>')


def noise_section(report: NoiseReport, *, max_rows: int = MAX_ROWS,
                  simulated: Collection[str] = ()) -> str:
    """The section as a trusted HTML fragment (every value from the run is escaped).

    Agents named in ``simulated`` carry the simulated mark.
    """
    from reliabench.report.marks import agent_label_html

    e = html.escape
    rate = report.noise_rate
    out = [
        '<h2 id="harness-noise">Harness noise (identical code re-tested)</h2>',
        '<p class="note">Each rollout\'s hidden tests were re-run on the files it left, with no agent '
        "call: any change below is the harness's (flaky tests, order, clock, limits), not the "
        "agent's.</p>",
        f"<p><b>Harness noise rate</b>: {_pct(rate.value)} of re-tested rollouts flip their verdict "
        f"[{_pct(rate.ci_low)}, {_pct(rate.ci_high)}] ({round(100 * rate.confidence)}% "
        f"{e(rate.method)} interval); {rate.flaky} of {rate.rollouts} rollouts, {report.reruns} re-runs "
        f"(up to {report.max_reruns} per rollout)"
        + (f", {report.test_errors} re-runs the harness could not run (left out)"
           if report.test_errors else "")
        + ". With few re-runs this is a lower bound on the share of rollouts that can flip.</p>",
    ]
    if report.variance:
        scale = max((v.total for v in report.variance), default=0.0)
        out.append("<h3>Verdict variance: harness part vs agent part</h3><table><tr><th>agent</th>"
                   "<th>tasks</th><th>total</th><th>harness</th><th>agent</th><th>"
                   '<span style="color:#d62728">harness</span> / '
                   '<span style="color:#1f77b4">agent</span></th></tr>')
        for v in report.variance:
            out.append(f"<tr><td>{agent_label_html(v.agent, v.agent in simulated)}</td>"
                       f"<td>{v.tasks}</td><td>{v.total:.3f}</td>"
                       f"<td>{v.harness:.3f}</td><td>{v.agent_part:.3f}</td>"
                       f"<td>{_split_bar(v.harness, v.agent_part, scale)}</td></tr>")
        out.append("</table><p class=\"note\">Per task, the sample variance of the rollouts' verdicts "
                   "(total) splits into the variance of one rollout's verdict over its runs of the same "
                   "code (harness) and the rest (agent: different code from different rollouts), "
                   "averaged over tasks with at least 2 re-tested rollouts.</p>")
    out.append(f"<h3>Flaky tests ({len(report.flaky_tests)})</h3>")
    if report.flaky_tests:
        out.append("<table><tr><th>task</th><th>test</th><th>runs</th><th>flips</th>"
                   "<th>rollouts where it changed</th><th>evidence</th></tr>")
        for f in report.flaky_tests[:max_rows]:
            evidence = (f"reference: {f.reference_flips} flip(s) in {f.reference_runs} runs"
                        if f.evidence == "reference" else f"{f.agents} agents")
            out.append(f"<tr><td>{e(f.task_id)}</td><td>{e(f.test)}</td><td>{f.runs}</td>"
                       f"<td>{f.flips}</td><td>{f.rollouts}</td><td>{e(evidence)}</td></tr>")
        out.append("</table>")
        if len(report.flaky_tests) > max_rows:
            out.append(f'<p class="note">{len(report.flaky_tests) - max_rows} more flaky tests: '
                       "reliabench retest RUN --format json lists them all.</p>")
    else:
        out.append('<p class="note">No test changed its outcome on the reference solution or in '
                   "several agents' code.</p>")
    if report.code_flips:
        out.append(f'<p class="note">{len(report.code_flips)} test(s) flipped only in one agent\'s code '
                   "and never on the reference: not counted as flaky (the code may be the cause): "
                   f"{e(', '.join(f'{f.task_id} :: {f.test}' for f in report.code_flips[:max_rows]))}</p>")
    flipping = [r for r in report.rollouts if r.verdict_flaky]
    out.append(f"<h3>Rollouts whose verdict flips ({len(flipping)})</h3>")
    if flipping:
        out.append("<table><tr><th>task</th><th>agent</th><th>rollout</th>"
                   "<th>verdicts (original first)</th><th>flaky tests</th></tr>")
        for r in flipping[:max_rows]:
            task, agent, rollout = r.key
            verdicts = " ".join("pass" if v else "fail" for v in r.verdicts)
            out.append(f"<tr><td>{e(task)}</td><td>{agent_label_html(agent, agent in simulated)}</td>"
                       f"<td>{rollout}</td><td>{verdicts}</td>"
                       f"<td>{e(', '.join(r.flaky_tests))}</td></tr>")
        out.append("</table>")
        if len(flipping) > max_rows:
            out.append(f'<p class="note">{len(flipping) - max_rows} more flipping rollouts not shown.</p>')
    else:
        out.append('<p class="note">No rollout\'s verdict changed on identical code.</p>')
    out.append('<p class="note">Scoring can allow for it: <code>reliabench score RUN '
               "--exclude-flaky-tests</code> or <code>--flaky-verdict majority</code>.</p>")
    return "\n".join(out)
