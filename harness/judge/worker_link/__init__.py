"""The link to the worker process: spawn it confined, reap it, talk to it, check its seals."""
