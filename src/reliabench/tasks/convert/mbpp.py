"""MBPP-shaped JSONL -> suite (see :mod:`reliabench.tasks.convert`)."""
