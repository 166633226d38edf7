"""``python -m zarrfast``: the ``zarrfast`` command line."""

import sys

from .cli import main

sys.exit(main())
