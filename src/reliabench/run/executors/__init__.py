"""Executors: where a run's rollouts execute (a plugin kind).

- :mod:`~reliabench.run.executors.base`: the :class:`Executor` protocol and the registry
  :data:`EXECUTORS` (entry-point group ``reliabench.executors``).
- :mod:`~reliabench.run.executors.context`: the ``ExecutionContext`` an executor is handed
  (import it from there: it needs the run's modules, which need the registry).
- :mod:`~reliabench.run.executors.local`: a thread pool on this machine, one sandbox slot per thread.
- :mod:`~reliabench.run.executors.ray`: Ray actors on a local or remote cluster, one per slot.

Either way the driver's calling thread is the store's single writer.
"""

from reliabench.run.executors.base import BUILTIN_EXECUTORS, EXECUTORS, Executor

__all__ = ["BUILTIN_EXECUTORS", "EXECUTORS", "Executor"]
