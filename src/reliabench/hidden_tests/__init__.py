"""Hidden tests of a rollout, one outcome per test.

- :mod:`~reliabench.hidden_tests.fresh`: the tests in a fresh sandboxed process (pytest or plain).
- :mod:`~reliabench.hidden_tests.stdio`: stdin/stdout cases, compared outside the sandbox;
  :mod:`~reliabench.hidden_tests.stdio_config` reads their files.
- :mod:`~reliabench.hidden_tests.outcome_pipe`: the outcome channel the parent drains;
  ``_outcome_plugin`` is the pytest plugin inside the sandbox that writes it.

The warm path (:mod:`reliabench.warm`) runs the same tests in forks of a pre-started server.
"""

__all__: list[str] = []
