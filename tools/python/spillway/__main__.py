"""``python -m spillway ARGS``: the same as the ``spillway`` console script."""

import sys

from ._cli import main

sys.exit(main())
