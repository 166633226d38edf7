"""``python -m zarrfast``: the ``zarrfast`` command line."""

import sys

from zarrfast.cli import main

sys.exit(main())
