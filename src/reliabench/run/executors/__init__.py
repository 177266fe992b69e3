"""Executors: where a run's rollouts execute (a plugin kind, see :mod:`.base`).

- :mod:`~reliabench.run.executors.base`: the :class:`Executor` protocol, the
  :class:`ExecutionContext` it is handed, and the registry :data:`EXECUTORS`.
- :mod:`~reliabench.run.executors.local`: a thread pool on this machine, one sandbox slot per thread.
- :mod:`~reliabench.run.executors.ray`: Ray actors on a local or remote cluster, one per slot.

Either way the driver's calling thread is the store's single writer.
"""

from reliabench.run.executors.base import BUILTIN_EXECUTORS, EXECUTORS, ExecutionContext, Executor

__all__ = ["BUILTIN_EXECUTORS", "EXECUTORS", "ExecutionContext", "Executor"]
