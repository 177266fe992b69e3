"""Exporters: a reliabench run written in another tool's format (Inspect AI eval logs)."""

from reliabench.exporters.inspect_eval import export_inspect

__all__ = ["export_inspect"]
