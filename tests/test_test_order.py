"""The suite's own schedule (``tests/conftest.py``): every long test and heavy fast-lane module it
starts first and every module it keeps on one worker still exists, so a rename cannot quietly put a
long test back at the end of the run."""

from __future__ import annotations

import re

from tests.conftest import HEAVY_FIRST, LONG_FIRST, ONE_WORKER
from tests.helpers import REPO


def test_every_long_first_prefix_and_one_worker_module_names_tests_that_exist() -> None:
    missing = []
    for prefix in LONG_FIRST:
        path, _, name = prefix.partition("::")
        target = REPO / path
        if not target.exists():
            missing.append(f"LONG_FIRST {prefix}: no {path}")
        elif name and not re.search(rf"^def {re.escape(name)}", target.read_text(encoding="utf-8"),
                                    re.MULTILINE):
            missing.append(f"LONG_FIRST {prefix}: no test named {name}... in {path}")
    missing += [f"HEAVY_FIRST {module}: no such file"
                for module in HEAVY_FIRST if not (REPO / module).is_file()]
    for module in sorted(ONE_WORKER):
        text = (REPO / module).read_text(encoding="utf-8") if (REPO / module).is_file() else ""
        if not re.search(r"^def test_\w+\([^)]*\b(booted\w*|target|two_runs)\b", text,
                         re.MULTILINE):
            missing.append(f"ONE_WORKER {module}: no test there takes booted*, target or two_runs")
    assert not missing, "\n".join(missing)
