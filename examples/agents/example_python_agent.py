"""An example ``python`` agent (see python.toml next to this file and docs/agents.md).

It does not solve anything: it adds a banner line to every ``.py`` file of the workspace,
which is enough to show the calling convention.
"""

from __future__ import annotations

from reliabench.agents import AgentRequest, AgentResult


def solve(request: AgentRequest, banner: str = "# edited") -> AgentResult:
    """Edit ``request.workspace`` in place; return a result (``None`` also means completed)."""
    touched = []
    for path in sorted(request.workspace.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not text.startswith(banner):
            path.write_text(f"{banner}\n{text}", encoding="utf-8")
            touched.append(path.relative_to(request.workspace).as_posix())
    return AgentResult(status="completed", log=f"edited {len(touched)} file(s): {touched}",
                       meta={"seed": request.seed})
