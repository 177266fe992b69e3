"""The [SIMULATED] mark (reliabench.report.marks): written here only, from what the studies say."""

from __future__ import annotations

from reliabench.metrics.analysis import score
from reliabench.records import Rollout
from reliabench.report.marks import (
    SIMULATED_MARK,
    agent_label_html,
    fit_label,
    marked_agents_note,
    with_simulated_note,
)
from reliabench.report.score_render import score_to_json
from reliabench.studies.rank import rank_agents


def test_the_note_follows_the_notes_only_when_an_agent_is_simulated() -> None:
    assert with_simulated_note(["a"], set()) == ("a",)
    assert with_simulated_note(["a"], {"z", "b"}) == ("a", marked_agents_note(["b", "z"]))


def test_the_computations_say_who_is_simulated_and_the_renderers_mark_them() -> None:
    recs = [Rollout(f"t{t}", a, i, verdict=(t + i) % 2 == 0, simulated=a == "sim")
            for t in range(3) for a in ("sim", "real") for i in range(2)]
    rep = score(recs, [1], n_resamples=0)
    assert rep.counts.simulated == {"sim"} and not any(SIMULATED_MARK in n for n in rep.notes)
    assert score_to_json(rep)["notes"][-1] == marked_agents_note(["sim"])
    ranking = rank_agents(recs, 1, n_resamples=20)
    assert [a.simulated for a in ranking.agents if a.agent == "sim"] == [True]
    assert not any("simulated" in n for n in ranking.notes)


def test_labels_keep_the_mark_whole() -> None:
    assert fit_label("long-name [SIMULATED]", 4) == "long [SIMULATED]"
    assert agent_label_html("<a>", True) == '&lt;a&gt; <span class="sim">[SIMULATED]</span>'
