"""Planted: obfuscation: a stream class named from parts, text from code points, a base64 blob run."""

import base64

import torch

from reference import ref_kernel

_KIND = "Str" + "eam"
_side = getattr(torch.cuda, _KIND)
_name = "".join(chr(code) for code in (103, 99))
exec(base64.b64decode("cHJpbnQoJ2hpJyk="))


def custom_kernel(data):
    return ref_kernel(data)
