"""Executors: where a run's rollouts execute.

- :mod:`~reliabench.run.executors.local`: a thread pool on this machine, one sandbox slot per thread.
- :mod:`~reliabench.run.executors.ray`: Ray actors on a local or remote cluster, one per slot.

Either way the driver's calling thread is the store's single writer.
"""

__all__: list[str] = []
