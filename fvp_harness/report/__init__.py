"""From records to what a pull request shows, in three rooms: ``stats`` (the analysis, pure),
``rendering`` (the report files of an analysis) and ``stored`` (results folders read back: compare,
history, the site), over ``format`` (how every number looks). Kept import-free so that
``report.format`` stays cheap for the CLI."""
