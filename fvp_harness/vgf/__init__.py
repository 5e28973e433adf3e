"""VGF zero-copy benchmarks: ``reader`` turns VGF benchmark JSON reports into records, ``report``
compares a copy run with a zero-copy run (boundary cost removed, remaining, execution unchanged)
with the A/B statistics."""
