"""Builds harness.worker._sealed, the compiled timed loop, and the worker's preload, as optional extensions.

Optional: a machine without a C compiler still installs the harness and runs the CPU path; a GPU
run without the compiled core refuses ranked mode (harness.judge.worker_link.seal.SEALED_MISSING).
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CORE_SOURCES = "harness/worker/csrc"  # in the worker's package: the core runs beside the submission
CORE_FILES = ("sealed", "core_pages", "key_page", "gpu_window", "python_hooks", "sealed_outputs", "digest_tree",
              "cuda_driver", "sha256", "syscall_gate", "staged_inputs", "chacha20", "drawn_inputs", "blake2b",
              "call_phases", "output_copies")
CORE_HEADERS = ("core_state", "gpu_window", "python_hooks", "sha256", "cuda_driver", "sealed_outputs", "digest_tree",
                "syscall_gate", "staged_inputs", "chacha20", "drawn_inputs", "blake2b", "call_phases",
                "output_copies")


class OptionalBuildExt(build_ext):
    """Skip the extension, with one line, when it cannot be compiled here."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # no compiler, no Python headers: the CPU path still works
            print(f"warning: harness.worker._sealed not built ({error}); GPU ranked mode will be refused")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            print(f"warning: harness.worker._sealed not built ({error}); GPU ranked mode will be refused")


setup(
    ext_modules=[
        Extension(
            "harness.worker._sealed",
            sources=[f"{CORE_SOURCES}/{name}.c" for name in CORE_FILES],
            depends=[f"{CORE_SOURCES}/{name}.h" for name in CORE_HEADERS],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-fvisibility=hidden"],
            # The GOT read-only after load (full RELRO), so that the core can seal it with its code.
            extra_link_args=["-Wl,-z,relro,-z,now", "-pthread"],
            libraries=["dl", "pthread"],
            optional=True,
        ),
        # Not a module: a library the worker is started with (LD_PRELOAD), see its source's comment.
        Extension(
            "harness.worker._preload",
            sources=[f"{CORE_SOURCES}/preload.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-fvisibility=hidden"],
            libraries=["dl"],
            optional=True,
        ),
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
