r"""Tables for papers: the leaderboard with CIs and the per-task table, as Markdown, LaTeX or CSV.

Two tables, the same in every format:

* the *leaderboard*: one row per agent (best reliability@k first, k = the largest computed),
  with reliability@k, pass^k and (with security data) security-adjusted reliability@k at each
  k, each as ``value [low, high]`` (and ``(m excl.)`` when m tasks have fewer than k rollouts);
* the *per-task table*: one row per task, one column per agent, ``c/n`` (passing rollouts
  over rollouts).

With ``groups`` (``report --by language|tag``) a third table follows: the figures per group of
tasks (:mod:`reliabench.report.group_tables`; CSV rows with ``table = by_<by>`` and the group
in the ``task`` column).

Simulated agents keep their ``[SIMULATED]`` mark. LaTeX output uses ``booktabs`` rules and
escapes the special characters ``\ & % $ # _ { } ~ ^``; CSV is long format (one row per
agent and figure, then one per task and agent) for spreadsheets and plotting.

Examples:
    >>> latex_escape("50% of a_b & {c} ~ #1")
    '50\\% of a\\_b \\& \\{c\\} \\textasciitilde{} \\#1'
"""

from __future__ import annotations

import csv
import io
import math
from typing import Final

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import AgentSummary, ScoreReport
from reliabench.report.group_tables import group_csv_rows, group_grid, group_latex
from reliabench.report.marks import agent_label, mark_agent
from reliabench.report.numbers import estimate_cell
from reliabench.studies.scoring import GroupScores

__all__ = ["TABLE_FORMATS", "latex_escape", "render_tables"]

TABLE_FORMATS: Final = ("markdown", "latex", "csv")
_LATEX: Final = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                 "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters."""
    return "".join(_LATEX.get(ch, ch) for ch in text)


def _columns(report: ScoreReport) -> list[tuple[str, str]]:
    """(header, metric key) of the leaderboard."""
    cols = []
    for k in report.ks:
        cols.append((f"reliability@{k}", f"reliability@{k}"))
    for k in report.ks:
        cols.append((f"pass^{k}", f"pass^{k}"))
    if report.security:
        for k in report.ks:
            cols.append((f"sec-adj reliability@{k}", f"security_adjusted_reliability@{k}"))
    return cols


def _ranked(report: ScoreReport) -> list[AgentSummary]:
    """Agents by reliability@k at the largest k any agent has a value for, best first."""
    defined = [k for k in report.ks
               if any(not math.isnan(a.metrics[f"reliability@{k}"].value) for a in report.agents)]
    key = f"reliability@{(defined or list(report.ks))[-1]}"

    def order(a: AgentSummary) -> tuple[float, str]:
        v = a.metrics[key].value
        return (-v if not math.isnan(v) else math.inf, a.agent)

    return sorted(report.agents, key=order)


def _label(a: AgentSummary) -> str:
    return agent_label(a.agent, a.simulated)


def _n_text(a: AgentSummary) -> str:
    return str(a.min_n) if a.min_n == a.max_n else f"{a.min_n}-{a.max_n}"


def _leaderboard(report: ScoreReport) -> tuple[list[str], list[list[str]]]:
    ci = report.n_resamples > 0
    cols = _columns(report)
    head = ["agent", "tasks", "n", *(h for h, _ in cols)]
    rows = [[_label(a), str(a.tasks), _n_text(a), *(estimate_cell(a.metrics[m], ci) for _, m in cols)]
            for a in _ranked(report)]
    return head, rows


def _per_task(report: ScoreReport) -> tuple[list[str], list[list[str]]]:
    t = report.counts
    agents = list(t.agents)
    head = ["task", *(mark_agent(a, t.simulated) for a in agents)]
    rows = []
    for i, task in enumerate(t.tasks):
        rows.append([task, *(f"{t.c[i, j]}/{t.n[i, j]}" if t.n[i, j] else "-" for j in range(len(agents)))])
    return head, rows


def _caption(report: ScoreReport) -> str:
    pct = round(report.confidence * 100)
    text = ("reliability@k over n independent rollouts per task (mean over tasks)")
    if report.n_resamples:
        text += (f", {pct}% percentile-bootstrap CIs over tasks ({report.n_resamples} resamples, "
                 f"seed {report.seed})")
    if report.security:
        text += f"; security threshold {report.threshold}"
    return text


