"""Isolation backends for untrusted code (moved to the ``reliabench.sandbox`` package)."""

from reliabench.sandbox.base import *  # noqa: F403
from reliabench.sandbox.base import (
    _ETC_FILES as _ETC_FILES,
)
from reliabench.sandbox.base import (
    _SYSTEM_DIRS as _SYSTEM_DIRS,
)
from reliabench.sandbox.base import (
    __all__ as __all__,
)
from reliabench.sandbox.base import (
    _hold_slot as _hold_slot,
)
from reliabench.sandbox.base import (
    _lend_workdir as _lend_workdir,
)
from reliabench.sandbox.base import (
    _max_output as _max_output,
)
from reliabench.sandbox.base import (
    _prepare as _prepare,
)
from reliabench.sandbox.base import (
    _probe as _probe,
)
from reliabench.sandbox.base import (
    _procs_of_uid as _procs_of_uid,
)
from reliabench.sandbox.base import (
    _python_prefixes as _python_prefixes,
)
from reliabench.sandbox.base import (
    _signal_reason as _signal_reason,
)
from reliabench.sandbox.base import (
    _uid_can_reach as _uid_can_reach,
)
from reliabench.sandbox.base import (
    _under as _under,
)
