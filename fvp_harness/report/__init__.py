"""From records to what a pull request shows: ``analysis`` (pandas: tidy samples, statistics, A/B comparisons,
verdicts; pure), ``render`` (markdown, CSV, JSON, PNG from an analysis) and ``format`` (how every number looks).
Imports only the store's ``Record`` and the files layer; nothing here runs a model. Kept import-free so that
``report.format`` stays cheap for the CLI."""
