"""``make`` over many scenarios: ``engine`` (what is stale, builds, reports, exit codes), ``lanes``
(self-contained work for one booted instance, the local thread executor) and ``dask`` (the same
lanes on a Dask cluster)."""
