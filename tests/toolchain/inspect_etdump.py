"""Run in the ExecuTorch toolchain's python: what ``executorch.devtools.Inspector`` reads from an
ETDump.

Prints JSON: one row per event Inspector lists, with its event block's name, the event's name and
every duration it holds (Inspector merges the blocks of one name: an ``Execute`` event holds one
duration per inference), in nanoseconds as the file stores them (Inspector is asked not to convert:
source and target scale both ``ns``).
"""

from __future__ import annotations

import json
import sys

from executorch.devtools import Inspector
from executorch.devtools.inspector._inspector_utils import TimeScale


def main() -> None:
    inspector = Inspector(etdump_path=sys.argv[1], source_time_scale=TimeScale.NS,
                          target_time_scale=TimeScale.NS)
    rows = []
    for block in inspector.event_blocks:
        for event in block.events:
            raw = list(event.perf_data.raw) if event.perf_data is not None else []
            rows.append({"block": block.name, "event": event.name, "durations": raw})
    json.dump(rows, sys.stdout)


if __name__ == "__main__":
    main()
