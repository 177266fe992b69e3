"""Studies built on the metrics (simulation lives in :mod:`reliabench.sim`).

- :mod:`~reliabench.studies.audit`: published figures checked against their own rows.
- :mod:`~reliabench.studies.compare`: paired comparisons of agents over tasks.
- :mod:`~reliabench.studies.planning`: how many rollouts a decision needs.
- :mod:`~reliabench.studies.proxy_validity`: does a proxy (test pass rate) rank agents like
  strict resolution.
- :mod:`~reliabench.studies.rank`: leaderboard rank intervals and groups.
- :mod:`~reliabench.studies.noise`: harness noise (flaky tests) apart from agent variance.
- :mod:`~reliabench.studies.adaptive`: the group-sequential design of adaptive runs.
"""

__all__: list[str] = []
