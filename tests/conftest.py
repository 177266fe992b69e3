"""Fixtures shared by the test modules."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from reliabench.files.untrusted import remove_tree

BASE_PREFIX = "rb-test-"
"""The name prefix of ``base`` directories (a jail's /tmp shows them as mount points)."""


@pytest.fixture
def base() -> Iterator[Path]:
    """A directory every slot uid can traverse but not list, as a runner's workspaces have.

    pytest's ``tmp_path`` is mode 0700 (no slot uid reaches it) and its clean-up recurses (a
    deep tree an agent wrote breaks it): this one is 0711 and removed without recursion.
    """
    path = Path(tempfile.mkdtemp(prefix=BASE_PREFIX))
    os.chmod(path, 0o711)
    yield path
    remove_tree(path)
