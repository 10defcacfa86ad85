"""The compiled part of flowkit: the CPU mesh kernel (`flowkit/native`), an XLA FFI handler.

It needs a C++17 compiler and jaxlib's FFI headers at install. Where it cannot be built the
install goes on without it, saying so, and runs take the JAX path (`flowkit.native.available()`).
"""

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """Builds the kernel if it can; warns and goes on without it if not."""

    def finalize_options(self):
        super().finalize_options()
        import jax.ffi

        for ext in self.extensions:
            ext.include_dirs.append(jax.ffi.include_dir())

    def run(self):
        try:
            super().run()
        except Exception as error:  # no compiler, no headers: nothing to install from here
            print(f"flowkit: the CPU mesh kernel was not built ({error}); runs take the JAX path", file=sys.stderr)
            self.extensions = []


setup(
    ext_modules=[
        Extension(
            "flowkit.native._mesh_chunk",
            sources=["flowkit/native/mesh_chunk.cc"],
            language="c++",
            extra_compile_args=["-std=c++17", "-O3", "-fno-math-errno", "-Wno-psabi", "-Wno-sign-compare"],
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
