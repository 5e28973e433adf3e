"""The results folder and what is stored in it: ``records`` (one ``Record`` per unit, the only thing
analysis reads) and ``folder`` (``ResultStore``: manifest, append-only records, logs, fetched files,
locking, and the owner of every file name in a results folder). Below the report and run layers;
imports only errors and files."""
