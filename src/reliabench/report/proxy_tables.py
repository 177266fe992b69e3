"""Render a proxy study (``studies.proxy_validity``) as a table, Markdown, CSV or JSON.

``render_proxy`` renders the study alone; ``render_proxy_output`` is what ``reliabench proxy``
prints: the same, with the simulated agents of the data marked (a note under the tables and
``simulated_agents`` in the JSON document).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from typing import Final

from reliabench.errors import InvalidArgumentError
from reliabench.report.marks import mark_agent, simulated_agents_note
from reliabench.report.text_tables import csv_lines, fixed, markdown_table, plain_table
from reliabench.studies.proxy_validity import ProxyStudy

__all__ = ["FORMATS", "render_proxy", "render_proxy_output"]

FORMATS: Final = ("table", "json", "csv", "markdown")


def render_proxy(study: ProxyStudy, fmt: str = "table", simulated: Collection[str] = ()) -> str:
    """Render a proxy study as ``table`` (plain text), ``markdown``, ``json`` or ``csv``.

    ``simulated``: the data's simulated agents, marked in the per-agent table.

    Raises:
        InvalidArgumentError: for an unknown format.
    """
    if fmt not in FORMATS:
        raise InvalidArgumentError(f"fmt must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "json":
        return json.dumps(study.to_dict(), indent=2)
    pct = round(study.confidence * 100)
    head = ["proxy", "level", "statistic", "value", f"{pct}% CI low", f"{pct}% CI high",
            "p-value", "units"]
    body = [[c.proxy, c.level, c.statistic, fixed(c.value), fixed(c.ci_low), fixed(c.ci_high),
             "nan" if math.isnan(c.pvalue) else f"{c.pvalue:.2g}", str(c.units)]
            for c in study.correlations]
    if fmt == "csv":
        return "\n".join(csv_lines(head, body)) + "\n"
    title = (f"Proxy study: single-rollout proxies vs reliability@{study.k} over repeated runs "
             f"({study.pairs} pairs, {len(study.agents)} agents, {study.tasks} tasks; "
             f"bootstrap over tasks, {study.n_resamples} resamples, seed {study.seed})")
    agent_head = ["agent", f"reliability@{study.k}", "first_fraction", "first_verdict", "tasks"]
    agent_body = [[mark_agent(a.agent, simulated), fixed(a.reliability), fixed(a.first_fraction),
                   fixed(a.first_verdict), str(a.tasks)] for a in study.agents]
    if fmt == "markdown":
        out = [f"**{title}**", "", *markdown_table(head, body), "", *markdown_table(agent_head, agent_body)]
    else:
        out = [title, "", *plain_table(head, body, 3), "", *plain_table(agent_head, agent_body, 1)]
    out += [f"note: {n}" for n in study.notes]
    return "\n".join(out) + "\n"


def render_proxy_output(study: ProxyStudy, fmt: str, simulated: Sequence[str]) -> str:
    """What ``reliabench proxy`` prints: ``render_proxy`` with the simulated agents marked.

    Args:
        study: The proxy study.
        fmt: ``table``, ``markdown``, ``json`` or ``csv``.
        simulated: The data's simulated agents, sorted (JSON: ``simulated_agents``, always
            present; table and Markdown: a note when there are any; the CSV rows are
            correlations, not agents, and stay as they are: ``reliabench proxy`` prints the
            note on standard error).
    """
    text = render_proxy(study, fmt, simulated)
    if fmt == "json":
        doc = json.loads(text)
        doc["simulated_agents"] = list(simulated)
        return json.dumps(doc, indent=2) + "\n"
    if simulated and fmt != "csv":
        text += f"\nnote: {simulated_agents_note(simulated)}\n"
    return text
