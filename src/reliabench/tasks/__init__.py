"""Task suites: the on-disk format, loading with validation, and the bundled suites."""

from reliabench.tasks.suite import (
    Suite,
    Task,
    Variant,
    bundled_suites,
    load_suite,
    materialize,
    resolve_suite,
)

__all__ = ["Suite", "Task", "Variant", "bundled_suites", "load_suite", "materialize", "resolve_suite"]
