"""``python -m hyperframes.cli``: the ``hyperframes`` command (as ``python -m hyperframes``)."""

import sys

from hyperframes.cli import main

sys.exit(main())
