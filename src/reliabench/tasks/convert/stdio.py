"""stdin/stdout problems -> suite (see :mod:`reliabench.tasks.convert`)."""
