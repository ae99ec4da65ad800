"""The trusted parent: everything that decides a verdict or a time.

It spawns and talks to the worker, makes every call's seed, computes every expected output,
checks every output, verifies every MAC, applies the stopping rule. It never imports the
submission or the worker's code. Three floors under its entry, ``run.evaluate_submission``:
``worker_link`` (the link to the worker process), ``verdict`` (the verdict policy) and ``passes``
(the extra passes a mode asks for); each imports only the floors beneath it.
"""
