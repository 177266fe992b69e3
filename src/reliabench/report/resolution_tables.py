"""Repository tasks' macro vs strict as text and JSON: ``score``'s section for SWE-bench-graded runs.

Renders a :class:`~reliabench.studies.resolution.ResolutionSection` (computed in
:mod:`reliabench.studies.resolution`): one row per agent with its tasks and graded rollouts,
the count of each SWE-bench resolution, the macro hidden-test pass rate and the strict
resolution rate over every rollout, and the FAIL_TO_PASS and PASS_TO_PASS pass rates, each
with its bootstrap interval over tasks. ``table`` is a rich table, ``markdown`` a Markdown
table, JSON the ``repository`` object of ``score --format json``, :func:`resolution_html` the
report page's section.
"""

from __future__ import annotations

import html
import io
import math
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import Estimate
from reliabench.report.marks import agent_label
from reliabench.studies.resolution import FIGURES, ResolutionSection

__all__ = ["render_resolution", "resolution_html", "resolution_to_json"]

_TITLE = ("repository tasks, graded as SWE-bench grades them: macro hidden-test pass rate vs strict "
          "resolution, over every rollout")
_HEADER = ("agent", "tasks", "rollouts", "FULL / PARTIAL / NO", "macro test pass rate", "strict resolution",
           "FAIL_TO_PASS pass rate", "PASS_TO_PASS pass rate")


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def _fmt(e: Estimate, ci: bool) -> str:
    if math.isnan(e.value):
        return "n/a"
    text = f"{e.value:.3f}"
    if ci and not math.isnan(e.ci_low):
        text += f" [{e.ci_low:.3f}, {e.ci_high:.3f}]"
    return text


def _rows(section: ResolutionSection) -> list[list[str]]:
    ci = section.n_resamples > 0
    return [[agent_label(a.agent, a.simulated), str(a.tasks), str(a.rollouts),
             " / ".join(str(n) for n in a.resolutions), *(_fmt(a.figures[f], ci) for f in FIGURES)]
            for a in section.agents]


def _notes(section: ResolutionSection) -> list[str]:
    return [f"{a.agent}: {a.disagreements} rollout(s) where reliabench's verdict (reliability@k's pass) and "
            "SWE-bench's resolved differ (an agent that failed or changed nothing on a checkout that "
            "resolves the task, or every listed test skipped)" for a in section.agents if a.disagreements]


def render_resolution(section: ResolutionSection, fmt: str = "table", *, width: int | None = None,
                      color: bool = False) -> str:
    """The section in ``fmt`` (``table`` or ``markdown``)."""
    pct = round(section.confidence * 100)
    caption = f"value [{pct}% bootstrap CI over tasks]" if section.n_resamples else None
    rows = _rows(section)
    if fmt == "markdown":
        lines = [f"**{_TITLE}**", "", "| " + " | ".join(_HEADER) + " |",
                 "|" + "|".join([":---"] + ["---:"] * (len(_HEADER) - 1)) + "|"]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
        lines.append("")
        if caption:
            lines.append(f"Values with {pct}% percentile-bootstrap CIs over tasks.")
        lines += [f"- note: {n}" for n in _notes(section)]
        return "\n".join(lines).rstrip() + "\n"
    if fmt != "table":
        raise InvalidArgumentError(f"format must be table or markdown, got {fmt!r}")
    console = Console(file=io.StringIO(), width=width or 160, force_terminal=color,
                      color_system="auto" if color else None, highlight=False)
    table = Table(title=_TITLE, box=box.SIMPLE_HEAVY, title_justify="left", caption=caption,
                  caption_justify="left")
    for i, h in enumerate(_HEADER):
        table.add_column(h, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    for note in _notes(section):
        console.print(f"note: {note}", style="dim")
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue()


def resolution_html(section: ResolutionSection) -> str:
    """The report page's section (a heading, the table, the notes; every value escaped)."""
    pct = round(section.confidence * 100)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in _HEADER)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
                   for row in _rows(section))
    notes = "".join(f'<p class="note">{html.escape(n)}</p>' for n in _notes(section))
    caption = f"Values with {pct}% percentile-bootstrap CIs over tasks." if section.n_resamples else ""
    return (f'<h2 id="repository">{html.escape(_TITLE[:1].upper() + _TITLE[1:])}</h2>'
            f"<table><tr>{head}</tr>{rows}</table><p class=\"note\">{caption}</p>{notes}")


def resolution_to_json(section: ResolutionSection) -> dict[str, Any]:
    """The ``repository`` object of ``score --format json``."""
    return {
        "tasks": section.tasks,
        "agents": [
            {
                "agent": a.agent,
                "simulated": a.simulated,
                "tasks": a.tasks,
                "rollouts": a.rollouts,
                "resolutions": dict(zip(("RESOLVED_FULL", "RESOLVED_PARTIAL", "RESOLVED_NO"), a.resolutions,
                                        strict=True)),
                "metrics": {name: {"value": _num(e.value), "ci_low": _num(e.ci_low),
                                   "ci_high": _num(e.ci_high), "tasks": e.tasks}
                            for name, e in a.figures.items()},
                "disagreements": a.disagreements,
            }
            for a in section.agents
        ],
        "ci_method": "percentile bootstrap over tasks",
        "confidence": section.confidence,
    }
