"""What the sealed-class attacks share: find the worker's own objects through the garbage collector.

Not a submission (its name starts with an underscore). Everything here is plain Python any
submission can run at import: the harness's guard cannot see instance state or instance attributes.
"""

import gc


def instances(*class_names):
    """Every live object whose class has one of these names (the worker's Worker, its timer)."""
    return [o for o in gc.get_objects() if type(o).__name__ in class_names]


def worker():
    return instances("Worker")[0]


def timer():
    return instances("SealedTimer", "CudaTimer", "CpuTimer")[0]


def shadow_send(edit):
    """Replace the worker's send on the instance: ``edit(header, parts)`` gets each reply as its wire
    header and returns what goes out on the result channel."""
    from harness.contract import messages, protocol

    target = worker()

    def send(reply, tensors=None, parts=None):
        header, parts = edit(messages.encode(reply), parts)
        protocol.send(target.results_fd, header, tensors, parts)

    target.send = send
