r"""An agent kind plugin: write fixed files into the workspace (a deterministic baseline).

An agents file then says::

    [[agents]]
    name = "baseline"
    kind = "fixed-files"
    files = { "solution.py" = "def solve():\n    return 42\n" }

Entry point, in the plugin's ``pyproject.toml`` (the name is the kind)::

    [project.entry-points."reliabench.agents"]
    fixed-files = "fixed_files_agent:make_fixed_files_agent"
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reliabench.agents import AgentContext, AgentRequest, AgentResult, FieldReader, write_workspace_files

__all__ = ["FixedFilesAgent", "make_fixed_files_agent"]


class FixedFilesAgent:
    """Writes the same files in every rollout; not simulated (it never reads the solution)."""

    kind = "fixed-files"
    simulated = False

    def __init__(self, name: str, files: Mapping[str, str]) -> None:
        self.name = name
        self.files = dict(files)

    def run(self, request: AgentRequest) -> AgentResult:
        """Write the files (paths that leave the workspace are refused)."""
        write_workspace_files(request.workspace, self.files)
        return AgentResult(meta={"files_written": sorted(self.files)})


def make_fixed_files_agent(table: Mapping[str, Any], ctx: AgentContext) -> FixedFilesAgent:
    """The factory: read and check the table (``files``: path -> text, required)."""
    reader = FieldReader(table, ctx, {"files"})
    files = reader.string_table("files")
    if not files:
        raise ctx.error("files", "expected at least one file (path = text)")
    return FixedFilesAgent(reader.required_string("name"), files)
