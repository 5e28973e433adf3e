"""One scenario end to end: ``plan`` (units, order, content keys), ``artifacts`` (the user's host
builds), ``instances`` (a scenario's targets), ``deploy``, ``execute`` (units on booted instances),
``scrape`` (console text -> numbers), ``manifest`` (what a results folder was measured with),
``pipeline`` (``run_scenario``, ``rebuild_report``) and ``doctor`` (preflight without booting). Kept
import-free: importing ``run.scrape`` must not load the pipeline."""
