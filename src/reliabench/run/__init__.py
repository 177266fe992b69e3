"""Running an evaluation: rollouts of agents on a suite, recorded in a store.

- :mod:`~reliabench.run.runner`: jobs and seeds, one rollout, the local and Ray executors.
- :mod:`~reliabench.run.artifacts`: what a rollout leaves (diff, files, logs) in the store.
- :mod:`~reliabench.run.adaptive`: adaptive runs in rounds (design in
  :mod:`reliabench.studies.adaptive`).
- :mod:`~reliabench.run.retest`: re-running the hidden tests on the files rollouts left.
"""

__all__: list[str] = []
