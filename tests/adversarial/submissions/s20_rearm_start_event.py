"""Issue 40, re-timing (native, ctypes): record the core's own start event again, on the caller's
stream, after half of the call's work, so that the events bracket only the second half. The handle
is found as a reader of the public source would: next to torch's stream in the core's readable
state (the layout before issue 40), or on the core's hidden page, opened with mprotect as p01c
does (recognised before any call by its last index, -1, and read at its start event's offset).
The core now checks its events against a second clock (%globaltimer stamps its own kernels write
at random places): the call is refused as re-armed, the run rejected."""

import ctypes
import struct

import _window
import torch

CUDA = ctypes.CDLL("libcuda.so.1")
CUDA.cuEventQuery.argtypes = [ctypes.c_void_p]


def _is_event(handle):
    return handle and CUDA.cuEventQuery(handle) in (0, 600)  # CUDA_SUCCESS, CUDA_ERROR_NOT_READY


def find_start_event():
    stream = torch.cuda.current_stream().cuda_stream
    flush_bytes = max(2 * torch.cuda.get_device_properties(0).L2_cache_size, 1 << 20)
    for start, end in _window.core_mappings(writable=False):  # before issue 40: stream, capture, flush, bytes, start
        values = [value for _, value in _window.words(ctypes.string_at(start, end - start))]
        for at in range(len(values) - 4):
            if values[at] == stream and values[at + 3] == flush_bytes and _is_event(values[at + 4]):
                return values[at + 4]
    for page in _window.opened_single_pages():  # the hidden page: last_index -1 before any call
        if struct.unpack_from("<q", page, 8)[0] == -1:
            handle = struct.unpack_from("<Q", page, _window.HIDDEN_START_EVENT)[0]
            if _is_event(handle):
                return handle
    return None


START_EVENT = find_start_event()


def custom_kernel(data):
    return _window.start_again_after_half(data, START_EVENT)
