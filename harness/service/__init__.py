"""The submission service: ``harness serve`` (HTTP API, queue, dispatcher) and ``harness submit``."""
