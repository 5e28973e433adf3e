"""The ETDump event comparison as the report shows it: the markdown section, ``report.events.csv``
and ``report.json``'s ``etdump_events``."""

from __future__ import annotations

from typing import Any

from fvp_harness.report.stats.etdump_events import LOAD_BLOCK, EventReport

__all__ = ["EVENT_CSV_COLUMNS", "event_rows", "events_csv", "events_json", "events_markdown"]

_SCALE = {"ns": (1000.0, "µs"), "cycles": (1.0, "cycles")}


def _amount(value: float | None, unit: str, signed: bool = False) -> str:
    if value is None:
        return "–"
    scale, _ = _SCALE.get(unit, (1.0, unit))
    number = value / scale + 0.0  # + 0.0: no "-0.0"
    # a fraction of the unit keeps two digits
    spec = ",.1f" if abs(number) >= 1 or number == 0 else ".2g"
    return f"{number:+{spec}}" if signed else f"{number:{spec}}"


def _with_ci(value: float | None, ci: tuple[float | None, float | None], unit: str,
             signed: bool = False) -> str:
    if value is None:
        return "–"
    if ci[0] is None or ci[1] is None:
        return _amount(value, unit, signed)
    return (f"{_amount(value, unit, signed)} [{_amount(ci[0], unit, signed)}, "
            f"{_amount(ci[1], unit, signed)}]")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def events_markdown(report: EventReport | None) -> list[str]:
    """The ``## Where the time went (ETDump events)`` section, or nothing."""
    if report is None:
        return []
    lines = ["## Where the time went (ETDump events)", ""]
    for c in report.comparisons:
        _, shown = _SCALE.get(c.time_unit, (1.0, c.time_unit))
        if c.run_block == LOAD_BLOCK:
            lines += ["Method load (`Default` block, once per process; not part of the saving "
                      f"above), medians in {shown}; shares are of the load's change "
                      f"(`{c.total_event}`):", ""]
        else:
            lines += [f"### {_cell(c.model)}: {c.candidate} vs {c.baseline}", "",
                      f"Per inference (`Execute` blocks), medians in {shown} with 95 % CIs "
                      "(two-level bootstrap); the change is the candidate's median less the "
                      "baseline's; self time is an event's duration less the events it encloses, "
                      "and its saving's share is of the total saving"
                      + (f" (`{c.total_event}`)." if c.total_event else "."), ""]
        share_of = "Share of the change" if c.run_block == LOAD_BLOCK else "Share of saving"
        lines += [f"| Event | Instruction | {c.baseline} | {c.candidate} | Change | Self time "
                  f"saved | {share_of} |", "|---|---|---|---|---|---|---|"]
        for r in c.rows:
            name = f"`{_cell(r.event)}`" + (f" #{r.occurrence + 1}" if r.occurrence else "")
            where = f"{r.chain_index}:{r.instruction_id}"
            if r.present != "both":
                lines.append(f"| {name} | {where} | "
                             f"{_with_ci(r.baseline_median, r.baseline_ci, c.time_unit)} | "
                             f"{_with_ci(r.candidate_median, r.candidate_ci, c.time_unit)} | "
                             f"{r.present} | – | – |")
                continue
            share = (f"{0.0 if round(r.share_pct, 1) == 0 else r.share_pct:.1f} %"
                     if r.share_pct is not None else "–")
            lines.append(f"| {name} | {where} | "
                         f"{_with_ci(r.baseline_median, r.baseline_ci, c.time_unit)} | "
                         f"{_with_ci(r.candidate_median, r.candidate_ci, c.time_unit)} | "
                         f"{_with_ci(r.change, r.change_ci, c.time_unit, signed=True)} | "
                         f"{_with_ci(r.self_saved, r.self_saved_ci, c.time_unit, signed=True)} | "
                         f"{share} |")
        lines.append("")
        if c.total_saved is not None and c.self_saved_sum is not None:
            within = {True: "within", False: "outside",
                      None: "with no CI to hold it"}[c.shares_within_ci]
            part = (f" ({100.0 * c.self_saved_sum / c.total_saved:.1f} % of it)" if c.total_saved
                    else "")
            lines += ["Total saving "
                      f"{_with_ci(c.total_saved, c.total_saved_ci, c.time_unit, signed=True)} "
                      f"{shown}; the self-time savings add up to "
                      f"{_amount(c.self_saved_sum, c.time_unit, signed=True)} {shown}{part}, "
                      f"{within} its CI.", ""]
            if c.run_block == LOAD_BLOCK:
                lines[-2] = lines[-2].replace("Total saving", "Load saving", 1)
    if report.note:
        lines += [report.note, ""]
    elif not report.comparisons:
        lines += ["No model has an ETDump from both builds of a pair.", ""]
    lines += [f"- {w}" for w in report.warnings]
    if report.warnings:
        lines.append("")
    return lines


