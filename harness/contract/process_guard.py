"""How the worker learns what guards its processes: a line in its environment.

``harness.judge.worker_link.worker_reaper`` sets it to what took effect (its own PID namespace, or a subreaper
only); the worker reports it in 'ready' with the rest of its sandbox (``harness.worker.sandbox``).
Informational, like every line of that report: the submission can read and change it.
"""

ENV = "NVFP4_PROCESS_GUARD"
UNGUARDED = "off (started without the reaper: not Linux); what the submission starts may outlive the run"
