"""``python -m fvp_harness.sim``: the same as the ``fvp-sim`` console script."""

import sys

from fvp_harness.sim.main import main

sys.exit(main())
