"""The stored history: comparisons of stored runs, one row per stored run, the analysed numbers kept
beside a run and the history's static site. The top room of the report package: it reads results
folders."""
