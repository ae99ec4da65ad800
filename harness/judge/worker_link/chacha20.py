"""ChaCha20 (RFC 8439) for the parent's staged inputs, in numpy over every block at once.

The parent never loads the worker's compiled core (docs/architecture.md, the trust boundary), so it
carries its own cipher; the core's C one (harness/worker/csrc/chacha20.c) decrypts. Two
implementations written apart, checked against the RFC's vectors and against each other
(tests/test_staged_inputs.py). A CPU call's inputs are small: numpy's speed is enough.
"""

from __future__ import annotations

import numpy as np

_CONSTANTS = np.frombuffer(b"expand 32-byte k", dtype="<u4")
_COLUMNS_THEN_DIAGONALS = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                           (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))


def _rotate(x: np.ndarray, bits: int) -> np.ndarray:
    return (x << np.uint32(bits)) | (x >> np.uint32(32 - bits))


def _keystream(key: bytes, nonce: bytes, counter: int, blocks: int) -> np.ndarray:
    """``blocks`` keystream blocks from block ``counter`` on, as bytes."""
    state = np.empty((16, blocks), dtype=np.uint32)
    state[0:4] = _CONSTANTS[:, None]
    state[4:12] = np.frombuffer(key, dtype="<u4")[:, None]
    state[12] = (counter + np.arange(blocks, dtype=np.uint64)).astype(np.uint32)  # the counter wraps, as in C
    state[13:16] = np.frombuffer(nonce, dtype="<u4")[:, None]
    x = state.copy()
    with np.errstate(over="ignore"):
        for _ in range(10):
            for a, b, c, d in _COLUMNS_THEN_DIAGONALS:
                x[a] += x[b]
                x[d] = _rotate(x[d] ^ x[a], 16)
                x[c] += x[d]
                x[b] = _rotate(x[b] ^ x[c], 12)
                x[a] += x[b]
                x[d] = _rotate(x[d] ^ x[a], 8)
                x[c] += x[d]
                x[b] = _rotate(x[b] ^ x[c], 7)
        x += state
    return np.ascontiguousarray(x.T).astype("<u4").view(np.uint8).reshape(-1)


def chacha20(key: bytes, nonce: bytes, counter: int, data: bytes | memoryview) -> bytes:
    """``data`` XOR the keystream of (``key``: 32 bytes, ``nonce``: 12 bytes) from block ``counter``."""
    if len(key) != 32 or len(nonce) != 12:
        raise ValueError("ChaCha20 takes a 32-byte key and a 12-byte nonce")
    plain = np.frombuffer(data, dtype=np.uint8)
    stream = _keystream(key, nonce, counter, -(-plain.size // 64))
    return (plain ^ stream[: plain.size]).tobytes()
