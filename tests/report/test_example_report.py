"""The README's example table is the shipped example report's table (``docs/example/``), column for
column and row for row, with the caption line that keeps the simulated label on a paste; and the
example's links resolve.

Regenerate the example with the simulator (``fvp-harness run scenarios/driver_reuse.yaml -o OUT``,
then copy ``OUT/report.md``, ``report.png`` and ``report.samples.png`` into ``docs/example/``) and
paste its table and the line above it into the README."""

from __future__ import annotations

import math
import re

from tests.helpers import REPO

EXAMPLE = REPO / "docs" / "example"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]


def _first_table(lines: list[str], after: int = 0) -> tuple[str, list[list[str]]]:
    """The caption line above the first ``| Model`` table at or after ``after``, and the table's
    rows as cells."""
    start = next(i for i in range(after, len(lines)) if lines[i].startswith("| Model"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    assert lines[start - 1] == "", "a blank line between the caption and the table"
    return lines[start - 2], [_cells(line) for line in lines[start:end]]


def test_the_readme_table_is_the_example_reports_table() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8").split("\n")
    anchor = next(i for i, line in enumerate(readme) if "docs/example/report.md" in line)
    readme_caption, readme_rows = _first_table(readme, anchor)
    example_caption, example_rows = _first_table(
        (EXAMPLE / "report.md").read_text(encoding="utf-8").split("\n")
    )
    assert readme_rows[0] == example_rows[0], "the same columns, in the same order"
    assert readme_rows[1:] == example_rows[1:], (
        "the same rows (regenerate the example, then paste its table)")
    assert readme_caption == example_caption and readme_caption.startswith("**Simulated")


def test_the_example_reports_links_resolve() -> None:
    text = (EXAMPLE / "report.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#]+)\)", text)
    assert {"report.png", "report.samples.png"} <= set(links)
    for link in links:
        assert (EXAMPLE / link).is_file(), link


def _saved_bounds(cell: str) -> tuple[float, float]:
    """``62.9 … 65.9%`` (the report's CI of a saving, all of it saved) as numbers."""
    low, high = re.fullmatch(r"(\d+\.\d) … (\d+\.\d)%", cell).groups()  # type: ignore[union-attr]
    return float(low), float(high)


def test_the_example_geometric_mean_is_no_narrower_than_its_models_allow() -> None:
    """The simulator's example (issue 38, finding 1): its models' CIs are 3.0, 2.5, 0.5 and 0.5
    points wide; the geometric mean's was 0.3 (68.9 … 69.2%). Its ratio bounds must be at least the
    geometric means of the models' ratio bounds (to the table's rounding)."""
    _, rows = _first_table((EXAMPLE / "report.md").read_text(encoding="utf-8").split("\n"))
    geometric = next(row for row in rows if row[0].startswith("**Geometric mean**"))
    models = [_saved_bounds(row[3]) for row in rows[2:] if row is not geometric]
    geo = _saved_bounds(geometric[3])
    log_low = sum(math.log(1 - high / 100) for _, high in models) / len(models)
    log_high = sum(math.log(1 - low / 100) for low, _ in models) / len(models)
    combined = (100 * (1 - math.exp(log_high)), 100 * (1 - math.exp(log_low)))
    assert geo[0] <= round(combined[0], 1) + 0.05, (geo, combined)
    assert geo[1] >= round(combined[1], 1) - 0.05, (geo, combined)
