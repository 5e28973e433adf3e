"""The analysis: records -> tidy samples -> statistics -> A/B comparisons and verdicts. Pure: no
files written, no screen, no clock; imports only ``report.format`` of the report package."""
