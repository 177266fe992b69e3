"""The measurement: estimators, statistics over tasks, scoring, the security policy, costs.

- :mod:`~reliabench.metrics.estimators`: pass@k, pass^k, the misapplied figure (pure functions).
- :mod:`~reliabench.metrics.stats`: bootstrap and paired statistics over tasks.
- :mod:`~reliabench.metrics.analysis`: records -> per-agent scores (:func:`reliabench.score`).
- :mod:`~reliabench.metrics.security`: severity thresholds and the security policy.
- :mod:`~reliabench.metrics.costs`: tokens, dollars and time per rollout and per pass.
"""

__all__: list[str] = []
