"""The embedded FVP simulator: a Corstone-1000 A320 model that looks real from the outside.

A separate world: it imports nothing of the harness (only the standard library, numpy and asyncssh),
so it could be shipped alone. Run it as ``fvp-sim`` or ``python -m fvp_harness.sim``; the harness
launches it for ``fvp.binary: sim``.
"""
