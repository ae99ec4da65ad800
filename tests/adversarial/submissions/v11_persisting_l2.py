"""Cheat 11: keep the operands in a persisting-L2 access-policy window, hoping they survive the
harness's L2 flush. The harness resets persisting lines and the limit before every call, so the
window is re-made (inside the timed call) and the data arrives cold each time: timed honestly."""

import ctypes

import _honest
import torch

LIMIT_PERSISTING_L2 = 0x06
ATTR_MAX_PERSISTING_L2 = 108
ATTR_MAX_WINDOW = 109
STREAM_ATTR_ACCESS_POLICY_WINDOW = 1
PERSISTING, STREAMING = 2, 1


class AccessPolicyWindow(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hit_ratio", ctypes.c_float),
                ("hit_prop", ctypes.c_int), ("miss_prop", ctypes.c_int)]


class StreamAttrValue(ctypes.Union):
    _fields_ = [("window", AccessPolicyWindow), ("pad", ctypes.c_byte * 64)]


def _cudart():
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise RuntimeError("no CUDA runtime library found")


def _ok(code, what):
    if code != 0:
        raise RuntimeError(f"{what} failed with cudaError {code}")


_rt = None


def custom_kernel(data):
    global _rt
    _rt = _rt or _cudart()
    a = data[0]
    device = torch.cuda.current_device()
    limit, window = ctypes.c_int(), ctypes.c_int()
    _ok(_rt.cudaDeviceGetAttribute(ctypes.byref(limit), ATTR_MAX_PERSISTING_L2, device), "max persisting L2")
    _ok(_rt.cudaDeviceGetAttribute(ctypes.byref(window), ATTR_MAX_WINDOW, device), "max window")
    _ok(_rt.cudaDeviceSetLimit(LIMIT_PERSISTING_L2, ctypes.c_size_t(limit.value)), "set persisting limit")
    value = StreamAttrValue()
    nbytes = a.untyped_storage().nbytes()
    value.window = AccessPolicyWindow(a.data_ptr(), min(nbytes, window.value), 1.0, PERSISTING, STREAMING)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    _ok(_rt.cudaStreamSetAttribute(stream, STREAM_ATTR_ACCESS_POLICY_WINDOW, ctypes.byref(value)), "set window")
    return _honest.gemv(data)
