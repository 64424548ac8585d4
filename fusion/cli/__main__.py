"""``python -m fusion.cli``: the ``hyperframes`` command."""

import sys

from fusion.cli import main

sys.exit(main())
