"""An inlet's random draws: a counter-based hash of (the slot's key, the step, the draw's
number) in uint32 arithmetic, which the JAX step and the CPU mesh kernel compute alike, bit
for bit (`native/mesh_chunk.cc`, `draw_bits` and `uniform`).

Each 32-bit word is murmur3's finaliser chained over the four numbers; a float32 uniform takes
its top 24 bits, a float64 one 53 bits from it and one more word. Draws of different slots,
steps or numbers are independent to the eye of any placement statistic (tested in
`tests/test_inlets.py`), and no state is carried: a slot restarted in step k draws the same
numbers on any device, in any block, in either path."""

import jax.numpy as jnp
from jax.typing import DTypeLike
from jaxtyping import Array, Float, Int, UInt32

SALT = 0x1B7E7
"""Decorrelates the inlet's draws from an integrator's noise on the same keys."""
GOLDEN = 0x9E3779B9


def mix(h: UInt32[Array, "*shape"]) -> UInt32[Array, "*shape"]:
    """murmur3's 32-bit finaliser (uint32 multiplication wraps)."""
    h = h ^ (h >> 16)
    h = h * jnp.uint32(0x85EBCA6B)
    h = h ^ (h >> 13)
    h = h * jnp.uint32(0xC2B2AE35)
    return h ^ (h >> 16)


def uniforms(
    keys: UInt32[Array, "n 2"], step: Int[Array, ""] | int, count: int, dtype: DTypeLike
) -> Float[Array, "n count"]:
    """`count` uniforms in `[0, 1)` per row from its raw key (two words) at global step `step`."""
    keys = keys.astype(jnp.uint32)
    j = jnp.arange(count, dtype=jnp.uint32)
    inner = mix(jnp.asarray(step).astype(jnp.uint32) ^ mix(j ^ jnp.uint32(SALT)))  # (count,)
    a = mix(keys[:, :1] ^ mix(keys[:, 1:2] ^ inner[None, :]))  # (n, count)
    if jnp.dtype(dtype) == jnp.float32:
        return (a >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)
    b = mix(a ^ jnp.uint32(GOLDEN))
    return ((a >> 5).astype(jnp.float64) * 2.0**26 + (b >> 6).astype(jnp.float64)) * 2.0**-53
