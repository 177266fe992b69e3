"""Warm sandboxed test workers: a long-lived server per worker slot, one jailed fork per rollout.

Modules: :mod:`~reliabench.warm.client` (the servers, one per slot),
:mod:`~reliabench.warm.server` (the server process and its three-process fork per rollout),
:mod:`~reliabench.warm.jail` (namespaces, the minimal root, the privilege drop),
:mod:`~reliabench.warm.plain_runner` (the lean runner for ``test_runner = "plain"``),
:mod:`~reliabench.warm.plain_tests` (expected plain tests from the source, on the host),
:mod:`~reliabench.warm.hidden` (the hidden-test runner of :mod:`reliabench.hidden_tests.layer`; the
availability probe), :mod:`~reliabench.warm.backend` (the jail as a sandbox backend, ``warm`` in the
registry).
See docs/threat-model.md ("warm") for what a warm worker isolates.
"""

from reliabench.warm.client import ISOLATION, TEST_PATHS, WarmWorkers
from reliabench.warm.hidden import WarmTests, collect_warm_tests, run_warm_tests, warm_unavailable_reason

__all__ = ["ISOLATION", "TEST_PATHS", "WarmTests", "WarmWorkers", "collect_warm_tests", "run_warm_tests",
           "warm_unavailable_reason"]
