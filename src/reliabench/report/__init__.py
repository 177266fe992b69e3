"""Renderers of analysis results: terminal tables, JSON, CSV and Markdown."""

from reliabench.report.score_render import FORMATS, render_score, score_to_json

__all__ = ["FORMATS", "render_score", "score_to_json"]
