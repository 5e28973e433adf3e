"""The rendering: an analysis as markdown, CSV, JSON, JUnit, charts and HTML pages, with what
measured it (read from the manifest). Imports the analysis, never the stored history."""
