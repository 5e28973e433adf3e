"""What every simulated FVP has, whichever platform it plays: its command line (``cmdline.py``), its
parameter tables (``params.py``: one per platform, data) and the ways it stops (``lifecycle.py``:
stop text, ``--stat``, limits, the parent's death). The platforms and ``main.py`` import it; it
imports only the shared clock."""
