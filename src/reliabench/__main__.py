"""``python -m reliabench``."""

import sys

from reliabench.cli import main

sys.exit(main())
