"""``click.Choice`` over a plugin registry: the choices are read when the CLI needs them.

A ``click.Choice`` built from ``registry.names()`` at import time would freeze the choices
before a test (or a late ``register``) adds an entry; this one asks the registry each time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import click

from reliabench.plugins import Registry

__all__ = ["RegistryChoice"]


class RegistryChoice(click.Choice[str]):
    """The names of a :class:`~reliabench.plugins.Registry` (plus fixed extra choices).

    Args:
        registry: The registry whose names are the choices.
        extra: Choices listed before the registry's names (``auto``).
    """

    def __init__(self, registry: Registry[Any], extra: Iterable[str] = ()) -> None:
        self._registry = registry
        self._extra = tuple(extra)
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        """The extra choices, then the registry's names."""
        return (*self._extra, *self._registry.names())

    @choices.setter
    def choices(self, value: Iterable[str]) -> None:
        """Ignored: the choices always come from the registry."""
