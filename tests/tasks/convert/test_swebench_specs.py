"""The shipped spec table: every entry pinned, runnable here, its changes said."""

from __future__ import annotations

import re

from reliabench.repository.logs import LOG_PARSERS
from reliabench.tasks.convert.swebench_specs import SPECS

_PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[0-9][0-9A-Za-z.+-]*$")


def test_every_requirement_is_pinned() -> None:
    for key, spec in SPECS.items():
        for p in spec.packages:
            assert _PIN.match(p), (key, p)
        assert len({p.split("==")[0].lower() for p in spec.packages}) == len(spec.packages), key


def test_every_spec_runs_on_this_python_and_says_so() -> None:
    for key, spec in SPECS.items():
        assert spec.python == "3.11"
        assert spec.log_parser in LOG_PARSERS, key
        assert any("3.11" in n for n in spec.notes) and spec.requested_python, key
        assert spec.install[-1] == "." and "--no-deps" in spec.install


def test_the_31_shared_instances_are_covered() -> None:
    wanted = {("sqlfluff/sqlfluff", v) for v in ("0.6", "0.8")} | {
        ("django/django", "4.2"),
        ("sympy/sympy", "1.1"),
    }
    assert wanted <= set(SPECS)
