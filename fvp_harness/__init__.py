"""fvp-harness: benchmark ExecuTorch runners on Arm Fixed Virtual Platforms.

The package is split by role (see docs/architecture.md): ``scenario`` parses YAML into validated objects, ``plan``
expands them into units, ``target`` owns every process and socket, ``execute`` runs units, ``scrape`` turns console
text into numbers, ``store`` owns the results folder, ``analysis`` and ``report`` turn records into tables, and
``sim`` is an embedded FVP simulator that imports nothing of the rest.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
