"""The small real run of tests/fixtures/report, copied where a test may open (and write) it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "report" / "run"


def copy_run(dest: Path) -> Path:
    """A copy of the fixture run directory under ``dest``."""
    target = dest / "run"
    shutil.copytree(FIXTURE_RUN, target)
    return target


def page_data(page: str) -> dict[str, Any]:
    """The explorer's embedded JSON of a report page."""
    m = re.search(r'<script type="application/json" id="rb-data">(.*?)</script>', page, re.S)
    assert m is not None, "no embedded data"
    data: dict[str, Any] = json.loads(m.group(1))
    return data
