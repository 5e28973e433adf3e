"""Command-line interface: wiring only. Each verb lives in a ``verb_*.py`` module with
``register(subparsers, common)``; ``main`` discovers them, so adding a verb touches no shared
file."""
