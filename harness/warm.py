"""``python -m harness.warm``, what `make install` runs after pip (and the GPU check's `build`): the bytecode a
run imports (harness/bytecode_cache.py) and, on a GPU, the harness's own Triton kernels for it
(harness/kernel_cache.py) and the key of Triton's install (harness/triton_key.py), written ahead into the
harness's caches as pip compiles bytecode at install time. A machine's first run then compiles only the
submission's own kernels. Always exits 0: a cache not written is only a slower first run."""

from __future__ import annotations

from harness import bytecode_cache, kernel_cache, triton_key


def main() -> int:
    written = bytecode_cache.warm()
    print(f"bytecode: written under {written}" if written else
          "bytecode: none kept by the harness (Python writes its own, or NVFP4_BYTECODE_CACHE=off)")
    folder = kernel_cache.enable()
    warmed = kernel_cache.warm_kernels()
    where = folder or "Triton's own cache"
    print(f"kernels: {', '.join(warmed)} compiled under {where}" if warmed else
          "kernels: no CUDA GPU here, or none compiled: they compile on a run's first use")
    if folder is not None and warmed:
        try:
            triton_key.remember(folder)
            print(f"triton key: remembered under {folder / triton_key.MEMO}")
        except OSError as error:
            print(f"triton key: not remembered ({error}): each process computes it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
