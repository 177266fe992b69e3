"""Every renderer: terminal tables, JSON, CSV, Markdown, LaTeX, the HTML report and its figures.

Studies and metrics compute; the modules here, each named for what it renders, write what
users see (see docs/report.md, "Where the rendering lives"). Simulated agents are marked
through :mod:`reliabench.report.marks`, the one place the ``[SIMULATED]`` mark is written.
"""

from reliabench.report.score_render import FORMATS, render_score, score_to_json

__all__ = ["FORMATS", "render_score", "score_to_json"]
