"""Repository tasks' machinery: checkouts, environments, patches, test logs, grading, validation.

* :mod:`~reliabench.repository.source` -- a repository at its base commit (tarball, folder, git);
* :mod:`~reliabench.repository.envspec` and :mod:`~reliabench.repository.venv` -- the
  environment spec and its venvs, built once and cached by the hash of the spec;
* :mod:`~reliabench.repository.patches` -- the paths a patch touches, applying one, the trusted
  test-patch result, the agent's ``git diff``;
* :mod:`~reliabench.repository.logs` and :mod:`~reliabench.repository.grading` -- per-test
  statuses from a test log and SWE-bench's FAIL_TO_PASS / PASS_TO_PASS verdict;
* :mod:`~reliabench.repository.validation` -- the gold patch flips a task, the empty one does not.

The task format is :mod:`reliabench.tasks.repository`; the hidden-test runner that puts it all
together is :mod:`reliabench.hidden_tests.repository`.
"""

__all__: list[str] = []