def _markdown(report: ScoreReport, title: str | None) -> str:
    out: list[str] = []
    if title:
        out += [f"## {title}", ""]
    for name, (head, rows) in (("Leaderboard", _leaderboard(report)),
                               ("Per task: passing rollouts / rollouts (c/n)", _per_task(report))):
        out += [f"**{name}**", "", "| " + " | ".join(head) + " |",
                "|" + "|".join([":---"] + ["---:"] * (len(head) - 1)) + "|"]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        out.append("")
    out.append(_caption(report) + ".")
    return "\n".join(out) + "\n"


def _latex(report: ScoreReport, title: str | None) -> str:
    out: list[str] = ["% generated by reliabench; needs \\usepackage{booktabs}"]
    tables = (("Leaderboard. " + _caption(report) + ".", "tab:reliabench-leaderboard", _leaderboard(report)),
              ("Passing rollouts / rollouts (c/n) per task and agent.", "tab:reliabench-per-task",
               _per_task(report)))
    for caption, label, (head, rows) in tables:
        full = f"{title}: {caption}" if title else caption
        out += ["\\begin{table}[t]", "\\centering", "\\small",
                "\\begin{tabular}{l" + "r" * (len(head) - 1) + "}", "\\toprule",
                " & ".join(latex_escape(h) for h in head) + " \\\\", "\\midrule"]
        out += [" & ".join(latex_escape(c) for c in row) + " \\\\" for row in rows]
        out += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{latex_escape(full)}}}",
                f"\\label{{{label}}}", "\\end{table}", ""]
    return "\n".join(out)


def _csv(report: ScoreReport) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["table", "agent", "simulated", "task", "metric", "value", "ci_low", "ci_high", "c", "n"])

    def num(x: float) -> str:
        return "" if math.isnan(x) else repr(round(x, 6))

    for a in _ranked(report):
        for _, m in _columns(report):
            e = a.metrics[m]
            w.writerow(["leaderboard", a.agent, a.simulated, "", m, num(e.value), num(e.ci_low),
                        num(e.ci_high), "", ""])
    t = report.counts
    for i, task in enumerate(t.tasks):
        for j, agent in enumerate(t.agents):
            if t.n[i, j]:
                w.writerow(["per_task", agent, agent in t.simulated, task, "c/n",
                            num(float(t.c[i, j] / t.n[i, j])), "", "", int(t.c[i, j]), int(t.n[i, j])])
    return buf.getvalue()


def render_tables(report: ScoreReport, fmt: str, *, title: str | None = None,
                  groups: GroupScores | None = None) -> str:
    """The leaderboard and per-task tables of ``report`` in ``fmt`` (markdown, latex or csv).

    ``groups``: the figures per group of tasks follow, as a third table.

    Raises:
        InvalidArgumentError: for another format.
    """
    if fmt == "markdown":
        text = _markdown(report, title)
        if groups is not None:
            head_title, head, rows = group_grid(groups)
            body = ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
            align = [":---", "---:", "---:", ":---"] + ["---:"] * (len(head) - 4)
            text += "\n".join(["", f"**{head_title}**", "", "| " + " | ".join(head) + " |",
                               "|" + "|".join(align) + "|", *body, ""])
        return text
    if fmt == "latex":
        text = _latex(report, title)
        return text if groups is None else text + "\n".join(group_latex(groups, latex_escape))
    if fmt == "csv":
        text = _csv(report)
        if groups is None:
            return text
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        for row in group_csv_rows(groups):
            w.writerow([f"by_{groups.by}", row["agent"], row["simulated"], row["group"], row["metric"],
                        "" if row["value"] is None else repr(round(row["value"], 6)),
                        "" if row["ci_low"] is None else repr(round(row["ci_low"], 6)),
                        "" if row["ci_high"] is None else repr(round(row["ci_high"], 6)), "", ""])
        return text + buf.getvalue()
    raise InvalidArgumentError(f"format must be one of {', '.join(TABLE_FORMATS)}, got {fmt!r}")
