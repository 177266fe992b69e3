"""The environment specs reliabench ships for SWE-bench repositories and versions.

Derived from the ``swebench`` package's specs (4.1.0, ``harness/constants/python.py``,
``MAP_REPO_VERSION_TO_SPECS_PY``: Python version, packages, install and test commands; read
when this table was written, never imported at run time), changed where they cannot work
offline on this machine, each change said in ``notes``:

* Python: the specs ask for 3.6-3.10; Debian 12 has 3.11 only. Every spec here runs on 3.11
  and records the version asked (``requested_python``); instances whose code needs an older
  Python fail validation with that reason.
* Packages: every requirement is pinned (``name==version``) to a release on PyPI today, so a
  build in a year resolves the same; unpinned lines and requirement files of the specs
  (``requirements.txt``) were resolved once and pinned. ``pytest`` is 7.4.4 where the
  repository's tests use features pytest 8 removed (nose-style ``setup`` methods).
* Install: ``pip install --no-deps --no-build-isolation -e .`` (every dependency is already
  in the base venv, the sandbox has no network); extras (``.[dev]``) are in ``packages``.
* Tests: the spec's command, as argv (``pytest -rA``); the test files of the test patch are
  appended by the converter, as SWE-bench does.

``verified`` says whether validation ran here (gold patch resolves, empty patch does not) for
at least one instance of that (repository, version); the others convert and are refused at
run time only if their build or validation fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

__all__ = ["SPECS", "SwebenchSpec"]


@dataclass(frozen=True, slots=True)
class SwebenchSpec:
    """The environment and test command of one (repository, version).

    Attributes:
        python: The interpreter used (``3.11``).
        requested_python: What the ``swebench`` spec asks for.
        packages: Pinned requirements of the base venv.
        install: The install command (argv).
        test_cmd: The test command (argv) without the test files.
        log_parser: The parser of the test log (:mod:`reliabench.repository.logs`).
        env: Variables for the install command and the tests.
        notes: What was changed from the ``swebench`` spec, one line each.
        verified: Validated here on at least one instance.
        directives: How test files become arguments: ``paths`` (pytest, SymPy) or
            ``django`` (dotted module names below ``tests/``).
        image: Instead of a venv: the image of each instance (a template: ``{instance_id}``,
            and ``{image_key}``, SWE-bench's name for it, ``owner_1776_name-N``); a ``--specs``
            entry only.
    """

    python: str
    requested_python: str
    packages: tuple[str, ...]
    install: tuple[str, ...]
    test_cmd: tuple[str, ...]
    log_parser: str = "pytest"
    env: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    verified: bool = False
    directives: str = "paths"
    image: str | None = None


_BUILD: Final = ("setuptools==69.5.1", "wheel==0.43.0")
_PYTEST7: Final = ("pytest==7.4.4", "iniconfig==2.0.0", "packaging==23.2", "pluggy==1.3.0")
_INSTALL: Final = ("python", "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-e", ".")
_PYTEST_RA: Final = ("pytest", "-rA")
_PY311: Final = "runs on Python 3.11 (the spec asks for {v}; Debian 12 has 3.11 only)"
_PINNED: Final = "requirements pinned to releases on PyPI today (the spec leaves them unpinned)"
_NO_DEPS: Final = "install without dependencies or build isolation (all are in the base venv; no network)"
_PYTEST_NOSE: Final = "pytest 7.4.4: the tests use nose-style setup methods that pytest 8 removed"


def _spec(
    requested: str,
    packages: tuple[str, ...],
    *,
    test_cmd: tuple[str, ...] = _PYTEST_RA,
    notes: tuple[str, ...] = (),
    verified: bool = False,
    log_parser: str = "pytest",
    env: Mapping[str, str] | None = None,
    directives: str = "paths",
) -> SwebenchSpec:
    return SwebenchSpec(
        python="3.11",
        requested_python=requested,
        packages=(*_BUILD, *packages),
        install=_INSTALL,
        test_cmd=test_cmd,
        log_parser=log_parser,
        env=dict(env or {}),
        notes=(_PY311.format(v=requested), _PINNED, _NO_DEPS, *notes),
        verified=verified,
        directives=directives,
    )


_MARSHMALLOW: Final = (
    *_PYTEST7,
    "pytz==2024.1",
    "simplejson==3.19.2",
    "python-dateutil==2.9.0.post0",
    "six==1.16.0",
)
_PYDICOM: Final = (*_PYTEST7, "numpy==1.26.4")
_ASTROID_OLD: Final = (*_PYTEST7, "lazy-object-proxy==1.10.0", "wrapt==1.14.1", "typing-extensions==4.9.0")
_ASTROID: Final = (*_PYTEST7, "lazy-object-proxy==1.10.0", "wrapt==1.15.0", "typing-extensions==4.9.0")
_SQLFLUFF_06: Final = (
    *_PYTEST7,
    "click==8.1.7",
    "colorama==0.4.6",
    "configparser==6.0.0",
    "cached-property==1.5.2",
    "oyaml==1.0",
    "PyYAML==6.0.1",
    "Jinja2==3.0.3",
    "MarkupSafe==2.1.5",
    "diff-cover==8.0.3",
    "Pygments==2.17.2",
    "chardet==5.2.0",
    "pathspec==0.12.1",
    "tblib==3.0.0",
    "appdirs==1.4.4",
    "toml==0.10.2",
    "typing-extensions==4.9.0",
    "hypothesis==6.98.9",
    "attrs==23.2.0",
    "sortedcontainers==2.4.0",
)
_SQLFLUFF_08: Final = (*_SQLFLUFF_06, "regex==2023.12.25", "tqdm==4.66.2")
_PYTEST_80: Final = (
    "iniconfig==2.0.0",
    "packaging==23.1",
    "pluggy==1.3.0",
    "exceptiongroup==1.1.3",
    "tomli==2.0.1",
    "setuptools-scm==8.0.4",
    "typing-extensions==4.9.0",
    "attrs==23.1.0",
    "Pygments==2.17.2",
    "xmlschema==2.5.1",
    "elementpath==4.1.5",
)
_PVLIB: Final = (
    *_PYTEST7,
    "numpy==1.26.4",
    "pandas==2.1.4",
    "scipy==1.11.4",
    "pytz==2024.1",
    "python-dateutil==2.9.0.post0",
    "six==1.16.0",
    "tzdata==2024.1",
    "requests==2.31.0",
    "certifi==2024.2.2",
    "charset-normalizer==3.3.2",
    "idna==3.6",
    "urllib3==2.2.1",
    "h5py==3.10.0",
    "pytest-mock==3.12.0",
    "pytest-remotedata==0.4.1",
    "pytest-rerunfailures==13.0",
)

SPECS: Final[Mapping[tuple[str, str], SwebenchSpec]] = {
    ("marshmallow-code/marshmallow", "2.20"): _spec("3.9", _MARSHMALLOW, verified=True),
    ("marshmallow-code/marshmallow", "3.0"): _spec("3.9", _MARSHMALLOW, verified=True),
    ("pytest-dev/pytest", "8.0"): _spec(
        "3.9",
        _PYTEST_80,
        verified=True,
        env={"SETUPTOOLS_SCM_PRETEND_VERSION": "8.0.0.dev0"},
        notes=("setuptools-scm gets the version from the environment (the checkout has no tags)",),
    ),
    **{
        ("pydicom/pydicom", v): _spec(
            p, _PYDICOM, verified=True, log_parser="pytest-options", notes=(_PYTEST_NOSE,)
        )
        for v, p in (("1.3", "3.6"), ("2.0", "3.8"), ("2.1", "3.9"), ("2.2", "3.9"), ("2.3", "3.10"))
    },
    **{
        ("pylint-dev/astroid", v): _spec(
            "3.9",
            _ASTROID_OLD,
            verified=True,
            notes=("wrapt 1.14.1 although astroid asks for <1.14: wrapt 1.13 imports inspect.formatargspec, "
                   "which Python 3.11 removed",),
        )
        for v in ("2.9", "2.10")
    },
    **{("pylint-dev/astroid", v): _spec("3.9", _ASTROID, verified=True) for v in ("2.12", "2.13", "2.14")},
    ("sqlfluff/sqlfluff", "0.6"): _spec("3.9", _SQLFLUFF_06, verified=True),
    ("sqlfluff/sqlfluff", "0.8"): _spec("3.9", _SQLFLUFF_08, verified=True),
    **{("pvlib/pvlib-python", v): _spec("3.9", _PVLIB) for v in ("0.7", "0.8", "0.9")},
    ("pyvista/pyvista", "0.39"): _spec(
        "3.9",
        (
            *_PYTEST7,
            "numpy==1.26.4",
            "vtk==9.3.0",
            "pooch==1.8.1",
            "matplotlib==3.8.3",
            "scooby==0.9.2",
            "pillow==10.2.0",
        ),
        notes=("the spec's apt-get pre_install (ffmpeg, X libraries) is not run: no network in the sandbox",),
    ),
    ("scikit-learn/scikit-learn", "0.21"): _spec(
        "3.6",
        (*_PYTEST7, "numpy==1.26.4", "scipy==1.11.4", "Cython==0.29.37", "joblib==1.3.2"),
        log_parser="pytest-v2",
        notes=(
            "scikit-learn 0.21 builds C extensions against numpy 1.x; "
            "not validated here (no repository shipped)",
        ),
    ),
    ("django/django", "4.2"): _spec(
        "3.9",
        ("asgiref==3.7.2", "sqlparse==0.4.4"),
        test_cmd=("./tests/runtests.py", "--verbosity", "2", "--settings=test_sqlite", "--parallel", "1"),
        log_parser="django",
        directives="django",
    ),
    ("sympy/sympy", "1.1"): _spec(
        "3.9",
        ("mpmath==1.3.0",),
        test_cmd=("bin/test", "-C", "--verbose"),
        log_parser="sympy",
        env={"PYTHONWARNINGS": "ignore::UserWarning,ignore::SyntaxWarning"},
    ),
}
"""(repository, version) -> spec, for the repositories and versions reliabench has tried."""
