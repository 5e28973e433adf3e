"""The ``make`` verb's command line: make's conventions in its help, and a parser that starts
fast."""

from __future__ import annotations

import subprocess
import sys


def test_make_verb_help_lists_make_conventions() -> None:
    out = subprocess.run([sys.executable, "-m", "fvp_harness", "make", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for flag in ("-j N", "-k", "-n", "-B", "--only PATTERN", "--executor", "--scheduler"):
        assert flag in out


def test_the_parser_does_not_import_the_analysis_stack() -> None:
    """``fvp-harness --help`` and a no-op ``make`` must start fast: no pandas / scipy / matplotlib
    at parse time."""
    code = ("import sys\nfrom fvp_harness.cli.main import build_parser\nbuild_parser()\n"
            "print(sorted(m for m in ('pandas', 'scipy', 'matplotlib', 'dask', 'distributed') if m "
            "in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
