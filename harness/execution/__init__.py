"""The one execution path (``run_job``) and where it runs: serially here, or on a Dask cluster."""
