"""The compiled part of flowkit: the CPU kernels of the mesh, ocean and grid trackers (`flowkit/native`),
XLA FFI handlers, in one library.

It needs a C++17 compiler and jaxlib's FFI headers at install. It is built three times: for the
baseline of the machine's compiler (`_mesh_chunk`) and, where the compiler targets x86-64, with
AVX2's wider vectors (`_mesh_chunk_avx2`) and with AVX-512 (`_mesh_chunk_avx512`), of which
`flowkit.native` loads the widest the CPU runs. None of them contracts a product and a sum into
an FMA, so all three round alike. Where a build fails the install goes on without it, saying so:
without the baseline build runs take the JAX path (`flowkit.native.built()`).
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
            print(f"flowkit: the CPU kernels were not built ({error}); runs take the JAX path", file=sys.stderr)
            self.extensions = []

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as error:  # one build failed (no AVX2 or AVX-512 on this compiler's target): the others stand
            instead = "the JAX path" if ext.name.endswith("_mesh_chunk") else "a narrower build"
            print(f"flowkit: {ext.name} was not built ({error}); runs take {instead}", file=sys.stderr)


FLAGS = ["-std=c++17", "-O3", "-fno-math-errno", "-Wno-psabi", "-Wno-sign-compare"]
SOURCE = "flowkit/native/mesh_chunk.cc"
OCEAN = "flowkit/native/ocean_chunk.cc"
GRID = "flowkit/native/grid_chunk.cc"
HEADERS = ["flowkit/native/kernel_seam.h", "flowkit/native/drift_rules.h", "flowkit/native/grid_probe.h"]


def kernels(build: str, flags: list[str]) -> Extension:
    """The kernels' library in `build`: `_mesh_chunk` from the sources for the baseline, else
    `_mesh_chunk_<build>` from the sources' `<build>` wrappers, with `flags` added."""
    if build == "baseline":
        name, sources = "flowkit.native._mesh_chunk", [SOURCE, OCEAN, GRID]
    else:
        name = f"flowkit.native._mesh_chunk_{build}"
        sources = [f"flowkit/native/{kernel}_chunk_{build}.cc" for kernel in ("mesh", "ocean", "grid")]
    depends = [SOURCE, OCEAN, GRID, *HEADERS]
    return Extension(name, sources=sources, depends=depends, language="c++", extra_compile_args=[*FLAGS, *flags])


setup(
    ext_modules=[
        kernels("baseline", []),
        kernels("avx2", ["-mavx2", "-mno-fma"]),
        kernels("avx512", ["-mavx512f", "-mavx512vl", "-mavx512dq", "-mavx512bw", "-ffp-contract=off"]),
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
