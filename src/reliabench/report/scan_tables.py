"""Render the security-adjusted figures that ``reliabench scan`` prints after a re-scan.

From a ``ScoreReport`` scored under the run's security policy: reliability@k next to
security-adjusted reliability@k per agent, findings at or above the threshold by CWE, the
passing-but-insecure rollouts by lens, and how the ranking changes at each k.
"""

from __future__ import annotations

import math

from rich.table import Table

from reliabench.metrics.analysis import ScoreReport, ranking_change
from reliabench.report.marks import agent_label, mark_agent
from reliabench.report.terminal import Parts

__all__ = ["security_tables"]


def security_tables(report: ScoreReport) -> Parts:
    """The security-adjusted tables and lines of ``report`` (scored with a security threshold)."""
    ks = report.ks
    table = Table(title=f"security-adjusted reliability@k (threshold {report.threshold})")
    table.add_column("agent", style="bold")
    for k in ks:
        table.add_column(f"reliability@{k}", justify="right")
        table.add_column(f"sec-adj@{k}", justify="right")
    table.add_column("insecure share of passing", justify="right")
    for a in report.agents:
        cells = []
        for k in ks:
            cells += [f"{a.metrics[f'reliability@{k}'].value:.3f}",
                      f"{a.metrics[f'security_adjusted_reliability@{k}'].value:.3f}"]
        share = a.metrics["insecure_share_of_passing"].value
        table.add_row(agent_label(a.agent, a.simulated), *cells,
                      "n/a" if math.isnan(share) else f"{share:.3f}")
    parts: Parts = [table]
    cwes = report.counts.cwe_counts
    all_cwes = sorted({c for d in cwes.values() for c in d}, key=lambda c: (c is None, c or 0))
    if all_cwes:
        ct = Table(title="findings at or above the threshold, by CWE")
        ct.add_column("agent", style="bold")
        for c in all_cwes:
            ct.add_column(f"CWE-{c}" if c is not None else "no CWE", justify="right")
        for a in report.agents:
            ct.add_row(agent_label(a.agent, a.simulated),
                       *(str(cwes.get(a.agent, {}).get(c, 0)) for c in all_cwes))
        parts.append(ct)
    lenses = report.counts.lens_counts
    for a in report.agents:
        flagged = lenses.get(a.agent, {})
        if flagged:
            counts = ", ".join(f"{lens}: {count}" for lens, count in sorted(flagged.items()))
            parts.append(f"{agent_label(a.agent, a.simulated)}: passing but insecure rollouts by lens "
                         f"-> {counts}")
    sim = report.counts.simulated
    for k in ks:
        change = ranking_change(report, k)
        tau = "n/a" if math.isnan(change.kendall_tau) else f"{change.kendall_tau:.3f}"
        swaps = ", ".join(f"{x} > {y} becomes {y} > {x}" for x, y in
                          ((mark_agent(a, sim), mark_agent(b, sim)) for a, b in change.swapped)) or "none"
        parts.append(f"k={k}: Kendall tau between the rankings = {tau}; pairs that swap: {swaps}")
    return parts
