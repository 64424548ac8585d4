"""``python -m hyperframes``: the ``hyperframes`` command."""

import sys

from hyperframes.cli import main

sys.exit(main())
