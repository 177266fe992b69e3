"""What ``reliabench simulate`` prints: the score report, the proxy study and any sweep.

Every agent of a synthetic benchmark is simulated: the score table marks each one (see
``report.marks``), and the HTML report's title says so.
"""

from __future__ import annotations

import json
from typing import Final

from reliabench.report.marks import SIMULATED
from reliabench.report.proxy_tables import render_proxy
from reliabench.report.score_render import render_score, score_to_json
from reliabench.sim.sweep_tables import render_sweep, sweep_to_json
from reliabench.sim.synthetic import GENERATOR, SimulationConfig, SimulationResult, SweepResult

__all__ = ["HTML_TITLE", "render_simulation"]

HTML_TITLE: Final = f"reliabench simulate: synthetic benchmark ({SIMULATED} agents)"


def render_simulation(result: SimulationResult, config: SimulationConfig, swept: SweepResult | None,
                      fmt: str, *, color: bool = False) -> str:
    """The score report, then the proxy study, then the sweep (if any), in one format.

    Args:
        result: The simulation (benchmark, score report, proxy study).
        config: Its configuration (written into the JSON document).
        swept: The sweep, or None.
        fmt: ``table``, ``markdown``, ``csv`` or ``json`` (one document with every part).
        color: Colour the score table (a terminal).
    """
    if fmt == "json":
        doc: dict[str, object] = {
            "generator": GENERATOR,
            "seed": result.benchmark.seed,
            "config": config.to_dict(),
            "score": score_to_json(result.report),
            "proxy": result.proxy.to_dict(),
        }
        if swept is not None:
            doc["sweep"] = sweep_to_json(swept)
        return json.dumps(doc, indent=2) + "\n"
    parts = [render_score(result.report, fmt, color=color),
             render_proxy(result.proxy, fmt, result.report.counts.simulated)]
    if swept is not None:
        parts.append(render_sweep(swept, fmt))
    return "\n".join(parts)
