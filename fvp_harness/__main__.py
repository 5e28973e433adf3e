"""``python -m fvp_harness`` is the same as the ``fvp-harness`` console script."""

from fvp_harness.cli.main import main

raise SystemExit(main())
