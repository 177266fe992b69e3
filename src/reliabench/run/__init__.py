"""Running an evaluation: rollouts of agents on a suite, recorded in a store.

- :mod:`~reliabench.run.runner`: ``run_suite``, a run from its plan to its summary.
- :mod:`~reliabench.run.settings`: ``RunSettings``, progress events and the summary.
- :mod:`~reliabench.run.plan`: the jobs, their seeds, per-agent n and the run's identity.
- :mod:`~reliabench.run.rollout`: one rollout (agent, scan, snapshot, diff, hidden tests).
- :mod:`~reliabench.run.draft`: a rollout's record while it is made, and its endings.
- :mod:`~reliabench.run.artifacts`: what a rollout leaves beside its record, written and
  read back (the one module that knows the layout).
- :mod:`~reliabench.run.recording`: artifacts first, then the record in one transaction.
- :mod:`~reliabench.run.expected`: the tests each task is expected to collect.
- :mod:`~reliabench.run.executors`: where rollouts run (threads here, Ray actors).
- :mod:`~reliabench.run.adaptive`: adaptive runs in rounds (design in
  :mod:`reliabench.studies.adaptive`).
- :mod:`~reliabench.run.retest`: re-running the hidden tests on the files rollouts left.
"""

__all__: list[str] = []