EVENT_CSV_COLUMNS = [
    "baseline", "candidate", "model", "run_block", "event", "occurrence", "chain_index",
    "instruction_id", "present",
    "time_unit", "n_baseline", "n_candidate", "baseline_median", "baseline_ci_low",
    "baseline_ci_high",
    "candidate_median", "candidate_ci_low", "candidate_ci_high", "change", "change_ci_low",
    "change_ci_high", "self_saved", "self_saved_ci_low", "self_saved_ci_high", "share_pct",
]  # fmt: skip
"""The columns of ``report.events.csv`` and of each row of ``report.json``'s
``etdump_events.rows``."""


def event_rows(report: EventReport) -> list[dict[str, Any]]:
    """Every row of every comparison as a flat mapping (``EVENT_CSV_COLUMNS``): what the CSV and the
    JSON hold."""
    rows = []
    for c in report.comparisons:
        for r in c.rows:
            rows.append({
                "baseline": c.baseline, "candidate": c.candidate, "model": c.model,
                "run_block": c.run_block, "event": r.event,
                "occurrence": r.occurrence, "chain_index": r.chain_index,
                "instruction_id": r.instruction_id,
                "present": r.present, "time_unit": c.time_unit, "n_baseline": r.n_baseline,
                "n_candidate": r.n_candidate, "baseline_median": r.baseline_median,
                "baseline_ci_low": r.baseline_ci[0], "baseline_ci_high": r.baseline_ci[1],
                "candidate_median": r.candidate_median, "candidate_ci_low": r.candidate_ci[0],
                "candidate_ci_high": r.candidate_ci[1], "change": r.change,
                "change_ci_low": r.change_ci[0],
                "change_ci_high": r.change_ci[1], "self_saved": r.self_saved,
                "self_saved_ci_low": r.self_saved_ci[0], "self_saved_ci_high": r.self_saved_ci[1],
                "share_pct": r.share_pct,
            })  # fmt: skip
    return rows


def events_json(report: EventReport | None) -> dict[str, Any] | None:
    """``report.json``'s ``etdump_events``: the rows, the totals per model and the warnings."""
    if report is None:
        return None
    totals = [{"baseline": c.baseline, "candidate": c.candidate, "model": c.model,
               "run_block": c.run_block, "total_event": c.total_event,
               "time_unit": c.time_unit, "total_saved": c.total_saved,
               "total_saved_ci_low": c.total_saved_ci[0],
               "total_saved_ci_high": c.total_saved_ci[1], "self_saved_sum": c.self_saved_sum,
               "shares_within_ci": c.shares_within_ci} for c in report.comparisons]
    data: dict[str, Any] = {"columns": EVENT_CSV_COLUMNS, "rows": event_rows(report),
                            "totals": totals, "warnings": list(report.warnings)}
    if report.note:
        data["note"] = report.note
    return data


def events_csv(report: EventReport) -> str:
    """``report.events.csv``: the same rows as the JSON, floats with 6 significant digits."""
    import csv  # late: only when written
    import io  # late: as above

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, EVENT_CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in event_rows(report):
        writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else "" if v is None else v)
                         for k, v in row.items()})
    return buffer.getvalue()
