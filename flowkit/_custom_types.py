"""Shared jaxtyping aliases."""

from typing import Any

from jaxtyping import Array, ArrayLike, Float, Int, Real

Position = Float[Array, " dim"]
Positions = Float[Array, "n dim"]
Velocity = Float[Array, " dim"]
TimeLike = Real[ArrayLike, ""]
Bounds = tuple[Float[Array, " dim"], Float[Array, " dim"]]
StatusCode = Int[Array, ""]
Args = Any
