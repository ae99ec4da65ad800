"""What both sides of the trust boundary share: the wire format, the result records, the task model.

Nothing here runs a submission or judges one; ``harness.worker`` and ``harness.judge`` both import it.
"""
