"""XLA options of flowkit's own compiled programs on CPU, each chosen by measurement
(benchmarks/RESULTS.md, session 23)."""

import functools

import jax

CPU_OPTIONS: dict[str, str | bool] = {
    # XLA:CPU hands some elementwise fusions to XNNPACK ("ynn"), whose kernels ran a mesh's
    # interpolation ~3x slower than XLA's own loops
    "xla_cpu_experimental_ynn_fusion_type": "",
    # XLA:CPU's loop emitters: mesh steps 2-8 % faster than its newer fusion emitters, and the
    # seed location compiles in 0.65 s instead of 0.9 s
    "xla_cpu_use_fusion_emitters": False,
    # LLVM at its first optimisation level, not the second: the programs compile 3-10 % faster
    # and run 0-15 % faster (gathers and loops, which the second level's unrolling slows)
    "xla_backend_optimization_level": "1",
}


def options_for(arrays) -> dict[str, str | bool]:
    """The options of a program whose inputs are `arrays` (a pytree): those of their devices'
    platform, none when they span several platforms."""
    platforms = {device.platform for leaf in jax.tree.leaves(arrays) for device in leaf.sharding.device_set}
    return compile_options(platforms.pop()) if len(platforms) == 1 else {}


@functools.cache
def compile_options(platform: str) -> dict[str, str | bool]:
    """The `CPU_OPTIONS` the installed XLA knows, for programs on `platform` "cpu" (none for
    other platforms): an option an older or newer XLA lacks is left out, not an error."""
    if platform != "cpu":
        return {}
    lowered = jax.jit(lambda x: x + 1).lower(jax.numpy.zeros(1))
    known = {}
    for name, value in CPU_OPTIONS.items():
        try:
            lowered.compile({name: value})
        except jax.errors.JaxRuntimeError:
            continue
        known[name] = value
    return known
